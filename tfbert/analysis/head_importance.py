"""Head importance (Michel, Levy & Neubig 2019, "Are Sixteen Heads Really
Better than One?"): how much a model's loss moves when one attention head is
gated.

Every head h of every layer gets a gate xi_h multiplying its output (its
attention-weighted values, before the output projection); the importance of
h is |dL/dxi_h| at xi = 1, accumulated over the batches of a dev set (their
code, as Hugging Face's bertology example: the absolute gradient of each
batch's mean loss, summed), then normalized per layer by the L2 norm over
the layer's heads (their Section 4.1 / code `normalize_scores_by_layer`).

The encoder has no head mask of its own yet, so `masked_outputs` runs the
encoder's own layers and weights with the gates in between (inference only:
no dropout; float32). With every gate at 1 its outputs equal the encoder's
(tests/analysis/test_head_importance.py checks it to 1e-5). A pruned encoder
(`BertEncoder.prune_heads`, `tfbert.analysis.head_pruning`) works too: a
layer's row holds its kept heads first (renumbered 0, 1, ...), and the
importance of a head it no longer has is NaN.

Example:
>>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=100))
>>> ids = np.array([[2, 7, 9, 3]], "int32")
>>> inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
...           "input_type_ids": np.zeros_like(ids)}
>>> gates = np.ones([2, 2], "float32")
>>> out = masked_outputs(encoder, inputs, gates)
>>> bool(np.allclose(out["sequence_output"], encoder(inputs)["sequence_output"], atol=1e-5))
True
"""

import math

import numpy as np
import tensorflow as tf
from keras import ops

from tfbert.config import BertConfig  # noqa: F401  (the doctest)
from tfbert.encoder import BertEncoder  # noqa: F401  (the doctest)


def masked_outputs(encoder, inputs, head_gates):
    """`{"sequence_output", "pooled_output"}` of `encoder` on `inputs` with
    each head's output multiplied by `head_gates[layer, head]` (`[layers,
    heads]`, a tensor or variable: gradients flow to it)."""
    config = encoder.config
    ids, types = inputs["input_word_ids"], inputs["input_type_ids"]
    x = encoder.embeddings(ids, types, training=False)
    attention_mask = ops.expand_dims(ops.not_equal(inputs["input_mask"], 0), axis=1)
    for i in range(config.num_layers):
        block = encoder.transformer_layers[0 if config.share_layers else i]
        x = _block(block, x, attention_mask, head_gates[i][:block.num_heads])
    if encoder.final_layer_norm is not None:
        x = encoder.final_layer_norm(x)
    return {"sequence_output": x, "pooled_output": encoder.pooler(x[:, 0, :])}


def head_importance(encoder, batches, loss_of, normalize=True):
    """NumPy `[layers, heads]` importance (module docstring). `batches`
    yields `(inputs, targets)`; `loss_of(outputs, targets)` is the model's
    mean loss from `masked_outputs`' outputs (e.g. a fine-tuned head on
    `pooled_output`)."""
    config = encoder.config
    gates = tf.Variable(tf.ones([config.num_layers, config.num_heads]), name="head_gates")
    total = np.zeros([config.num_layers, config.num_heads])
    for inputs, targets in batches:
        with tf.GradientTape() as tape:
            loss = loss_of(masked_outputs(encoder, inputs, gates), targets)
        grad = tape.gradient(loss, gates)
        if grad is not None:  # None: every head pruned away
            total += np.abs(tf.convert_to_tensor(grad).numpy())
    for layer in range(config.num_layers):  # heads pruned away: no importance
        total[layer, config.layer_heads(layer):] = np.nan
    if normalize:
        total /= np.sqrt(np.nansum(total**2, axis=-1, keepdims=True)) + 1e-20
    return total


def _block(block, x, attention_mask, gates):
    """`TransformerBlock.call` at inference, with gated heads."""
    attention_input = block.attention_layer_norm(x) if block.norm_first else x
    x = x + _attention(block, attention_input, attention_mask, gates)
    if not block.norm_first:
        x = block.attention_layer_norm(x)
    feed_forward_input = block.output_layer_norm(x) if block.norm_first else x
    h = block.output_dense(block.intermediate_dense(feed_forward_input))
    x = x + h
    if not block.norm_first:
        x = block.output_layer_norm(x)
    return x


def _attention(block, x, attention_mask, gates):
    """`TransformerBlock._attention_2d` (its weights, its -1e4 mask bias) with
    each head's attention-weighted values times its gate."""
    mha = block.self_attention
    hidden, heads, head_size = block.hidden_size, block.num_heads, block.head_size
    width = heads * head_size  # = hidden unless heads were pruned
    shape = ops.shape(x)
    if heads == 0:
        return ops.zeros_like(x) + mha._output_dense.bias

    def project(dense):
        out = ops.matmul(ops.reshape(x, (-1, hidden)), ops.reshape(dense.kernel, (hidden, width)))
        out = out + ops.reshape(dense.bias, (width,))
        return ops.transpose(ops.reshape(out, (shape[0], shape[1], heads, head_size)),
                             (0, 2, 1, 3))

    query = project(mha._query_dense) * (1.0 / math.sqrt(head_size))
    key, value = project(mha._key_dense), project(mha._value_dense)
    scores = ops.matmul(query, ops.transpose(key, (0, 1, 3, 2)))
    keep = ops.cast(ops.expand_dims(attention_mask, 1), scores.dtype)
    probs = ops.softmax(scores + (1.0 - keep) * -1e4, axis=-1)
    mixed = ops.matmul(probs, value) * ops.reshape(gates, (1, heads, 1, 1))
    mixed = ops.reshape(ops.transpose(mixed, (0, 2, 1, 3)), (-1, width))
    out = mha._output_dense
    attended = ops.matmul(mixed, ops.reshape(out.kernel, (width, hidden))) + out.bias
    return ops.reshape(attended, shape)
