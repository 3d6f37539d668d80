"""The feed-forward activations a `BertConfig.hidden_act` names."""

import math

import keras
from keras import ops


def gelu(x):
    """Exact GELU, `0.5 * x * (1 + erf(x / sqrt(2)))`. Keras' (TensorFlow's
    `tf.nn.gelu`) writes it with `erfc`, which OpenVINO's converter leaves as
    four elementwise ops; this form becomes its one Gelu op, TFLite's converter
    still makes it one GELU, and the values agree to float rounding."""
    return 0.5 * x * (1.0 + ops.erf(x * (1.0 / math.sqrt(2.0))))


def get_activation(name):
    """`gelu` is exact (erf), `gelu_tanh` the tanh approximation, `relu` plain."""
    if name == "gelu":
        return gelu
    if name == "gelu_tanh":
        return lambda x: keras.activations.gelu(x, approximate=True)
    if name == "relu":
        return keras.activations.relu
    raise ValueError(f"Unknown activation {name!r}; use gelu, gelu_tanh or relu.")
