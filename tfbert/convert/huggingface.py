"""Converts a Hugging Face BERT directory into a tfbert checkpoint directory.

Input: `config.json`, `model.safetensors` (or a sharded
`model.safetensors.index.json`), `vocab.txt` (or, without it, the WordPiece
vocabulary of `tokenizer.json`), and optionally
`tokenizer_config.json` / `tokenizer.json` for the lower-case flag. Weights are
read with the safetensors NumPy API (no torch).

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
  - Other heads (`classifier.*`, `qa_outputs.*`, ...) are an error: tfbert
    converts the encoder and the pretraining heads only.

Activation: `hidden_act: gelu` is the exact erf GELU in transformers (tfbert
`gelu`); `gelu_new`, `gelu_fast` and `gelu_pytorch_tanh` are the tanh
approximation (tfbert `gelu_tanh`); `relu` is `relu`.

Lower case: `do_lower_case` in `tokenizer_config.json` (as transformers'
`BertTokenizerFast` does), else the `lowercase` of a `BertNormalizer` in
`tokenizer.json`, else True (the `BertTokenizer` default). An explicit
`lower_case=` argument overrides both.

Example:
>>> from tfbert.convert import from_huggingface
>>> from_huggingface("all-MiniLM-L6-v2/", "/tmp/minilm_tfbert")  # doctest: +SKIP
>>> encoder = tfbert.BertEncoder.from_pretrained("/tmp/minilm_tfbert")  # doctest: +SKIP
"""

import json
import os
import tempfile

import numpy as np
from absl import logging
from safetensors import safe_open

from tfbert import checkpoint
from tfbert.config import BertConfig
from tfbert.convert import common
from tfbert.convert.common import Rule, identity

# transformers' `hidden_act` -> tfbert's.
ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_python": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "relu": "relu",
}

# tfbert BertConfig field -> (transformers config key, default when absent).
# Defaults are transformers' `BertConfig` defaults; None means required.
CONFIG_KEYS = {
    "vocab_size": ("vocab_size", None),
    "hidden_size": ("hidden_size", None),
    "num_layers": ("num_hidden_layers", None),
    "num_heads": ("num_attention_heads", None),
    "intermediate_size": ("intermediate_size", None),
    "dropout_rate": ("hidden_dropout_prob", 0.1),
    "attention_dropout_rate": ("attention_probs_dropout_prob", 0.1),
    "max_position_embeddings": ("max_position_embeddings", 512),
    "type_vocab_size": ("type_vocab_size", 2),
    "initializer_range": ("initializer_range", 0.02),
    "layer_norm_eps": ("layer_norm_eps", 1e-12),
}

BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")


def from_huggingface(src_dir, out_dir, lower_case=None):
    """Converts the Hugging Face BERT directory `src_dir` into a tfbert
    checkpoint directory `out_dir` (written atomically); returns `out_dir`.

    `lower_case`: None reads it from the tokenizer files (see module doc).
    """
    src_dir = os.fspath(src_dir)
    if not os.path.isdir(src_dir):
        raise FileNotFoundError(f"Hugging Face model directory not found: {src_dir}")
    common.check_output_dir(src_dir, out_dir)
    config_path = common.require_file(
        os.path.join(src_dir, "config.json"), "Hugging Face config (config.json)"
    )
    config = config_from_huggingface(common.read_json(config_path), source=config_path)
    if lower_case is None:
        lower_case = lower_case_from_tokenizer_files(src_dir)
    with tempfile.TemporaryDirectory() as tmp:
        vocab_file = _vocab_file(src_dir, tmp)  # vocab.txt, or made from tokenizer.json
        weights = read_huggingface_weights(src_dir, config, label=config_path)
        common.check_vocab(vocab_file, config.vocab_size)
        encoder_weights, head_weights = common.split_heads(weights)
        return checkpoint.save_checkpoint(
            out_dir,
            config,
            encoder_weights,
            vocab_file,
            lower_case,
            head_weights=head_weights,
            source=f"huggingface:{os.path.abspath(src_dir)}",
        )


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
    return common.convert_weights(
        reader,
        huggingface_rules(config, prefix, reader.names()),
        config,
        skip=[prefix + b for b in BUFFERS],
        tied=_tied_weights(prefix, reader.names()),
        label=f"{reader.label} (config {label})",
    )


