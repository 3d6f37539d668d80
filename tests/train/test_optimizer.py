import os

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


def test_time_budget_schedule_reads_its_clock_inside_a_compiled_step():
    import tensorflow as tf

    from tfbert.train.optimizer import TimeBudgetDecay

    schedule = TimeBudgetDecay(1e-3, budget_seconds=100.0, warmup_steps=10)
    compiled = tf.function(lambda step: schedule(step), jit_compile=True)
    rates = []
    for seconds in (0.0, 50.0, 99.0, 100.0, 250.0):
        schedule.seconds_spent.assign(seconds)
        rates.append(float(compiled(tf.constant(20))))
    np.testing.assert_allclose(rates, [1e-3, 5e-4, 1e-5, 0.0, 0.0], atol=1e-9)
    assert compiled.experimental_get_tracing_count() == 1  # the variable, not a retrace
    schedule.seconds_spent.assign(0.0)
    assert float(compiled(tf.constant(5))) == pytest.approx(5e-4)  # warming up
    again = TimeBudgetDecay.from_config(schedule.get_config())
    assert again.get_config() == schedule.get_config()


def test_budget_optimizer_saves_its_clock_with_its_state(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    optimizer = create_optimizer(1e-3, num_train_steps=1, budget_seconds=60.0)
    model.compile(optimizer=optimizer, loss="mse")
    model.train_on_batch(np.ones((2, 3)), np.ones((2, 1)))
    optimizer.budget_schedule.seconds_spent.assign(42.5)
    model.save_weights(str(tmp_path / "state.weights.h5"))

    again = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    restored = create_optimizer(1e-3, num_train_steps=1, budget_seconds=60.0)
    again.compile(optimizer=restored, loss="mse")
    restored.build(again.trainable_variables)
    again.load_weights(str(tmp_path / "state.weights.h5"))
    assert float(restored.budget_schedule.seconds_spent.numpy()) == 42.5
    assert int(restored.iterations.numpy()) == 1


class _OptimizerState(keras.callbacks.Callback):
    """Records whether the optimizer's slots exist when training begins,
    i.e. before Keras traces the first train step."""

    def on_train_begin(self, logs=None):
        self.built_before_tracing = self.model.optimizer.built


@pytest.mark.parametrize("kind", ["classifier", "sentence_loss"])
def test_fit_builds_the_optimizer_before_the_first_trace(kind, tiny_config):
    """A train step traced with the optimizer unbuilt creates its slots inside
    the trace, and tf.function traces it a second time (tens of seconds for
    MiniLM). EncoderModel.fit and SentenceEncoder.fit build them first."""
    from tfbert import BertConfig, BertEncoder, SentenceEncoder
    from tfbert.models.classifier import BertClassifier
    from tfbert.text.preprocessor import BertPreprocessor

    encoder = BertEncoder(tiny_config)
    ids = {"input_word_ids": np.ones((4, 8), np.int32), "input_mask": np.ones((4, 8), np.int32),
           "input_type_ids": np.zeros((4, 8), np.int32)}
    state = _OptimizerState()
    if kind == "classifier":
        model = BertClassifier(encoder, num_classes=2)
        model(ids)
        model.compile(optimizer=create_optimizer(1e-3, num_train_steps=2),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(ids, np.array([0, 1, 0, 1]), batch_size=2, epochs=1, verbose=0,
                  callbacks=[state])
        assert state.built_before_tracing
        return
    vocab = os.path.join(os.path.dirname(__file__), "..", "data", "pretraining", "vocab.txt")
    encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931))
    preprocessor = BertPreprocessor(vocab_file=vocab, seq_length=8)
    model = SentenceEncoder(encoder, preprocessor=preprocessor)
    model.compile(optimizer=keras.optimizers.AdamW(1e-3))
    model.fit((["open a file", "read it"], ["read a file", "open it"]), batch_size=2, epochs=1,
              verbose=0, callbacks=[state])
    assert state.built_before_tracing


def _apply_step(opt, variables):
    return lambda grads: opt.apply(grads, variables)


@pytest.mark.parametrize("mode", ["eager", "graph", "xla"])
def test_fused_adamw_steps_like_keras_adamw(mode):
    """tfbert's AdamW applies each dense update with one ResourceApplyAdam op;
    five steps (warmup schedule, weight decay, clipping that bites) move every
    variable as Keras' own AdamW does."""
    import tensorflow as tf

    from tfbert.train.optimizer import AdamW, WarmupPolynomialDecay

    rng = np.random.default_rng(0)
    shapes = [(7, 5), (5,), (3,)]
    start = [rng.normal(size=s).astype("float32") for s in shapes]
    grads = [[rng.normal(size=s).astype("float32") for s in shapes] for _ in range(5)]
    moved = []
    for cls in (AdamW, keras.optimizers.AdamW):
        variables = [keras.Variable(v, name=n) for v, n in zip(start, ("kernel", "bias", "x"))]
        opt = cls(learning_rate=WarmupPolynomialDecay(0.1, decay_steps=10, warmup_steps=2),
                  weight_decay=0.1, global_clipnorm=1.0, epsilon=1e-6)
        opt.exclude_from_weight_decay(var_names=["bias"])
        opt.build(variables)
        step = _apply_step(opt, variables)
        if mode != "eager":
            step = tf.function(step, jit_compile=mode == "xla")
        for g in grads:
            step([tf.constant(x) for x in g])
        moved.append([v.numpy() for v in variables])
    for ours, theirs, first in zip(*moved, start):
        assert not np.allclose(ours, first)
        # Rounding only: the kernel takes 1 - beta_1 in float32, Keras in float64
        # (2e-6 after five steps of 0.1); a wrong term would be 1e-3 or more.
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_fused_adamw_under_two_replicas(run_python):
    """Under MirroredStrategy each replica's variables get the fused update
    (the slots are mirrored too): equal to Keras' AdamW on one device."""
    out = run_python("""
import numpy as np, tensorflow as tf
tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
from tfbert.train.optimizer import AdamW
rng = np.random.default_rng(0)
start, grads = rng.normal(size=(4, 3)).astype("float32"), rng.normal(size=(3, 4, 3)).astype("float32")
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    var = keras.Variable(start, name="kernel")
    opt = AdamW(learning_rate=0.1, weight_decay=0.1)
    opt.build([var])
@tf.function
def step(g):
    strategy.run(lambda: opt.apply([g / 2.0], [var]))  # each replica half: summed, as one
for g in grads:
    step(tf.constant(g))
ref = keras.Variable(start, name="kernel")
ref_opt = keras.optimizers.AdamW(learning_rate=0.1, weight_decay=0.1)
for g in grads:
    ref_opt.apply([tf.constant(g)], [ref])
print(float(np.abs(var.numpy() - ref.numpy()).max()), float(np.abs(var.numpy() - start).max()))
""")
    diff, moved = map(float, out.split()[-2:])
    assert moved > 0.1 and diff < 1e-5
