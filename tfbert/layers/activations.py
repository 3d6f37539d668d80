"""The feed-forward activations a `BertConfig.hidden_act` names."""

import keras


def get_activation(name):
    """`gelu` is exact (erf), `gelu_tanh` the tanh approximation, `relu` plain."""
    if name == "gelu":
        return lambda x: keras.activations.gelu(x, approximate=False)
    if name == "gelu_tanh":
        return lambda x: keras.activations.gelu(x, approximate=True)
    if name == "relu":
        return keras.activations.relu
    raise ValueError(f"Unknown activation {name!r}; use gelu, gelu_tanh or relu.")
