"""TransformerBlock: the attention on 2-D matmuls with an added mask bias
computes what Keras' MultiHeadAttention computes, with its weights, in fp32
and bf16."""

import keras
import numpy as np
import pytest

from tfbert.layers.transformer_block import TransformerBlock

HIDDEN, HEADS, FFN = 32, 4, 64


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, 7, HIDDEN)).astype("float32")
    lengths = np.array([7, 4, 0])  # the last row masks every key
    keys = np.arange(7)[None, None, :] < lengths[:, None, None]
    mask = np.broadcast_to(keys, (3, 7, 7))
    return x, mask


def _block(dtype, **kwargs):
    """A built block whose weights (biases and LayerNorm too) are all random,
    so a dropped bias or a swapped weight changes the output."""
    block = TransformerBlock(HIDDEN, HEADS, FFN, dtype=dtype, **kwargs)
    block.build((None, None, HIDDEN))
    rng = np.random.default_rng(7)
    block.set_weights([rng.normal(scale=0.2, size=w.shape).astype("float32")
                       for w in block.get_weights()])
    return block


def test_bf16_block_matches_the_fp32_block_with_the_same_weights():
    x, mask = _inputs()
    fp32 = _block("float32")
    bf16 = _block("mixed_bfloat16")
    bf16.set_weights(fp32.get_weights())
    want, want_probs = fp32(x, mask, return_attention_probs=True)
    got, got_probs = bf16(x, mask, return_attention_probs=True)
    assert got.dtype == "bfloat16"
    got = np.asarray(keras.ops.cast(got, "float32"))
    got_probs = np.asarray(keras.ops.cast(got_probs, "float32"))
    # bf16 keeps 8 bits of mantissa: outputs of layer norm (unit scale) agree
    # to a few hundredths, while a wrong weight or transpose is off by ~1.
    # (Rows with a key: the empty last row's scores drown in the bias.)
    assert np.abs(got[:2] - np.asarray(want)[:2]).max() < 0.1
    assert np.abs(got_probs[:2] - np.asarray(want_probs)[:2]).max() < 0.02
    # Keys outside the mask get exactly zero probability (exp of the -1e4
    # bias underflows) in rows that have a key; they sum to one.
    outside = ~np.broadcast_to(mask[:, None], got_probs.shape)
    assert np.all(got_probs[:2][outside[:2]] == 0)
    np.testing.assert_allclose(got_probs[:2].sum(-1), 1.0, atol=0.02)


def test_fp32_attention_equals_keras_multi_head_attention():
    x, mask = _inputs(1)
    block = _block("float32")
    ours, ours_probs = block._attention_2d(x, mask, training=False)
    keras_out, keras_probs = block.self_attention(x, x, attention_mask=mask,
                                                  return_attention_scores=True)
    # Rows with a key (the empty last row has none: Keras zeroes its
    # probabilities, the bias spreads them evenly; the preprocessor always
    # gives [CLS], so no real text has such a row).
    np.testing.assert_allclose(np.asarray(ours)[:2], np.asarray(keras_out)[:2], atol=1e-5)
    np.testing.assert_allclose(np.asarray(ours_probs)[:2], np.asarray(keras_probs)[:2],
                               atol=1e-6)


def test_bf16_attention_equals_keras_multi_head_attention_in_bf16():
    x, mask = _inputs(1)
    block = _block("mixed_bfloat16")
    xb = keras.ops.cast(x, "bfloat16")
    ours, ours_probs = block._attention_2d(xb, mask, training=False)
    keras_out, keras_probs = block.self_attention(xb, xb, attention_mask=mask,
                                                  return_attention_scores=True)
    f32 = lambda t: np.asarray(keras.ops.cast(t, "float32"))  # noqa: E731
    scale = np.abs(f32(keras_out)[:2]).max()
    assert np.abs(f32(ours)[:2] - f32(keras_out)[:2]).max() < 0.05 * scale
    assert np.abs(f32(ours_probs)[:2] - f32(keras_probs)[:2]).max() < 0.02


@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
def test_attention_dropout_acts_in_training_only(dtype):
    x, mask = _inputs(2)
    block = _block(dtype, attention_dropout_rate=0.5)
    _, eval_a = block(x, mask, training=False, return_attention_probs=True)
    _, eval_b = block(x, mask, training=False, return_attention_probs=True)
    np.testing.assert_array_equal(np.asarray(keras.ops.cast(eval_a, "float32")),
                                  np.asarray(keras.ops.cast(eval_b, "float32")))
    out = block(x, mask, training=True)
    assert not np.allclose(np.asarray(keras.ops.cast(out, "float32")),
                           np.asarray(keras.ops.cast(block(x, mask), "float32")))


def test_get_config_round_trips():
    block = TransformerBlock(HIDDEN, HEADS, FFN, hidden_act="gelu_tanh", dropout_rate=0.1,
                             attention_dropout_rate=0.2, layer_norm_eps=1e-6)
    again = TransformerBlock.from_config(block.get_config())
    assert again.get_config() == block.get_config()


def test_fewer_heads_keep_their_size_and_round_trip():
    block = TransformerBlock(HIDDEN, 1, FFN, head_size=HIDDEN // HEADS)
    block.build((2, 3, HIDDEN))
    assert tuple(block.self_attention._query_dense.kernel.shape) == (HIDDEN, 1, HIDDEN // HEADS)
    again = TransformerBlock.from_config(block.get_config())
    assert again.get_config() == block.get_config() and again.head_size == HIDDEN // HEADS
    empty = TransformerBlock(HIDDEN, 0, FFN, head_size=HIDDEN // HEADS)  # every head pruned
    x = keras.ops.ones((2, 3, HIDDEN))
    out, probs = empty(x, return_attention_probs=True)
    assert tuple(out.shape) == (2, 3, HIDDEN) and tuple(probs.shape) == (2, 0, 3, 3)
