"""`SpanBoundaryHead`: SpanBERT's span boundary objective (SBO)."""

import keras
from keras import ops

from tfbert.layers.activations import get_activation
from tfbert.layers.layer_norm import LayerNorm


@keras.saving.register_keras_serializable(package="tfbert")
class SpanBoundaryHead(keras.layers.Layer):
    """Predicts each token of a masked span from the two unmasked tokens
    around the span and the token's offset inside it (SpanBERT, Joshi et al.
    2020): `[x_left; x_right; p_offset]` -> (dense + activation + layer norm)
    x 2 -> the tied word embeddings + `output_bias`. Logits are float32.

    Weight names relative to the head (`sbo/<name>` in checkpoints):
    `position_embeddings`, `transform_1/{kernel,bias}`, `layer_norm_1/{gamma,beta}`,
    `transform_2/...`, `layer_norm_2/...`, `output_bias`.

    Example:
    >>> emb = keras.layers.Embedding(50, 8); emb.build((None,))
    >>> head = SpanBoundaryHead(emb, hidden_size=8, name="sbo")
    >>> seq = keras.random.normal((2, 6, 8))
    >>> pos = ops.array([[2, 3], [0, 0]])
    >>> tuple(head(seq, pos - 1, pos + 2, ops.array([[0, 1], [0, 0]])).shape)
    (2, 2, 50)
    """

    def __init__(self, embedding_layer, hidden_size, hidden_act="gelu", max_span_offset=64,
                 initializer_range=0.02, layer_norm_eps=1e-12, **kwargs):
        super().__init__(**kwargs)
        # === Config ===
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
        self.max_span_offset = max_span_offset
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.embedding_layer = embedding_layer  # tied decoder, as in MaskedLMHead

        # === Layers ===
        init = keras.initializers.TruncatedNormal(stddev=initializer_range)
        policy = self.dtype_policy
        self.transform_1 = keras.layers.Dense(hidden_size, activation=get_activation(hidden_act),
                                              kernel_initializer=init, dtype=policy, name="transform_1")
        self.layer_norm_1 = LayerNorm(epsilon=layer_norm_eps, dtype=policy, name="layer_norm_1")
        self.transform_2 = keras.layers.Dense(hidden_size, activation=get_activation(hidden_act),
                                              kernel_initializer=init, dtype=policy, name="transform_2")
        self.layer_norm_2 = LayerNorm(epsilon=layer_norm_eps, dtype=policy, name="layer_norm_2")

    @property
    def vocab_size(self):
        return int(self.embedding_layer.embeddings.shape[0])

    def build(self, *shapes):
        self.position_embeddings = self.add_weight(
            name="position_embeddings", shape=(self.max_span_offset, self.hidden_size),
            initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
        )
        self.transform_1.build((None, 3 * self.hidden_size))
        self.layer_norm_1.build((None, self.hidden_size))
        self.transform_2.build((None, self.hidden_size))
        self.layer_norm_2.build((None, self.hidden_size))
        self.output_bias = self.add_weight(name="output_bias", shape=(self.vocab_size,),
                                           initializer="zeros")
        self.built = True

    def call(self, sequence_output, span_left, span_right, span_offset):
        x = ops.cast(sequence_output, self.compute_dtype)

        def gather(positions):
            return ops.take_along_axis(x, ops.cast(positions, "int32")[:, :, None], axis=1)

        offset = ops.clip(ops.cast(span_offset, "int32"), 0, self.max_span_offset - 1)
        p = ops.cast(ops.take(self.position_embeddings, offset, axis=0), self.compute_dtype)
        h = ops.concatenate([gather(span_left), gather(span_right), p], axis=-1)
        h = self.layer_norm_1(self.transform_1(h))
        h = self.layer_norm_2(self.transform_2(h))
        embeddings = ops.cast(self.embedding_layer.embeddings, self.compute_dtype)
        logits = ops.matmul(h, ops.transpose(embeddings))
        return ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")

    def compute_output_shape(self, sequence_output_shape, span_left_shape, span_right_shape=None,
                             span_offset_shape=None):
        return tuple(span_left_shape) + (self.vocab_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            hidden_act=self.hidden_act,
            max_span_offset=self.max_span_offset,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
        )
        return config
