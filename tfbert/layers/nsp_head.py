"""`NextSentenceHead`: BERT's next-sentence classifier on the pooled output."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="tfbert")
class NextSentenceHead(keras.layers.Layer):
    """Two logits per example: 0 = segment B follows A, 1 = B is random
    (google-research/bert's label order).

    Weight names relative to the head (checkpoint contract `nsp/<name>`):
    `kernel` [hidden, 2], `bias` [2]. Logits are float32.

    Example:
    >>> head = NextSentenceHead(initializer_range=0.02, name="nsp")
    >>> tuple(head(keras.random.normal((3, 8))).shape)
    (3, 2)
    """

    def __init__(self, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range

    def build(self, pooled_shape):
        self.kernel = self.add_weight(
            name="kernel",
            shape=(pooled_shape[-1], 2),
            initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
        )
        self.bias = self.add_weight(name="bias", shape=(2,), initializer="zeros")
        self.built = True

    def call(self, pooled_output):
        x = ops.cast(pooled_output, self.compute_dtype)
        logits = ops.matmul(x, ops.cast(self.kernel, self.compute_dtype))
        return ops.cast(logits, "float32") + ops.cast(self.bias, "float32")

    def compute_output_shape(self, pooled_output_shape):
        return (pooled_output_shape[0], 2)

    def get_config(self):
        config = super().get_config()
        config.update(initializer_range=self.initializer_range)
        return config
