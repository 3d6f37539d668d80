"""The sentence-transformers metadata of a Hugging Face directory: the
modules in `modules.json` become a tfbert checkpoint's `sentence` section
(read by `tfbert.SentenceEncoder`).

`Transformer` (+ `max_seq_length` of `sentence_bert_config.json`, or, as
sentence-transformers 6 saves it, `model_max_length` of the tokenizer config),
`Pooling` (`1_Pooling/config.json`: mean, cls or max, as `pooling_mode` or the
older `pooling_mode_*` flags), an optional `Dense` (its weights
as `sentence_dense/*`; Tanh or Identity activation) and `Normalize`. Any other
module, or an unsupported pooling mode, is an error naming the file.
"""

import os

import numpy as np
from safetensors import safe_open

from tfbert.convert import common

# sentence-transformers pooling flags -> tfbert SentenceEncoder pooling.
POOLING_MODES = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls",
                 "pooling_mode_max_tokens": "max"}
POOLING_NAMES = ("mean", "cls", "max")  # sentence-transformers 6's `pooling_mode` values
# sentence-transformers Dense activation (a torch class path) -> Keras name.
DENSE_ACTIVATIONS = {"torch.nn.modules.activation.Tanh": "tanh",
                     "torch.nn.modules.linear.Identity": "linear"}


def sentence_transformers_metadata(src_dir):
    """`(sentence settings, dense weights)` from a sentence-transformers
    directory, or `(None, {})` without `modules.json` (see module doc)."""
    modules_path = os.path.join(src_dir, "modules.json")
    if not os.path.isfile(modules_path):
        return None, {}
    modules = common.read_json(modules_path)
    if not isinstance(modules, list):
        raise ValueError(f"{modules_path}: expected a JSON list of modules.")
    sentence = {"pooling": None, "normalize": False, "dense_units": None,
                "dense_activation": "tanh", "seq_length": None}
    dense_weights = {}
    for module in sorted(modules, key=lambda m: m.get("idx", 0)):
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        path = os.path.join(src_dir, module.get("path", ""))
        if kind == "Transformer":
            config_path = os.path.join(path, "sentence_bert_config.json")
            length = None
            if os.path.isfile(config_path):
                length = common.read_json_object(config_path).get("max_seq_length")
            tokenizer_config = os.path.join(path, "tokenizer_config.json")
            if length is None and os.path.isfile(tokenizer_config):
                # sentence-transformers 6 keeps the length as the tokenizer's.
                length = common.read_json_object(tokenizer_config).get("model_max_length")
                length = length if isinstance(length, int) and length < 1_000_000 else None
            sentence["seq_length"] = int(length) if length else None
        elif kind == "Pooling":
            config_path = common.require_file(os.path.join(path, "config.json"),
                                              "sentence-transformers pooling config")
            sentence["pooling"] = _pooling(common.read_json_object(config_path), config_path)
        elif kind == "Dense":
            if sentence["dense_units"] is not None:
                raise ValueError(f"{modules_path}: more than one Dense module is not supported.")
            sentence["dense_units"], sentence["dense_activation"], dense_weights = (
                _sentence_dense(path))
        elif kind == "Normalize":
            sentence["normalize"] = True
        else:
            raise ValueError(f"{modules_path}: module type {module.get('type')!r} is not "
                             "supported (tfbert converts Transformer, Pooling, Dense, Normalize).")
    if sentence["pooling"] is None:
        raise ValueError(f"{modules_path}: no Pooling module; tfbert needs one to pool tokens.")
    return sentence, dense_weights


def _pooling(config, config_path):
    """tfbert's pooling of a Pooling module's config: `pooling_mode` (a name or
    a list of one, sentence-transformers 6) or the `pooling_mode_*` flags."""
    if "pooling_mode" in config:
        mode = config["pooling_mode"]
        mode = mode[0] if isinstance(mode, list) and len(mode) == 1 else mode
        if mode not in POOLING_NAMES:
            raise ValueError(f"{config_path}: pooling_mode {mode!r} is not supported; tfbert "
                             f"converts one of {list(POOLING_NAMES)}.")
        return mode
    on = sorted(k for k, v in config.items() if k.startswith("pooling_mode") and v)
    if len(on) != 1 or on[0] not in POOLING_MODES:
        raise ValueError(f"{config_path}: pooling modes {on} are not supported; tfbert "
                         f"converts exactly one of {sorted(POOLING_MODES)}.")
    return POOLING_MODES[on[0]]


def _sentence_dense(path):
    """`(units, activation, {"kernel", "bias"})` of a sentence-transformers Dense module."""
    config_path = common.require_file(os.path.join(path, "config.json"),
                                      "sentence-transformers Dense config")
    config = common.read_json_object(config_path)
    activation = config.get("activation_function", "torch.nn.modules.activation.Tanh")
    if activation not in DENSE_ACTIVATIONS:
        raise ValueError(f"{config_path}: activation {activation!r} is not supported; tfbert "
                         f"converts {sorted(DENSE_ACTIVATIONS)}.")
    weights_path = common.require_file(os.path.join(path, "model.safetensors"),
                                       "sentence-transformers Dense weights")
    with safe_open(weights_path, framework="numpy") as f:
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    if "linear.weight" not in tensors:
        raise ValueError(f"{weights_path}: no 'linear.weight' (keys {sorted(tensors)}).")
    kernel = np.asarray(tensors["linear.weight"], np.float32).T  # torch [out, in] -> [in, out]
    bias = np.asarray(tensors.get("linear.bias", np.zeros(kernel.shape[1])), np.float32)
    return int(kernel.shape[1]), DENSE_ACTIVATIONS[activation], {"kernel": kernel, "bias": bias}