def config_from_huggingface(hf_config, source="config.json"):
    """A tfbert `BertConfig` from a transformers BERT `config.json` dict."""
    if not isinstance(hf_config, dict):
        raise ValueError(f"{source}: expected a JSON object.")
    model_type = hf_config.get("model_type", "bert")
    if model_type != "bert":
        raise ValueError(f"{source}: model_type is {model_type!r}; only 'bert' converts.")
    position_type = hf_config.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ValueError(
            f"{source}: position_embedding_type {position_type!r} is not supported "
            "(tfbert uses absolute position embeddings)."
        )
    values = {}
    for field, (key, default) in CONFIG_KEYS.items():
        if key not in hf_config and default is None:
            raise ValueError(f"{source}: required key {key!r} is missing.")
        values[field] = hf_config.get(key, default)
    act = hf_config.get("hidden_act", "gelu")
    if not isinstance(act, str) or act not in ACTIVATIONS:
        raise ValueError(
            f"{source}: hidden_act {act!r} is not supported; tfbert converts "
            f"{sorted(ACTIVATIONS)}."
        )
    values["hidden_act"] = ACTIVATIONS[act]
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
        tok_config = common.read_json(config_path)
        if "do_lower_case" in tok_config:
            settings[config_path] = (tok_config["do_lower_case"], tok_config.get("strip_accents"))
    json_path = os.path.join(src_dir, "tokenizer.json")
    if os.path.isfile(json_path):
        normalizer = common.read_json(json_path).get("normalizer") or {}
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
    h, heads, inter = config.hidden_size, config.num_heads, config.intermediate_size
    head_dim = h // heads
    p = prefix
    names = set(source_names)

    def transpose(w):
        return w.T

    def split_heads_kernel(w):  # [out, in] -> [in, heads, head_dim]
        return w.T.reshape(h, heads, head_dim)

    def split_heads_bias(b):
        return b.reshape(heads, head_dim)

    def merge_heads_kernel(w):  # [out, in] -> [heads, head_dim, out]
        return w.T.reshape(heads, head_dim, h)

    # Old (TF-converted) HF checkpoints name LayerNorm parameters gamma/beta.
    def layer_norm(target, source, group=None):
        old = f"{source}.gamma" in names
        scale, shift = ("gamma", "beta") if old else ("weight", "bias")
        return [
            Rule(f"{target}/gamma", f"{source}.{scale}", (h,), identity, group),
            Rule(f"{target}/beta", f"{source}.{shift}", (h,), identity, group),
        ]

    rules = [
        Rule("encoder/embeddings/word_embeddings/embeddings",
             f"{p}embeddings.word_embeddings.weight", (config.vocab_size, h), identity),
        Rule("encoder/embeddings/position_embeddings",
             f"{p}embeddings.position_embeddings.weight",
             (config.max_position_embeddings, h), identity),
        Rule("encoder/embeddings/token_type_embeddings/embeddings",
             f"{p}embeddings.token_type_embeddings.weight", (config.type_vocab_size, h), identity),
        *layer_norm("encoder/embeddings/layer_norm", f"{p}embeddings.LayerNorm"),
    ]
    for i in range(config.num_layers):
        src = f"{p}encoder.layer.{i}"
        dst = f"encoder/transformer_layer_{i}"
        for proj in ("query", "key", "value"):
            rules += [
                Rule(f"{dst}/self_attention/{proj}/kernel",
                     f"{src}.attention.self.{proj}.weight", (h, h), split_heads_kernel),
                Rule(f"{dst}/self_attention/{proj}/bias",
                     f"{src}.attention.self.{proj}.bias", (h,), split_heads_bias),
            ]
        rules += [
            Rule(f"{dst}/self_attention/attention_output/kernel",
                 f"{src}.attention.output.dense.weight", (h, h), merge_heads_kernel),
            Rule(f"{dst}/self_attention/attention_output/bias",
                 f"{src}.attention.output.dense.bias", (h,), identity),
            *layer_norm(f"{dst}/attention_layer_norm", f"{src}.attention.output.LayerNorm"),
            Rule(f"{dst}/intermediate_dense/kernel",
                 f"{src}.intermediate.dense.weight", (inter, h), transpose),
            Rule(f"{dst}/intermediate_dense/bias",
                 f"{src}.intermediate.dense.bias", (inter,), identity),
            Rule(f"{dst}/output_dense/kernel", f"{src}.output.dense.weight", (h, inter), transpose),
            Rule(f"{dst}/output_dense/bias", f"{src}.output.dense.bias", (h,), identity),
            *layer_norm(f"{dst}/output_layer_norm", f"{src}.output.LayerNorm"),
        ]
    rules += [
        Rule("encoder/pooler/kernel", f"{p}pooler.dense.weight", (h, h), transpose),
        Rule("encoder/pooler/bias", f"{p}pooler.dense.bias", (h,), identity),
        # Pretraining heads (BertForPreTraining / BertForMaskedLM).
        Rule("mlm/transform/kernel", "cls.predictions.transform.dense.weight", (h, h),
             transpose, "mlm"),
        Rule("mlm/transform/bias", "cls.predictions.transform.dense.bias", (h,),
             identity, "mlm"),
        *layer_norm("mlm/layer_norm", "cls.predictions.transform.LayerNorm", "mlm"),
        Rule("mlm/output_bias",
             "cls.predictions.bias" if "cls.predictions.bias" in names
             or "cls.predictions.decoder.bias" not in names
             else "cls.predictions.decoder.bias",
             (config.vocab_size,), identity, "mlm"),
        Rule("nsp/kernel", "cls.seq_relationship.weight", (2, h), transpose, "nsp"),
        Rule("nsp/bias", "cls.seq_relationship.bias", (2,), identity, "nsp"),
    ]
    return rules


