"""`TransformerBlock`: one BERT encoder layer, post- or pre-layer-norm."""

import math

import keras
from keras import ops

from tfbert.layers.activations import get_activation
from tfbert.layers.layer_norm import LayerNorm


@keras.saving.register_keras_serializable(package="tfbert")
class TransformerBlock(keras.layers.Layer):
    """Self-attention and feed-forward, each followed by add & layer norm.

    `norm_first=True` (pre-LayerNorm, as Keras' `TransformerEncoder(norm_first=
    True)`): each sub-layer normalizes its input instead, and the residual
    stream is left unnormalized (the encoder adds a final layer norm);
    reported to train more stably at high learning rates (Xiong et al. 2020).

    The attention's weights and dropout are Keras' `MultiHeadAttention`'s
    (checkpoints and LoRA see its layers); `_attention_2d` computes it.
    `attention_mask` is bool `[batch, seq, seq]`, True where a query may
    attend to a key.

    `head_size` (default `hidden_size // num_heads`): the width of one head.
    A pruned layer (`BertEncoder.prune_heads`) has fewer heads of the
    unpruned size; with `num_heads=0` the attention adds only its output
    bias and the feed-forward part runs as before.

    Example:
    >>> block = TransformerBlock(hidden_size=8, num_heads=2, intermediate_size=16)
    >>> tuple(block(keras.ops.ones((2, 3, 8))).shape)
    (2, 3, 8)
    """

    def __init__(
        self,
        hidden_size,
        num_heads,
        intermediate_size,
        hidden_act="gelu",
        dropout_rate=0.0,
        attention_dropout_rate=0.0,
        initializer_range=0.02,
        layer_norm_eps=1e-12,
        norm_first=False,
        head_size=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        # === Config ===
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.dropout_rate = dropout_rate
        self.attention_dropout_rate = attention_dropout_rate
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.norm_first = norm_first
        self.head_size = hidden_size // num_heads if head_size is None else head_size

        # === Layers ===
        init = keras.initializers.TruncatedNormal(stddev=initializer_range)
        policy = self.dtype_policy
        self.self_attention = keras.layers.MultiHeadAttention(
            num_heads=max(num_heads, 1),
            key_dim=self.head_size,
            dropout=attention_dropout_rate,
            kernel_initializer=init,
            dtype=policy,
            name="self_attention",
        )
        if num_heads == 0:
            # Keras refuses 0 heads; a layer pruned to none keeps empty
            # projections and the output bias (checkpoints see the same names).
            self.self_attention._num_heads = 0
        self.attention_dropout = keras.layers.Dropout(dropout_rate, dtype=policy)
        self.attention_layer_norm = LayerNorm(
            epsilon=layer_norm_eps, dtype=policy, name="attention_layer_norm"
        )
        self.intermediate_dense = keras.layers.Dense(
            intermediate_size,
            activation=get_activation(hidden_act),
            kernel_initializer=init,
            dtype=policy,
            name="intermediate_dense",
        )
        self.output_dense = keras.layers.Dense(
            hidden_size, kernel_initializer=init, dtype=policy, name="output_dense"
        )
        self.output_dropout = keras.layers.Dropout(dropout_rate, dtype=policy)
        self.output_layer_norm = LayerNorm(
            epsilon=layer_norm_eps, dtype=policy, name="output_layer_norm"
        )

    def build(self, x_shape, attention_mask_shape=None):
        input_shape = x_shape
        self.self_attention.build(input_shape, input_shape)
        self.attention_layer_norm.build(input_shape)
        self.intermediate_dense.build(input_shape)
        self.output_dense.build(tuple(input_shape[:-1]) + (self.intermediate_size,))
        self.output_layer_norm.build(input_shape)
        self.built = True

    def call(self, x, attention_mask=None, training=None, return_attention_probs=False):
        # Same layers either way; pre-LN moves each norm onto its sub-layer's input.
        attention_input = self.attention_layer_norm(x) if self.norm_first else x
        attended, probs = self._attention_2d(attention_input, attention_mask, training)
        x = x + self.attention_dropout(attended, training=training)
        if not self.norm_first:
            x = self.attention_layer_norm(x)
        feed_forward_input = self.output_layer_norm(x) if self.norm_first else x
        # The feed-forward runs on a 2-D [tokens, hidden] view: without XLA,
        # TF's oneDNN rewrite then fuses bias and GELU into the matmul (on 3-D
        # inputs it does not; bf16 MiniLM inference 145 -> 187 seq/s on CPU).
        flat = keras.ops.reshape(feed_forward_input, (-1, self.hidden_size))
        h = self.output_dense(self.intermediate_dense(flat))
        h = keras.ops.reshape(h, keras.ops.shape(x))
        x = x + self.output_dropout(h, training=training)
        if not self.norm_first:
            x = self.output_layer_norm(x)
        if return_attention_probs:
            return x, probs
        return x

    def _attention_2d(self, x, attention_mask, training):
        """`self.self_attention`'s computation, with its weights, on a 2-D
        [tokens, hidden] view: each projection is one matmul whose bias TF's
        oneDNN rewrite fuses (Keras' EinsumDense runs a 3-D einsum and a
        separate bias add), and the mask is an added bias, not a `where`:
        OpenVINO then fuses the whole attention into one op. Measured against
        Keras' MultiHeadAttention on one core (MiniLM, b32 x 128,
        docs/cpu_speed.md): TensorFlow 1.10x inference and 1.19x training
        without XLA, level and 1.11x with it; OpenVINO 1.10x fp32, 1.11x
        bf16, 1.15x int8."""
        mha = self.self_attention
        hidden, heads, head_size = self.hidden_size, self.num_heads, self.head_size
        width = heads * head_size  # = hidden unless heads were pruned
        dtype = self.compute_dtype
        shape = ops.shape(x)
        if heads == 0:  # pruned to no heads: the output bias, and no probabilities
            bias = ops.cast(mha._output_dense.bias, dtype)
            probs = ops.zeros((shape[0], 0, shape[1], shape[1]), dtype)
            return ops.zeros_like(x) + bias, probs
        flat = ops.reshape(x, (-1, hidden))

        def project(dense):
            kernel = ops.cast(ops.reshape(dense.kernel, (hidden, width)), dtype)
            bias = ops.cast(ops.reshape(dense.bias, (width,)), dtype)
            out = ops.matmul(flat, kernel) + bias
            return ops.reshape(out, (shape[0], shape[1], heads, head_size))

        # As Keras' MultiHeadAttention: scale the projected query, mask,
        # softmax, dropout on the probabilities.
        query = project(mha._query_dense) * ops.cast(1.0 / math.sqrt(head_size), dtype)
        key = project(mha._key_dense)
        value = project(mha._value_dense)
        scores = ops.matmul(ops.transpose(query, (0, 2, 1, 3)), ops.transpose(key, (0, 2, 3, 1)))
        if attention_mask is not None:
            # -1e4 as Google's BERT adds: exp underflows to exactly 0 for a
            # masked key in fp32, bf16 and fp16 alike. NNCF's int8 model of a
            # -1e9 bias is wrong (token cosine 0.52 to fp32, against 0.997).
            keep = ops.cast(ops.expand_dims(attention_mask, 1), dtype)
            scores = scores + (1.0 - keep) * ops.cast(-1e4, dtype)
        probs = ops.softmax(scores, axis=-1)
        mixed = ops.matmul(mha._dropout_layer(probs, training=training),
                           ops.transpose(value, (0, 2, 1, 3)))
        mixed = ops.reshape(ops.transpose(mixed, (0, 2, 1, 3)), (-1, width))
        out = mha._output_dense
        attended = (ops.matmul(mixed, ops.cast(ops.reshape(out.kernel, (width, hidden)), dtype))
                    + ops.cast(out.bias, dtype))
        return ops.reshape(attended, shape), probs

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_heads=self.num_heads,
            intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act,
            dropout_rate=self.dropout_rate,
            attention_dropout_rate=self.attention_dropout_rate,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
            norm_first=self.norm_first,
            head_size=self.head_size,
        )
        return config
