"""Hugging Face DistilBERT (`model_type: distilbert`) -> a tfbert checkpoint.

`tfbert.convert.from_huggingface` calls this module when `config.json` says
`model_type: distilbert`. DistilBERT is BERT's post-LayerNorm encoder under
other names (`dim`, `n_layers`, `n_heads`, `hidden_dim`, `activation`;
`q_lin`/`k_lin`/`v_lin`/`out_lin`, `sa_layer_norm`, `ffn.lin1`/`lin2`,
`output_layer_norm`; every LayerNorm eps 1e-12), and its WordPiece
tokenizer is BERT's. What it lacks gets a named rule:

- **No token types** (`zero_token_types`): two zero token-type rows, so a
  pair packs as `[CLS] a [SEP] b [SEP]` and its type ids add nothing, as in
  DistilBERT.
- **No pooler** (`fresh_pooler`): a fresh pooler, seeded as a new BERT
  pooler, with a warning; `huggingface.fresh_pooler` records it and
  `to_huggingface` drops it again.
- **Sinusoidal positions** (`sinusoidal_pos_embds: true`): transformers 5
  writes the sinusoid into the position weight when it initialises a model,
  saves it, reads it back as it is and, the weight being a trainable
  parameter, may have trained it: the stored table is what transformers
  computes with, so it converts like a learned one.
- **MLM head** (`DistilBertForMaskedLM`: `vocab_transform`, the activation,
  `vocab_layer_norm`, `vocab_projector` tied to the word embeddings) -> the
  `mlm/*` head.
- `embeddings.position_ids` is an index buffer: skipped.
"""

import numpy as np
from absl import logging

from tfbert.config import BertConfig
from tfbert.convert import albert, common
from tfbert.convert.common import LAYER

# tfbert BertConfig field -> (DistilBERT config key, transformers DistilBertConfig default).
CONFIG_KEYS = {
    "vocab_size": ("vocab_size", 30522),
    "hidden_size": ("dim", 768),
    "num_layers": ("n_layers", 6),
    "num_heads": ("n_heads", 12),
    "intermediate_size": ("hidden_dim", 3072),
    "dropout_rate": ("dropout", 0.1),
    "attention_dropout_rate": ("attention_dropout", 0.1),
    "max_position_embeddings": ("max_position_embeddings", 512),
    "initializer_range": ("initializer_range", 0.02),
}
BUFFERS = ("embeddings.position_ids",)


def config_from_distilbert(hf_config, activations, source="config.json"):
    """A tfbert `BertConfig` from a DistilBERT `config.json` dict."""
    act = hf_config.get("activation", "gelu")
    values = common.config_values({**hf_config, "hidden_act": act}, CONFIG_KEYS, activations,
                                  source)
    values.update(type_vocab_size=2, layer_norm_eps=1e-12)
    return BertConfig.from_dict(values, source=source)


def distilbert_names(prefix):
    """`{tfbert target template: transformers name}` (`bert_rules`' `names`)."""
    p = prefix
    layer = f"{p}transformer.layer.{{i}}"
    return {
        "encoder/embeddings/word_embeddings/embeddings": f"{p}embeddings.word_embeddings.weight",
        "encoder/embeddings/position_embeddings": f"{p}embeddings.position_embeddings.weight",
        "encoder/embeddings/token_type_embeddings/embeddings": "(none: zero_token_types)",
        "encoder/embeddings/layer_norm": f"{p}embeddings.LayerNorm",
        **{f"{LAYER}/self_attention/{proj}/{w}":
           f"{layer}.attention.{proj[0]}_lin.{'weight' if w == 'kernel' else 'bias'}"
           for proj in ("query", "key", "value") for w in ("kernel", "bias")},
        f"{LAYER}/self_attention/attention_output/kernel": f"{layer}.attention.out_lin.weight",
        f"{LAYER}/self_attention/attention_output/bias": f"{layer}.attention.out_lin.bias",
        f"{LAYER}/attention_layer_norm": f"{layer}.sa_layer_norm",
        f"{LAYER}/intermediate_dense/kernel": f"{layer}.ffn.lin1.weight",
        f"{LAYER}/intermediate_dense/bias": f"{layer}.ffn.lin1.bias",
        f"{LAYER}/output_dense/kernel": f"{layer}.ffn.lin2.weight",
        f"{LAYER}/output_dense/bias": f"{layer}.ffn.lin2.bias",
        f"{LAYER}/output_layer_norm": f"{layer}.output_layer_norm",
        "encoder/pooler/kernel": "(none: fresh_pooler)",
        "encoder/pooler/bias": "(none: fresh_pooler)",
        "mlm/transform/kernel": "vocab_transform.weight",
        "mlm/transform/bias": "vocab_transform.bias",
        "mlm/layer_norm": "vocab_layer_norm",
        "mlm/output_bias": "vocab_projector.bias",
        "nsp/kernel": "(none)",
        "nsp/bias": "(none)",
    }


def distilbert_rules(config, prefix):
    """The `Rule`s of a DistilBERT file (module doc): BERT's, without token
    types, pooler and next-sentence head (their targets are filled by rule)."""
    rules = common.bert_rules(config, distilbert_names(prefix),
                              lambda s: (f"{s}.weight", f"{s}.bias"), out_in=True)
    kept = []
    for rule in rules:
        if rule.group == "nsp":
            continue
        if rule.source.startswith("(none"):  # never present: filled after conversion
            rule = rule._replace(group=rule.source)
        kept.append(rule)
    return kept


def read_distilbert_weights(reader, config, hf_config, label):
    """`(weights, huggingface settings)` of a DistilBERT file (module doc)."""
    names = set(reader.names())
    bare = "embeddings.word_embeddings.weight" in names
    prefixed = "distilbert.embeddings.word_embeddings.weight" in names
    if bare == prefixed:
        raise ValueError(f"{reader.label}: unknown key layout, not a Hugging Face DistilBERT "
                         "model: expected 'embeddings.word_embeddings.weight' with or without "
                         f"the 'distilbert.' prefix (first keys: {sorted(names)[:8]}).")
    prefix = "distilbert." if prefixed else ""
    tied = {"vocab_projector.weight": prefix + "embeddings.word_embeddings.weight"}
    weights = common.convert_weights(reader, distilbert_rules(config, prefix), config,
                                     skip=[prefix + b for b in BUFFERS], tied=tied,
                                     label=f"{reader.label} (config {label})")
    weights["encoder/embeddings/token_type_embeddings/embeddings"] = np.zeros(
        (config.type_vocab_size, config.hidden_size), np.float32)
    logging.warning("%s: DistilBERT has no pooler: the pooler is initialised fresh; fine-tune "
                    "before using pooled_output.", reader.label)
    weights.update(albert.fresh_pooler(config))
    settings = {"model_type": "distilbert", "pad_token_id": hf_config.get("pad_token_id", 0),
                "fresh_pooler": True}
    return weights, settings
