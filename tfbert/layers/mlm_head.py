"""`MaskedLMHead`: BERT's masked-LM head, decoder tied to the word embeddings."""

import keras
from keras import ops

from tfbert.layers.activations import get_activation
from tfbert.layers.layer_norm import LayerNorm


@keras.saving.register_keras_serializable(package="tfbert")
class MaskedLMHead(keras.layers.Layer):
    """Predicts the original token at each masked position.

    dense (`transform`) -> activation -> `layer_norm` -> matmul with the
    transposed word embeddings (tied: the encoder's own variable, not a copy)
    + `output_bias`. Only the `masked_lm_positions` are gathered and projected,
    never the whole sequence. Logits are float32 under any dtype policy.

    `embedding_size` (ALBERT's factorized embeddings): the transform maps
    `hidden_size` -> `embedding_size` and the layer norm is that wide, so the
    result meets the `[vocab, embedding_size]` tied decoder. Default: hidden_size.

    Weight names relative to the head (the checkpoint contract `mlm/<name>`):
    `transform/kernel`, `transform/bias`, `layer_norm/gamma`,
    `layer_norm/beta`, `output_bias`.

    Example:
    >>> emb = keras.layers.Embedding(50, 8); emb.build((None,))
    >>> head = MaskedLMHead(emb, hidden_size=8, name="mlm")
    >>> seq = keras.random.normal((2, 6, 8))
    >>> tuple(head(seq, ops.array([[1, 3], [0, 0]])).shape)
    (2, 2, 50)
    """

    def __init__(self, embedding_layer, hidden_size, hidden_act="gelu",
                 initializer_range=0.02, layer_norm_eps=1e-12, embedding_size=None, **kwargs):
        super().__init__(**kwargs)
        # === Config ===
        self.hidden_size = hidden_size
        self.embedding_size = embedding_size
        self.width = embedding_size if embedding_size is not None else hidden_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        # The tied decoder: an Embedding layer whose `embeddings` are
        # [vocab, hidden]. Keras tracks it, but the variable is the same one.
        self.embedding_layer = embedding_layer

        # === Layers ===
        self.transform = keras.layers.Dense(
            self.width,
            activation=get_activation(hidden_act),
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy,
            name="transform",
        )
        self.layer_norm = LayerNorm(
            epsilon=layer_norm_eps, dtype=self.dtype_policy, name="layer_norm"
        )

    @property
    def vocab_size(self):
        return int(self.embedding_layer.embeddings.shape[0])

    def build(self, sequence_output_shape=None, masked_lm_positions_shape=None):
        self.transform.build((None, self.hidden_size))
        self.layer_norm.build((None, self.width))
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocab_size,), initializer="zeros"
        )
        self.built = True

    def call(self, sequence_output, masked_lm_positions):
        positions = ops.cast(masked_lm_positions, "int32")
        x = ops.take_along_axis(
            ops.cast(sequence_output, self.compute_dtype), positions[:, :, None], axis=1
        )
        x = self.layer_norm(self.transform(x))
        embeddings = ops.cast(self.embedding_layer.embeddings, self.compute_dtype)
        logits = ops.matmul(x, ops.transpose(embeddings))
        return ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")

    def compute_output_shape(self, sequence_output_shape, masked_lm_positions_shape):
        return tuple(masked_lm_positions_shape) + (self.vocab_size,)

    def get_config(self):
        # The embedding layer is passed in by the model that owns it
        # (BertPretrainer), so it is not part of this config.
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            hidden_act=self.hidden_act,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
            embedding_size=self.embedding_size,
        )
        return config
