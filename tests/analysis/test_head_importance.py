"""tfbert.analysis.head_importance: the gated forward pass is the encoder's
(all gates 1, padded batch); the importance is the gradient of the loss with
respect to a gate (a finite difference agrees), and a head whose output
projection is zero has importance exactly 0."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertEncoder
from tfbert.analysis.head_importance import head_importance, masked_outputs

TEXTS = ["Open the file before you read it.", "The queue is empty when no items remain.",
         "A thread can wait for the lock."]


@pytest.fixture(scope="module")
def setup(tiny_pair):
    encoder, pre = tiny_pair
    own = BertEncoder(encoder.config)  # a copy whose weights this test may change
    own.set_weights(encoder.get_weights())
    inputs = pre.bert_pack_inputs([pre.tokenize(TEXTS)], seq_length=16)
    keras.utils.set_random_seed(0)
    classifier = tf.constant(np.random.default_rng(0).normal(size=(128, 2)), tf.float32)
    targets = tf.constant([0, 1, 1])

    def loss_of(outputs, y):
        logits = tf.matmul(outputs["pooled_output"], classifier)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))

    return own, inputs, targets, loss_of


def test_all_gates_open_is_the_encoder(setup):
    encoder, inputs, _, _ = setup
    assert int(tf.reduce_min(tf.reduce_sum(inputs["input_mask"], 1))) < 16  # padding inside
    ours = masked_outputs(encoder, inputs, tf.ones([2, 2]))
    theirs = encoder(inputs)
    mask = inputs["input_mask"].numpy()[..., None]
    np.testing.assert_allclose(ours["sequence_output"].numpy() * mask,
                               theirs["sequence_output"].numpy() * mask, atol=1e-5)
    np.testing.assert_allclose(ours["pooled_output"], theirs["pooled_output"], atol=1e-5)


def test_importance_is_the_gate_gradient(setup):
    encoder, inputs, targets, loss_of = setup
    raw = head_importance(encoder, [(inputs, targets)], loss_of, normalize=False)
    assert raw.shape == (2, 2) and (raw > 0).all()
    eps = 1e-2
    for layer, head in ((0, 1), (1, 0)):
        gates = np.ones([2, 2], np.float32)
        gates[layer, head] += eps
        up = float(loss_of(masked_outputs(encoder, inputs, tf.constant(gates)), targets))
        gates[layer, head] -= 2 * eps
        down = float(loss_of(masked_outputs(encoder, inputs, tf.constant(gates)), targets))
        assert abs((up - down) / (2 * eps)) == pytest.approx(raw[layer, head], rel=2e-2,
                                                             abs=1e-5)
    normalized = head_importance(encoder, [(inputs, targets)], loss_of)
    np.testing.assert_allclose(np.linalg.norm(normalized, axis=1), 1.0, rtol=1e-6)


def test_a_silent_head_is_unimportant(setup):
    encoder, inputs, targets, loss_of = setup
    dense = encoder.transformer_layers[1].self_attention._output_dense
    kept = dense.kernel.numpy()
    kernel = kept.copy().reshape(2, 64, 128)  # [heads, head_size, hidden]
    kernel[1] = 0.0
    dense.kernel.assign(kernel.reshape(kept.shape))
    try:
        raw = head_importance(encoder, [(inputs, targets)], loss_of, normalize=False)
    finally:
        dense.kernel.assign(kept)
    assert raw[1, 1] == 0.0 and (raw[0] > 0).all() and raw[1, 0] > 0