class SafetensorsReader:
    """Shapes and tensors of `model.safetensors` (or its shards) by name,
    read lazily with the safetensors NumPy API; clear errors for a missing,
    truncated or corrupt file."""

    def __init__(self, src_dir):
        single = os.path.join(src_dir, "model.safetensors")
        index = os.path.join(src_dir, "model.safetensors.index.json")
        if os.path.isfile(single):
            files = [single]
            self.label = single
        elif os.path.isfile(index):
            weight_map = common.read_json(index).get("weight_map")
            if not isinstance(weight_map, dict):
                raise ValueError(f"{index}: no 'weight_map' object.")
            files = [os.path.join(src_dir, f) for f in sorted(set(weight_map.values()))]
            self.label = index
        else:
            hint = ""
            if os.path.isfile(os.path.join(src_dir, "pytorch_model.bin")):
                hint = (" It has pytorch_model.bin; tfbert reads safetensors only (no torch): "
                        "re-save it with save_pretrained(dir, safe_serialization=True).")
            raise FileNotFoundError(f"No model.safetensors in {src_dir}.{hint}")
        self._file_of = {}
        self._handles = {}
        for path in files:
            common.require_file(path, "safetensors shard")
            try:
                handle = safe_open(path, framework="numpy")
            except Exception as e:  # safetensors raises its own error type
                raise ValueError(f"{path}: cannot read safetensors file (truncated or "
                                 f"corrupt?): {e}") from None
            self._handles[path] = handle
            for name in handle.keys():
                if name in self._file_of:
                    raise ValueError(f"{path}: weight {name!r} is also in {self._file_of[name]}.")
                self._file_of[name] = path
        if os.path.isfile(single):
            return
        listed = {k: os.path.join(src_dir, v) for k, v in weight_map.items()}
        wrong = sorted(k for k in set(listed) | set(self._file_of)
                       if listed.get(k) != self._file_of.get(k))
        if wrong:
            raise ValueError(f"{index}: weight_map disagrees with the shard files about "
                             f"{common.first_items(wrong)}.")

    def names(self):
        return list(self._file_of)

    def shape(self, name):
        return tuple(self._handles[self._file_of[name]].get_slice(name).get_shape())

    def read(self, name):
        path = self._file_of[name]
        handle = self._handles[path]
        if handle.get_slice(name).get_dtype() == "BF16":
            return _read_bfloat16(path, name)  # NumPy has no bfloat16
        try:
            return handle.get_tensor(name)
        except Exception as e:
            dtype = handle.get_slice(name).get_dtype()
            raise ValueError(f"{path}: cannot read weight {name!r} (dtype {dtype}): {e}") from None


def _read_bfloat16(path, name):
    """A BF16 tensor as float32 (exact: bfloat16 is the top half of a float32),
    read from the safetensors layout: u64 header size, JSON header, data."""
    with open(path, "rb") as f:
        header_size = int(np.frombuffer(f.read(8), "<u8")[0])
        info = json.loads(f.read(header_size))[name]
        begin, end = info["data_offsets"]
        f.seek(8 + header_size + begin)
        raw = np.frombuffer(f.read(end - begin), "<u2")
    if raw.size != int(np.prod(info["shape"])):
        raise ValueError(f"{path}: weight {name!r} is truncated.")
    return (raw.astype(np.uint32) << 16).view(np.float32).reshape(info["shape"])


def _vocab_file(src_dir, tmp_dir):
    """`vocab.txt`, or one written to `tmp_dir` from the WordPiece vocabulary
    in `tokenizer.json` (directories saved by recent transformers may have
    only that)."""
    vocab_file = os.path.join(src_dir, "vocab.txt")
    json_path = os.path.join(src_dir, "tokenizer.json")
    if os.path.isfile(vocab_file) or not os.path.isfile(json_path):
        return common.require_file(vocab_file, "Vocabulary file (vocab.txt)")
    model = common.read_json(json_path).get("model") or {}
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



__all__ = ["from_huggingface", "config_from_huggingface", "lower_case_from_tokenizer_files"]
