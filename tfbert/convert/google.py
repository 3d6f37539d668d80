"""Converts an original Google BERT checkpoint (google-research/bert, TF1)
into a tfbert checkpoint directory.

Input directory: `bert_config.json`, `bert_model.ckpt.index` +
`bert_model.ckpt.data-*` (any single `*.index` checkpoint, or the one a
`checkpoint` file names), `vocab.txt`. Variables are read by name with
`tf.train.load_checkpoint`: `bert/embeddings/*`, `bert/encoder/layer_<i>/*`,
`bert/pooler/dense/*`, and the pretraining heads `cls/predictions/*` (-> `mlm/*`)
and `cls/seq_relationship/*` (-> `nsp/*`; `output_weights` is `[2, hidden]`
and gets transposed).

Every variable is converted or skipped by an explicit rule; anything else is an
error. Skipped by rule: optimizer slots (names ending in `/adam_m` or
`/adam_v`, which google-research/bert's AdamWeightDecay and LAMB write, or
ending in `/AdamWeightDecayOptimizer` / `/AdamWeightDecayOptimizer_1`, the slot
names of some forks), `global_step`, and TF's `_CHECKPOINTABLE_OBJECT_GRAPH`
metadata entry. Google's released checkpoints hold none of these.

Activation: google-research/bert's `gelu` is the tanh approximation, so
`hidden_act: gelu` becomes tfbert `gelu_tanh`. Layer norm epsilon is 1e-12
(`tf.contrib.layers.layer_norm`'s). TF1 kernels are `[in, out]` like Keras'.

Lower case: Google ships no tokenizer config; the released directories say it
in their names (`uncased_L-12_H-768_A-12`, `cased_L-12_H-768_A-12`,
`multi_cased_L-12_H-768_A-12`). So `lower_case=None` means: True when the
directory name contains "uncased", False when it contains "cased", otherwise
an error asking for `lower_case=True/False` (e.g. `chinese_L-12_H-768_A-12`,
which Google's README says is uncased).

Example:
>>> from tfbert.convert import from_google
>>> from_google("uncased_L-12_H-768_A-12/", "/tmp/bert_base")  # doctest: +SKIP
>>> encoder = tfbert.BertEncoder.from_pretrained("/tmp/bert_base")  # doctest: +SKIP
"""

import glob
import os

import tensorflow as tf

from tfbert import checkpoint
from tfbert.config import BertConfig
from tfbert.convert import common
from tfbert.convert.common import Rule, identity

# google-research/bert `hidden_act` -> tfbert's.
ACTIVATIONS = {"gelu": "gelu_tanh", "relu": "relu"}

# tfbert BertConfig field -> (bert_config.json key, default when absent).
# Defaults are google-research/bert `modeling.BertConfig` defaults; None = required.
CONFIG_KEYS = {
    "vocab_size": ("vocab_size", None),
    "hidden_size": ("hidden_size", None),
    "num_layers": ("num_hidden_layers", None),
    "num_heads": ("num_attention_heads", None),
    "intermediate_size": ("intermediate_size", None),
    "dropout_rate": ("hidden_dropout_prob", 0.1),
    "attention_dropout_rate": ("attention_probs_dropout_prob", 0.1),
    "max_position_embeddings": ("max_position_embeddings", 512),
    "type_vocab_size": ("type_vocab_size", 16),
    "initializer_range": ("initializer_range", 0.02),
}
LAYER_NORM_EPS = 1e-12

OPTIMIZER_SUFFIXES = (
    "/adam_m", "/adam_v", "/AdamWeightDecayOptimizer", "/AdamWeightDecayOptimizer_1"
)
METADATA = ("global_step", "_CHECKPOINTABLE_OBJECT_GRAPH")


