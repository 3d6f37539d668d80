import keras
import numpy as np
import pytest

from tfbert.train.optimizer import WarmupPolynomialDecay, create_optimizer


def test_schedule_warmup_then_linear_decay():
    s = WarmupPolynomialDecay(1e-3, decay_steps=110, warmup_steps=10)
    values = [float(s(step)) for step in (0, 5, 10, 60, 110, 200)]
    np.testing.assert_allclose(values, [0.0, 5e-4, 1e-3, 5e-4, 0.0, 0.0], atol=1e-9)
    assert WarmupPolynomialDecay.from_config(s.get_config()).get_config() == s.get_config()


def test_weight_decay_skips_layer_norm_and_bias():
    dense = keras.layers.Dense(4, bias_initializer="ones")
    norm = keras.layers.LayerNormalization()
    dense.build((None, 4))
    norm.build((None, 4))
    variables = [dense.kernel, dense.bias, norm.gamma, norm.beta]
    before = [v.numpy().copy() for v in variables]
    opt = create_optimizer(1e-2, num_train_steps=10, weight_decay=0.5, clipnorm=None)
    # Zero gradients: only decoupled weight decay can move a variable.
    opt.apply_gradients([(np.zeros(v.shape, "float32"), v) for v in variables])
    kernel, bias, gamma, beta = [v.numpy() for v in variables]
    assert not np.allclose(kernel, before[0])
    np.testing.assert_array_equal(bias, before[1])
    np.testing.assert_array_equal(gamma, before[2])
    np.testing.assert_array_equal(beta, before[3])


def test_lamb_and_unknown_optimizer():
    assert type(create_optimizer(1e-3, 100, optimizer_type="lamb")).__name__ == "Lamb"
    with pytest.raises(ValueError, match="Unknown optimizer_type 'sgd'"):
        create_optimizer(1e-3, 100, optimizer_type="sgd")


def _embedding_model(accumulate, clipnorm=1.0):
    """Embedding (IndexedSlices gradients, repeated ids) + Dense, trained on
    48 examples: batches of 8, or of 8/accumulate accumulated."""
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((6,), dtype="int32"), keras.layers.Embedding(20, 4),
                              keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(2)])
    model.compile(create_optimizer(1e-2, num_train_steps=6, num_warmup_steps=2,
                                   clipnorm=clipnorm, dense_gradients=True,
                                   gradient_accumulation_steps=accumulate),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 5, size=(48, 6)).astype("int32")  # every id repeats in a batch
    labels = (ids[:, 0] > 2).astype("int32")
    model.fit(tf.data.Dataset.from_tensor_slices((ids, labels)).batch(8 // accumulate),
              epochs=1, verbose=0)
    return model


def test_accumulated_micro_batches_equal_one_large_batch():
    """train.gradient_accumulation_steps on the default strategy: 4 micro-batches
    of 2 move the weights as one batch of 8 (6 updates; learning-rate schedule,
    warmup, weight decay and a clipnorm that bites all included)."""
    full, accumulated = _embedding_model(1, clipnorm=0.05), _embedding_model(4, clipnorm=0.05)
    assert int(accumulated.optimizer.iterations.numpy()) == 6
    for a, b in zip(full.get_weights(), accumulated.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert not np.allclose(full.get_weights()[0], _embedding_model(1, clipnorm=None).get_weights()[0])


def test_embedding_gradients_are_dense_for_adam():
    """Keras 3.15's Adam squares an IndexedSlices gradient per occurrence:
    an id seen k times adds the sum of k squares to the second moment instead
    of the square of the sum. `create_optimizer` densifies first, so one
    Embedding step equals the same step on the one-hot matmul of its table."""
    import tensorflow as tf

    table = np.random.default_rng(0).normal(size=(5, 3)).astype("float32")
    ids = tf.constant([[0, 0, 0, 1]])
    variables = []
    for use_embedding in (True, False):
        var = keras.Variable(table, name="embeddings")
        opt = create_optimizer(1e-2, num_train_steps=10, weight_decay=0.0, clipnorm=None,
                               dense_gradients=True)
        with tf.GradientTape() as tape:
            rows = (tf.gather(var, ids) if use_embedding else
                    tf.matmul(tf.one_hot(ids, 5), var))
            loss = tf.reduce_sum(rows * tf.constant([1.0, -2.0, 0.5]))
        grad = tape.gradient(loss, var.value)
        assert isinstance(grad, tf.IndexedSlices) == use_embedding
        opt.apply_gradients([(grad, var)])
        variables.append(var.numpy())
    np.testing.assert_allclose(variables[0], variables[1], atol=1e-7)
