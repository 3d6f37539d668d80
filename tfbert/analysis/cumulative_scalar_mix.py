"""`CumulativeScalarMix`: scalar mixes of layers 0..l for every l (ELMo's
mix, as Tenney, Das & Pavlick 2019 use it for cumulative scoring)."""

import keras
import numpy as np


@keras.saving.register_keras_serializable(package="tfbert")
class CumulativeScalarMix(keras.layers.Layer):
    """`[batch, layers, H] -> [batch, layers, H]`: output l is
    `gamma_l * sum_{k <= l} softmax(w_l)_k * x_k`, a learned softmax-weighted
    sum of layers 0..l (Peters et al. 2018's scalar mix, one per l). The last
    mix sees every layer; its weights are the probe's mix weights
    (`mix_weights()`).

    Example:
    >>> mix = CumulativeScalarMix()
    >>> x = np.arange(6, dtype="float32").reshape([1, 3, 2])
    >>> mix(x).numpy().tolist()  # equal weights at the start: running means
    [[[0.0, 1.0], [1.0, 2.0], [2.0, 3.0]]]
    >>> mix.mix_weights().tolist()
    [0.3333333432674408, 0.3333333432674408, 0.3333333432674408]
    """

    def build(self, input_shape):
        layers = input_shape[-2]
        self.logits = self.add_weight(shape=(layers, layers), name="logits", initializer="zeros")
        self.gamma = self.add_weight(shape=(layers,), name="gamma", initializer="ones")
        self.visible = np.tril(np.ones((layers, layers), "float32"))  # mix l sees layers <= l

    def weights_matrix(self):
        """`[mixes, layers]`: row l the softmax weights of mix l (0 above l)."""
        logits = keras.ops.where(self.visible > 0, self.logits, -1e9)
        return keras.ops.softmax(logits, axis=-1) * self.visible

    def call(self, x):
        mixed = keras.ops.einsum("ml,blh->bmh", self.weights_matrix(), x)
        return mixed * self.gamma[None, :, None]

    def mix_weights(self):
        """NumPy `[layers]`: the softmax weights of the full mix (layers 0..L)."""
        return keras.ops.convert_to_numpy(self.weights_matrix()[-1])