def from_google(src_dir, out_dir, lower_case=None, checkpoint_prefix=None):
    """Converts the Google BERT directory `src_dir` into a tfbert checkpoint
    directory `out_dir` (written atomically); returns `out_dir`.

    `lower_case`: None guesses it from the directory name (see module doc).
    `checkpoint_prefix`: the TF checkpoint inside `src_dir` when it holds
    several (e.g. `model.ckpt-100000`); by default the only one.
    """
    src_dir = os.fspath(src_dir)
    if not os.path.isdir(src_dir):
        raise FileNotFoundError(f"Google BERT directory not found: {src_dir}")
    common.check_output_dir(src_dir, out_dir)
    config_path = common.require_file(
        os.path.join(src_dir, "bert_config.json"), "Google BERT config (bert_config.json)"
    )
    config = config_from_google(common.read_json(config_path), source=config_path)
    vocab_file = common.require_file(
        os.path.join(src_dir, "vocab.txt"), "Vocabulary file (vocab.txt)"
    )
    if lower_case is None:
        lower_case = lower_case_from_dir_name(src_dir)

    prefix = _checkpoint_prefix(src_dir, checkpoint_prefix)
    reader = TFCheckpointReader(prefix)
    names = reader.names()
    if "bert/embeddings/word_embeddings" not in names:
        hint = ""
        if any(".ATTRIBUTES/" in n for n in names):
            hint = (" It looks like a TF2 object-based checkpoint; from_google reads the "
                    "name-based TF1 checkpoints of google-research/bert.")
        raise ValueError(
            f"{prefix}: unknown variable layout, no 'bert/embeddings/word_embeddings' "
            f"(first variables: {sorted(names)[:8]}).{hint}"
        )
    skip = [n for n in names if n.endswith(OPTIMIZER_SUFFIXES) or n in METADATA]
    weights = common.convert_weights(
        reader, google_rules(config), config, skip=skip,
        label=f"{prefix} (config {config_path})",
    )
    common.check_vocab(vocab_file, config.vocab_size)
    encoder_weights, head_weights = common.split_heads(weights)
    return checkpoint.save_checkpoint(
        out_dir,
        config,
        encoder_weights,
        vocab_file,
        lower_case,
        head_weights=head_weights,
        source=f"google:{os.path.abspath(prefix)}",
    )


def config_from_google(google_config, source="bert_config.json"):
    """A tfbert `BertConfig` from a google-research/bert `bert_config.json` dict."""
    if not isinstance(google_config, dict):
        raise ValueError(f"{source}: expected a JSON object.")
    values = {}
    for field, (key, default) in CONFIG_KEYS.items():
        if key not in google_config and default is None:
            raise ValueError(f"{source}: required key {key!r} is missing.")
        values[field] = google_config.get(key, default)
    act = google_config.get("hidden_act", "gelu")
    if not isinstance(act, str) or act not in ACTIVATIONS:
        raise ValueError(
            f"{source}: hidden_act {act!r} is not supported; tfbert converts {sorted(ACTIVATIONS)}."
        )
    values["hidden_act"] = ACTIVATIONS[act]
    values["layer_norm_eps"] = LAYER_NORM_EPS
    return BertConfig.from_dict(values, source=source)


def lower_case_from_dir_name(src_dir):
    """True for "...uncased...", False for "...cased...", else an error."""
    name = os.path.basename(os.path.normpath(os.path.abspath(src_dir))).lower()
    if "uncased" in name:
        return True
    if "cased" in name:
        return False
    raise ValueError(
        f"Cannot tell whether {src_dir} is a cased or an uncased model (its name contains "
        "neither 'uncased' nor 'cased'); pass lower_case=True or False "
        "(--lower_case / --nolower_case)."
    )


