"""`BertEmbeddings`: word + position + segment embeddings, layer norm, dropout."""

import keras
from keras import ops

from tfbert.layers.layer_norm import LayerNorm


@keras.saving.register_keras_serializable(package="tfbert")
class BertEmbeddings(keras.layers.Layer):
    """Sums token, absolute position and segment (token type) embeddings.

    Inputs are int `[batch, seq]` word ids and type ids; positions are
    `0..seq-1`. Output is `[batch, seq, hidden_size]` after layer norm and
    dropout, in the layer's compute dtype.

    With `embedding_size` E != `hidden_size` (ALBERT's factorized
    embeddings) the tables and the layer norm are E wide and a dense
    `embedding_projection` maps the result to `hidden_size` after dropout, as
    ALBERT's `embedding_hidden_mapping_in` does: vocab x E + E x H parameters
    instead of vocab x H.

    Example:
    >>> layer = BertEmbeddings(vocab_size=100, hidden_size=8)
    >>> tuple(layer(ops.ones((2, 5), "int32"), ops.zeros((2, 5), "int32")).shape)
    (2, 5, 8)
    """

    def __init__(
        self,
        vocab_size,
        hidden_size,
        max_position_embeddings=512,
        type_vocab_size=2,
        initializer_range=0.02,
        layer_norm_eps=1e-12,
        dropout_rate=0.0,
        embedding_size=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        # === Config ===
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.dropout_rate = dropout_rate
        self.embedding_size = embedding_size
        width = embedding_size if embedding_size is not None else hidden_size
        self.width = width

        # === Layers ===
        init = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.word_embeddings = keras.layers.Embedding(
            vocab_size, width, embeddings_initializer=init,
            dtype=self.dtype_policy, name="word_embeddings",
        )
        self.token_type_embeddings = keras.layers.Embedding(
            type_vocab_size, width, embeddings_initializer=init,
            dtype=self.dtype_policy, name="token_type_embeddings",
        )
        self.layer_norm = LayerNorm(
            epsilon=layer_norm_eps, dtype=self.dtype_policy, name="layer_norm"
        )
        self.dropout = keras.layers.Dropout(dropout_rate, dtype=self.dtype_policy)
        # Only when factorized, so a BERT config keeps exactly BERT's weights.
        self.embedding_projection = None
        if width != hidden_size:
            self.embedding_projection = keras.layers.Dense(
                hidden_size, kernel_initializer=init, dtype=self.dtype_policy,
                name="embedding_projection",
            )

    def build(self, word_ids_shape=None, type_ids_shape=None):
        self.word_embeddings.build(word_ids_shape)
        self.token_type_embeddings.build(word_ids_shape)
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.max_position_embeddings, self.width),
            initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
        )
        self.layer_norm.build((None, None, self.width))
        if self.embedding_projection is not None:
            self.embedding_projection.build((None, None, self.width))
        self.built = True

    def call(self, word_ids, type_ids, training=None):
        seq_length = ops.shape(word_ids)[1]
        positions = ops.cast(self.position_embeddings[:seq_length], self.compute_dtype)
        x = self.word_embeddings(word_ids) + self.token_type_embeddings(type_ids)
        x = x + positions[None, :, :]
        x = self.layer_norm(x)
        x = self.dropout(x, training=training)
        if self.embedding_projection is not None:
            x = self.embedding_projection(x)
        return x

    def compute_output_shape(self, word_ids_shape, type_ids_shape=None):
        return tuple(word_ids_shape) + (self.hidden_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
            dropout_rate=self.dropout_rate,
            embedding_size=self.embedding_size,
        )
        return config
