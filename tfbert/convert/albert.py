"""Hugging Face ALBERT (`model_type: albert`) -> tfbert's ALBERT-style config.

`tfbert.convert.from_huggingface` calls this module when `config.json` says
`model_type: albert`; the directory holds `config.json`, `model.safetensors`
and a WordPiece `vocab.txt` (tfbert tokenizes with WordPiece only, so an
ALBERT with just a SentencePiece `spiece.model` is refused).

Config: `embedding_size` -> `embedding_size` (factorized embeddings; it must
differ from `hidden_size`, since tfbert has no E -> H projection when they are
equal while ALBERT always has one), `num_hidden_groups` 1 -> `share_layers=True`
(one block applied `num_hidden_layers` times), `num_hidden_groups` =
`num_hidden_layers` -> `share_layers=False` (group g is layer g); any other
grouping, and `inner_group_num` != 1, is refused. `hidden_act: gelu_new` (the
ALBERT default) is the tanh GELU (`gelu_tanh`). Defaults for absent keys are
transformers' `AlbertConfig` defaults.

Key layouts: `AlbertModel` (`embeddings.*`, `encoder.*`, `pooler.*`), and
`AlbertForMaskedLM` / `AlbertForPreTraining` (the same under `albert.`, plus
`predictions.*`, converted to the `mlm/*` head: dense H -> E, activation,
LayerNorm(E), decoder tied to the E-wide word embeddings; and
`sop_classifier.classifier.*`, ALBERT's sentence-order head, converted to the
`nsp/*` head: both are a [hidden, 2] classifier on the pooled output, label 0 =
the segments in their original order). `AlbertForMaskedLM` is saved without a
pooler (`add_pooling_layer=False`): its pooler is initialised fresh (seeded,
as a new BERT pooler) and a warning says so; nothing in the MLM path reads it.
Other heads (`classifier.*`, `qa_outputs.*`) are an error.
"""

import numpy as np
from absl import logging

from tfbert.config import BertConfig
from tfbert.convert import common
from tfbert.convert.common import Rule, identity

# tfbert BertConfig field -> (ALBERT config key, transformers AlbertConfig default).
CONFIG_KEYS = {
    "vocab_size": ("vocab_size", 30000),
    "hidden_size": ("hidden_size", 4096),
    "num_layers": ("num_hidden_layers", 12),
    "num_heads": ("num_attention_heads", 64),
    "intermediate_size": ("intermediate_size", 16384),
    "dropout_rate": ("hidden_dropout_prob", 0.0),
    "attention_dropout_rate": ("attention_probs_dropout_prob", 0.0),
    "max_position_embeddings": ("max_position_embeddings", 512),
    "type_vocab_size": ("type_vocab_size", 2),
    "initializer_range": ("initializer_range", 0.02),
    "layer_norm_eps": ("layer_norm_eps", 1e-12),
    "embedding_size": ("embedding_size", 128),
}

BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")


def config_from_albert(hf_config, activations, source="config.json"):
    """A tfbert `BertConfig` (factorized, shared or not) from an ALBERT `config.json` dict."""
    if hf_config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"{source}: position_embedding_type "
                         f"{hf_config['position_embedding_type']!r} is not supported "
                         "(tfbert uses absolute position embeddings).")
    act = hf_config.get("hidden_act", "gelu_new")
    values = common.config_values({**hf_config, "hidden_act": act}, CONFIG_KEYS, activations,
                                  source)
    inner = hf_config.get("inner_group_num", 1)
    if inner != 1:
        raise ValueError(f"{source}: inner_group_num={inner} is not supported; tfbert converts "
                         "ALBERT with one layer per group (inner_group_num=1).")
    layers, groups = values["num_layers"], hf_config.get("num_hidden_groups", 1)
    if groups == 1:
        values["share_layers"] = True
    elif groups == layers:
        values["share_layers"] = False
    else:
        raise ValueError(f"{source}: num_hidden_groups={groups} with num_hidden_layers={layers} "
                         "is not supported; tfbert shares all layers (1 group) or none "
                         "(one group per layer).")
    if values["embedding_size"] == values["hidden_size"]:
        raise ValueError(f"{source}: embedding_size = hidden_size = {values['hidden_size']}; "
                         "ALBERT still has an E -> H projection there, which tfbert's "
                         "BertConfig cannot express (it means no projection).")
    return BertConfig.from_dict(values, source=source)


