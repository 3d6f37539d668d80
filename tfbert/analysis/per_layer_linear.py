"""`PerLayerLinear`: an independent linear map for every layer of a stack."""

import keras


@keras.saving.register_keras_serializable(package="tfbert")
class PerLayerLinear(keras.layers.Layer):
    """`[batch, layers, in] -> [batch, layers, units]` with its own kernel and
    bias per layer: one probe per layer, trained in one model (the losses add
    up, and no parameter is shared, so each layer's probe learns alone).

    Example:
    >>> layer = PerLayerLinear(3)
    >>> layer(np.ones([2, 4, 5], "float32")).shape
    TensorShape([2, 4, 3])
    >>> PerLayerLinear.from_config(layer.get_config()).units
    3
    """

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        layers, width = input_shape[-2], input_shape[-1]
        self.kernel = self.add_weight(shape=(layers, width, self.units), name="kernel",
                                      initializer="glorot_uniform")
        self.bias = self.add_weight(shape=(layers, self.units), name="bias", initializer="zeros")

    def call(self, x):
        return keras.ops.einsum("blh,lhu->blu", x, self.kernel) + self.bias

    def get_config(self):
        return {**super().get_config(), "units": self.units}
