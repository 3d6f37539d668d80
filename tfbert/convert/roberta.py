"""Hugging Face RoBERTa (`model_type: roberta`) -> a tfbert checkpoint.

`tfbert.convert.from_huggingface` calls this module when `config.json` says
`model_type: roberta`. RoBERTa is BERT's encoder with other embeddings'
bookkeeping, so its weights map onto `BertEncoder` by these rules:

- **Positions after the padding index.** transformers numbers the real
  tokens `pad_token_id + 1, + 2, ...` (padding gets `pad_token_id`), so the
  position table is sliced `[pad_token_id + 1:]`: tfbert's positions 0, 1, ...
  read the same rows, which is exact for right-padded inputs (tfbert's
  packing) and makes `max_position_embeddings` smaller by `pad_token_id + 1`
  (514 -> 512). The rows before it (never read by tfbert) are kept as
  `roberta_position_rows/embeddings`, so `tfbert.convert.to_huggingface`
  writes the table back bit for bit.
- `type_vocab_size` (1 in released RoBERTa) and `layer_norm_eps` (1e-5) come
  from the config (defaults: transformers' `RobertaConfig`).
- **Pooler.** `RobertaModel`'s `pooler.dense` is the pooler. A
  `RobertaForSequenceClassification` has none: its head is `classifier.dense`
  + tanh over `<s>`, then `classifier.out_proj`, which is BERT's pooler then
  classifier, so `classifier.dense` becomes the pooler and
  `classifier.out_proj` the `classifier/*` head. `RobertaForMaskedLM` has
  neither: the pooler is initialised fresh (seeded, a warning says so;
  `huggingface.fresh_pooler` records it).
- **MLM head** (`lm_head.*` of `RobertaForMaskedLM`): dense, exact GELU,
  LayerNorm, decoder tied to the word embeddings (`lm_head.decoder.*` when
  stored must equal them) -> the `mlm/*` head. transformers' head always uses
  the exact GELU while tfbert's uses `hidden_act`: another `hidden_act` with
  an MLM head is refused.
- `embeddings.position_ids` / `embeddings.token_type_ids` are index
  buffers: skipped.

The tokenizer is byte-level BPE (`vocab.json` + `merges.txt`, or the `model`
of `tokenizer.json`), checked and carried into the checkpoint
(`tokenizer: byte_level_bpe`; `vocab.txt` lists its tokens in id order). No
tfbert preprocessor reads it yet: the encoder takes token ids (see
`tfbert.convert.bpe_files`).
"""

import numpy as np
from absl import logging

from tfbert.config import BertConfig
from tfbert.convert import albert, common

# Defaults are transformers' `RobertaConfig` defaults.
CONFIG_KEYS = {**common.BERT_CONFIG_KEYS, "type_vocab_size": ("type_vocab_size", 2),
               "layer_norm_eps": ("layer_norm_eps", 1e-12)}
PAD_TOKEN_ID = 1
BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")
POSITION_ROWS = "roberta_position_rows"  # the checkpoint's prefix of the rows tfbert never reads


def pad_token_id(hf_config, source):
    pad = hf_config.get("pad_token_id", PAD_TOKEN_ID)
    if isinstance(pad, bool) or not isinstance(pad, int) or pad < 0:
        raise ValueError(f"{source}: pad_token_id must be an int >= 0, got {pad!r}.")
    return pad


def config_from_roberta(hf_config, activations, source="config.json"):
    """A tfbert `BertConfig` from a RoBERTa `config.json` dict (positions
    counted after the padding index, see module doc)."""
    position_type = hf_config.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ValueError(f"{source}: position_embedding_type {position_type!r} is not "
                         "supported (tfbert uses absolute position embeddings).")
    values = common.config_values(hf_config, CONFIG_KEYS, activations, source)
    offset = pad_token_id(hf_config, source) + 1
    if values["max_position_embeddings"] <= offset:
        raise ValueError(f"{source}: max_position_embeddings={values['max_position_embeddings']}"
                         f" leaves no position after pad_token_id + 1 = {offset}.")
    values["max_position_embeddings"] -= offset
    return BertConfig.from_dict(values, source=source)