def google_rules(config):
    """The `Rule`s mapping google-research/bert variables to tfbert names."""
    h, heads, inter = config.hidden_size, config.num_heads, config.intermediate_size
    head_dim = h // heads

    def split_heads_kernel(w):  # [in, out] -> [in, heads, head_dim]
        return w.reshape(h, heads, head_dim)

    def split_heads_bias(b):
        return b.reshape(heads, head_dim)

    def merge_heads_kernel(w):  # [in, out] -> [heads, head_dim, out]
        return w.reshape(heads, head_dim, h)

    def transpose(w):
        return w.T

    def layer_norm(target, source, group=None):
        return [
            Rule(f"{target}/gamma", f"{source}/gamma", (h,), identity, group),
            Rule(f"{target}/beta", f"{source}/beta", (h,), identity, group),
        ]

    rules = [
        Rule("encoder/embeddings/word_embeddings/embeddings",
             "bert/embeddings/word_embeddings", (config.vocab_size, h), identity),
        Rule("encoder/embeddings/position_embeddings",
             "bert/embeddings/position_embeddings", (config.max_position_embeddings, h), identity),
        Rule("encoder/embeddings/token_type_embeddings/embeddings",
             "bert/embeddings/token_type_embeddings", (config.type_vocab_size, h), identity),
        *layer_norm("encoder/embeddings/layer_norm", "bert/embeddings/LayerNorm"),
    ]
    for i in range(config.num_layers):
        src = f"bert/encoder/layer_{i}"
        dst = f"encoder/transformer_layer_{i}"
        for proj in ("query", "key", "value"):
            rules += [
                Rule(f"{dst}/self_attention/{proj}/kernel",
                     f"{src}/attention/self/{proj}/kernel", (h, h), split_heads_kernel),
                Rule(f"{dst}/self_attention/{proj}/bias",
                     f"{src}/attention/self/{proj}/bias", (h,), split_heads_bias),
            ]
        rules += [
            Rule(f"{dst}/self_attention/attention_output/kernel",
                 f"{src}/attention/output/dense/kernel", (h, h), merge_heads_kernel),
            Rule(f"{dst}/self_attention/attention_output/bias",
                 f"{src}/attention/output/dense/bias", (h,), identity),
            *layer_norm(f"{dst}/attention_layer_norm", f"{src}/attention/output/LayerNorm"),
            Rule(f"{dst}/intermediate_dense/kernel",
                 f"{src}/intermediate/dense/kernel", (h, inter), identity),
            Rule(f"{dst}/intermediate_dense/bias", f"{src}/intermediate/dense/bias", (inter,),
                 identity),
            Rule(f"{dst}/output_dense/kernel", f"{src}/output/dense/kernel", (inter, h), identity),
            Rule(f"{dst}/output_dense/bias", f"{src}/output/dense/bias", (h,), identity),
            *layer_norm(f"{dst}/output_layer_norm", f"{src}/output/LayerNorm"),
        ]
    rules += [
        Rule("encoder/pooler/kernel", "bert/pooler/dense/kernel", (h, h), identity),
        Rule("encoder/pooler/bias", "bert/pooler/dense/bias", (h,), identity),
        Rule("mlm/transform/kernel", "cls/predictions/transform/dense/kernel", (h, h),
             identity, "mlm"),
        Rule("mlm/transform/bias", "cls/predictions/transform/dense/bias", (h,), identity, "mlm"),
        *layer_norm("mlm/layer_norm", "cls/predictions/transform/LayerNorm", "mlm"),
        Rule("mlm/output_bias", "cls/predictions/output_bias", (config.vocab_size,),
             identity, "mlm"),
        Rule("nsp/kernel", "cls/seq_relationship/output_weights", (2, h), transpose, "nsp"),
        Rule("nsp/bias", "cls/seq_relationship/output_bias", (2,), identity, "nsp"),
    ]
    return rules


class TFCheckpointReader:
    """Variable shapes and values of a TF checkpoint, by name."""

    def __init__(self, prefix):
        self.label = prefix
        try:
            self._reader = tf.train.load_checkpoint(prefix)
        except Exception as e:  # DataLossError, NotFoundError, ... from the C++ reader
            raise ValueError(f"{prefix}: cannot read TF checkpoint (truncated or corrupt?): "
                             f"{type(e).__name__}: {e}") from None
        self._shapes = self._reader.get_variable_to_shape_map()

    def names(self):
        return list(self._shapes)

    def shape(self, name):
        return tuple(self._shapes[name])

    def read(self, name):
        try:
            return self._reader.get_tensor(name)
        except Exception as e:
            raise ValueError(f"{self.label}: cannot read variable {name!r} (truncated or "
                             f"corrupt data file?): {type(e).__name__}: {e}") from None


def _checkpoint_prefix(src_dir, prefix=None):
    """The TF checkpoint prefix in `src_dir` (`bert_model.ckpt` in releases)."""
    if prefix is not None:
        path = prefix if os.path.isabs(prefix) else os.path.join(src_dir, prefix)
        common.require_file(path + ".index", "TF checkpoint index")
        return path
    indexes = sorted(glob.glob(os.path.join(src_dir, "*.index")))
    if len(indexes) == 1:
        return indexes[0][: -len(".index")]
    if not indexes:
        raise FileNotFoundError(
            f"No TF checkpoint in {src_dir}: expected bert_model.ckpt.index and "
            "bert_model.ckpt.data-*."
        )
    latest = tf.train.latest_checkpoint(src_dir)
    if latest:
        return latest
    raise ValueError(
        f"{src_dir} holds several TF checkpoints {[os.path.basename(i) for i in indexes]} "
        "and no 'checkpoint' file naming the latest; pass checkpoint_prefix=."
    )



__all__ = ["from_google", "config_from_google", "lower_case_from_dir_name"]