def albert_rules(config, prefix):
    """The `Rule`s mapping transformers ALBERT weights to tfbert names.

    `prefix` is "" (`AlbertModel`) or "albert." (models with heads). Linear
    weights are `[out, in]` and get transposed; attention projections are then
    split into Keras' `[hidden, heads, head_dim]`.
    """
    common.refuse_pre_layer_norm(config)
    h, e, heads, inter = (config.hidden_size, config.embedding_width, config.num_heads,
                          config.intermediate_size)
    head_dim = h // heads
    p = prefix

    def t(w):
        return w.T

    def norm(target, source, width, group=None):
        return [Rule(f"{target}/gamma", f"{source}.weight", (width,), identity, group),
                Rule(f"{target}/beta", f"{source}.bias", (width,), identity, group)]

    rules = [
        Rule("encoder/embeddings/word_embeddings/embeddings",
             f"{p}embeddings.word_embeddings.weight", (config.vocab_size, e), identity),
        Rule("encoder/embeddings/position_embeddings", f"{p}embeddings.position_embeddings.weight",
             (config.max_position_embeddings, e), identity),
        Rule("encoder/embeddings/token_type_embeddings/embeddings",
             f"{p}embeddings.token_type_embeddings.weight", (config.type_vocab_size, e), identity),
        *norm("encoder/embeddings/layer_norm", f"{p}embeddings.LayerNorm", e),
        Rule("encoder/embeddings/embedding_projection/kernel",
             f"{p}encoder.embedding_hidden_mapping_in.weight", (h, e), t),
        Rule("encoder/embeddings/embedding_projection/bias",
             f"{p}encoder.embedding_hidden_mapping_in.bias", (h,), identity),
    ]
    for i in range(1 if config.share_layers else config.num_layers):
        src = f"{p}encoder.albert_layer_groups.{i}.albert_layers.0"
        dst = f"encoder/transformer_layer_{i}"
        for proj in ("query", "key", "value"):
            rules += [
                Rule(f"{dst}/self_attention/{proj}/kernel", f"{src}.attention.{proj}.weight",
                     (h, h), lambda w: w.T.reshape(h, heads, head_dim)),
                Rule(f"{dst}/self_attention/{proj}/bias", f"{src}.attention.{proj}.bias",
                     (h,), lambda b: b.reshape(heads, head_dim)),
            ]
        rules += [
            Rule(f"{dst}/self_attention/attention_output/kernel", f"{src}.attention.dense.weight",
                 (h, h), lambda w: w.T.reshape(heads, head_dim, h)),
            Rule(f"{dst}/self_attention/attention_output/bias", f"{src}.attention.dense.bias",
                 (h,), identity),
            *norm(f"{dst}/attention_layer_norm", f"{src}.attention.LayerNorm", h),
            Rule(f"{dst}/intermediate_dense/kernel", f"{src}.ffn.weight", (inter, h), t),
            Rule(f"{dst}/intermediate_dense/bias", f"{src}.ffn.bias", (inter,), identity),
            Rule(f"{dst}/output_dense/kernel", f"{src}.ffn_output.weight", (h, inter), t),
            Rule(f"{dst}/output_dense/bias", f"{src}.ffn_output.bias", (h,), identity),
            *norm(f"{dst}/output_layer_norm", f"{src}.full_layer_layer_norm", h),
        ]
    rules += [
        # Optional only because AlbertForMaskedLM has none (see module doc).
        Rule("encoder/pooler/kernel", f"{p}pooler.weight", (h, h), t, "pooler"),
        Rule("encoder/pooler/bias", f"{p}pooler.bias", (h,), identity, "pooler"),
        Rule("mlm/transform/kernel", "predictions.dense.weight", (e, h), t, "mlm"),
        Rule("mlm/transform/bias", "predictions.dense.bias", (e,), identity, "mlm"),
        *norm("mlm/layer_norm", "predictions.LayerNorm", e, "mlm"),
        Rule("mlm/output_bias", "predictions.bias", (config.vocab_size,), identity, "mlm"),
        Rule("nsp/kernel", "sop_classifier.classifier.weight", (2, h), t, "nsp"),
        Rule("nsp/bias", "sop_classifier.classifier.bias", (2,), identity, "nsp"),
    ]
    return rules


def read_albert_weights(reader, config, label):
    """`{"encoder/...", "mlm/...", "nsp/...": float32 array}` from an ALBERT
    safetensors reader, checked against `config` (see module doc)."""
    names = set(reader.names())
    bare = "embeddings.word_embeddings.weight" in names
    prefixed = "albert.embeddings.word_embeddings.weight" in names
    if bare == prefixed:
        raise ValueError(f"{reader.label}: unknown key layout, not a Hugging Face ALBERT model: "
                         "expected 'embeddings.word_embeddings.weight' with or without the "
                         f"'albert.' prefix (first keys: {sorted(names)[:8]}).")
    prefix = "albert." if prefixed else ""
    tied = {"predictions.decoder.weight": prefix + "embeddings.word_embeddings.weight",
            "predictions.decoder.bias": "predictions.bias"}
    weights = common.convert_weights(reader, albert_rules(config, prefix), config,
                                     skip=[prefix + b for b in BUFFERS], tied=tied,
                                     label=f"{reader.label} (config {label})")
    if "encoder/pooler/kernel" not in weights:
        logging.warning("%s has no pooler (AlbertForMaskedLM is saved without one): the pooler "
                        "is initialised fresh; fine-tune before using pooled_output.",
                        reader.label)
        weights.update(fresh_pooler(config))
    return weights


def fresh_pooler(config, seed=0):
    """A new pooler as `BertEncoder` would initialise it (truncated normal), seeded."""
    h = config.hidden_size
    rng = np.random.default_rng(seed)
    kernel = rng.normal(0.0, config.initializer_range, size=(h, h))
    kernel = np.clip(kernel, -2 * config.initializer_range, 2 * config.initializer_range)
    return {"encoder/pooler/kernel": kernel.astype(np.float32),
            "encoder/pooler/bias": np.zeros(h, np.float32)}