def roberta_rules(config, prefix, names, offset):
    """The `Rule`s of a RoBERTa file (module doc); `offset` = pad_token_id + 1."""
    rename = common.huggingface_bert_names(prefix, names)
    pooler = "classifier.dense" if "classifier.dense.weight" in names else f"{prefix}pooler.dense"
    rename.update({
        "encoder/pooler/kernel": f"{pooler}.weight",
        "encoder/pooler/bias": f"{pooler}.bias",
        "mlm/transform/kernel": "lm_head.dense.weight",
        "mlm/transform/bias": "lm_head.dense.bias",
        "mlm/layer_norm": "lm_head.layer_norm",
        "mlm/output_bias": "lm_head.bias",
    })
    rules = common.bert_rules(config, rename, lambda s: (f"{s}.weight", f"{s}.bias"),
                              out_in=True)
    position_rows = (config.max_position_embeddings + offset, config.hidden_size)
    edited = []
    for rule in rules:
        if rule.group == "nsp":  # RoBERTa has no next-sentence head
            continue
        if rule.target == "encoder/embeddings/position_embeddings":
            rule = rule._replace(source_shape=position_rows, transform=lambda w: w[offset:])
        if rule.target.startswith("encoder/pooler/"):  # absent in RobertaForMaskedLM
            rule = rule._replace(group="pooler")
        edited.append(rule)
    return edited


def read_roberta_weights(reader, config, hf_config, label):
    """`(weights, more heads, huggingface settings)` of a RoBERTa file: the
    `{"encoder/...", "mlm/...", "classifier/...": array}` weights, the
    position rows tfbert does not read (module doc), and the checkpoint's
    `huggingface` section."""
    names = set(reader.names())
    bare = "embeddings.word_embeddings.weight" in names
    prefixed = "roberta.embeddings.word_embeddings.weight" in names
    if bare == prefixed:
        raise ValueError(f"{reader.label}: unknown key layout, not a Hugging Face RoBERTa model: "
                         "expected 'embeddings.word_embeddings.weight' with or without the "
                         f"'roberta.' prefix (first keys: {sorted(names)[:8]}).")
    prefix = "roberta." if prefixed else ""
    pad = pad_token_id(hf_config, label)
    has_mlm = "lm_head.dense.weight" in names
    if has_mlm and config.hidden_act != "gelu":
        raise ValueError(f"{label}: hidden_act {config.hidden_act!r} with an MLM head: "
                         "transformers' RoBERTa head uses the exact GELU, tfbert's uses "
                         "hidden_act; they would differ.")
    out_proj = ["classifier.out_proj.weight", "classifier.out_proj.bias"]
    classifier = [n for n in out_proj if n in names]
    tied = {"lm_head.decoder.weight": prefix + "embeddings.word_embeddings.weight",
            "lm_head.decoder.bias": "lm_head.bias"}
    weights = common.convert_weights(
        reader, roberta_rules(config, prefix, names, pad + 1), config,
        skip=[prefix + b for b in BUFFERS] + classifier, tied=tied,
        label=f"{reader.label} (config {label})")
    if classifier:
        weights.update(common.classifier_head(reader, config, f"{reader.label} (config {label})",
                                              *out_proj))
    fresh = "encoder/pooler/kernel" not in weights
    if fresh:
        logging.warning("%s has no pooler (RobertaForMaskedLM is saved without one): the pooler "
                        "is initialised fresh; fine-tune before using pooled_output.",
                        reader.label)
        weights.update(albert.fresh_pooler(config))
    rows = np.asarray(reader.read(prefix + "embeddings.position_embeddings.weight"), np.float32)
    settings = {"model_type": "roberta", "pad_token_id": pad,
                "bos_token_id": hf_config.get("bos_token_id", 0),
                "eos_token_id": hf_config.get("eos_token_id", 2), "fresh_pooler": fresh}
    return weights, {POSITION_ROWS: {"embeddings": rows[:pad + 1]}}, settings
