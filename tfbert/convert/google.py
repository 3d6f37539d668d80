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

from tfbert.config import BertConfig
from tfbert.convert import common
from tfbert.convert.common import LAYER, bert_rules

# google-research/bert `hidden_act` -> tfbert's.
ACTIVATIONS = {"gelu": "gelu_tanh", "relu": "relu"}

# Defaults are google-research/bert `modeling.BertConfig` defaults.
CONFIG_KEYS = {**common.BERT_CONFIG_KEYS, "type_vocab_size": ("type_vocab_size", 16)}
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
    return common.save_converted(out_dir, config, weights, vocab_file, lower_case,
                                 source=f"google:{os.path.abspath(prefix)}")


def config_from_google(google_config, source="bert_config.json"):
    """A tfbert `BertConfig` from a google-research/bert `bert_config.json` dict."""
    values = common.config_values(google_config, CONFIG_KEYS, ACTIVATIONS, source)
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
    layer = "bert/encoder/layer_{i}"
    names = {
        "encoder/embeddings/word_embeddings/embeddings": "bert/embeddings/word_embeddings",
        "encoder/embeddings/position_embeddings": "bert/embeddings/position_embeddings",
        "encoder/embeddings/token_type_embeddings/embeddings":
            "bert/embeddings/token_type_embeddings",
        "encoder/embeddings/layer_norm": "bert/embeddings/LayerNorm",
        **{f"{LAYER}/self_attention/{p}/{w}": f"{layer}/attention/self/{p}/{w}"
           for p in ("query", "key", "value") for w in ("kernel", "bias")},
        f"{LAYER}/self_attention/attention_output/kernel": f"{layer}/attention/output/dense/kernel",
        f"{LAYER}/self_attention/attention_output/bias": f"{layer}/attention/output/dense/bias",
        f"{LAYER}/attention_layer_norm": f"{layer}/attention/output/LayerNorm",
        f"{LAYER}/intermediate_dense/kernel": f"{layer}/intermediate/dense/kernel",
        f"{LAYER}/intermediate_dense/bias": f"{layer}/intermediate/dense/bias",
        f"{LAYER}/output_dense/kernel": f"{layer}/output/dense/kernel",
        f"{LAYER}/output_dense/bias": f"{layer}/output/dense/bias",
        f"{LAYER}/output_layer_norm": f"{layer}/output/LayerNorm",
        "encoder/pooler/kernel": "bert/pooler/dense/kernel",
        "encoder/pooler/bias": "bert/pooler/dense/bias",
        "mlm/transform/kernel": "cls/predictions/transform/dense/kernel",
        "mlm/transform/bias": "cls/predictions/transform/dense/bias",
        "mlm/layer_norm": "cls/predictions/transform/LayerNorm",
        "mlm/output_bias": "cls/predictions/output_bias",
        "nsp/kernel": "cls/seq_relationship/output_weights",
        "nsp/bias": "cls/seq_relationship/output_bias",
    }
    return bert_rules(config, names, lambda p: (f"{p}/gamma", f"{p}/beta"), out_in=False)


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
