"""The callbacks a pretraining run lists, under Keras' steps_per_execution
(the budget recipe's `steps_per_execution: 25`): Keras calls them once per N
steps, with `batch` the last step of the call."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfbert.runs.pretrain import PretrainConfig, updates_per_execution
from tfbert.train import callbacks as cb
from tfbert.train.optimizer import create_optimizer


def linear_data(flip_at=None, steps=600, batch=16):
    """y = x.w + noise, the target's sign flipped from step `flip_at` on."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(steps * batch, 3)).astype("float32")
    w = np.array([[1.0], [-2.0], [0.5]], "float32")
    y = x @ w + rng.normal(size=(steps * batch, 1)).astype("float32")
    if flip_at is not None:
        y[flip_at * batch:] = -(x[flip_at * batch:] @ w) + rng.normal(
            size=((steps - flip_at) * batch, 1)).astype("float32")
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)


def test_loss_spike_warning_under_steps_per_execution(tmp_path):
    # tests/train/test_callbacks.py's spike, with 5 steps per call: the same
    # onset is found and the weights from before it kept.
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse", steps_per_execution=5)
    messages = []
    directory = str(tmp_path / "ckpt")
    spike = cb.LossSpikeWarning(threshold=0.5, checkpoint_dir=directory, log=messages.append)
    saver = cb.PeriodicCheckpoint(directory, every_epochs=1, keep=2)
    model.fit(linear_data(flip_at=400), epochs=12, steps_per_epoch=50, verbose=0,
              callbacks=[saver, spike])
    assert len(spike.spikes) == 1, messages
    step, recent, level = spike.spikes[0]
    assert 400 < step <= 425 and step % 5 == 0 and recent > 1.5 * level
    assert (tmp_path / "ckpt" / "before-spike-00000400.weights.h5").is_file()


def test_loss_spike_warning_recovers_each_calls_mean_loss():
    spike = cb.LossSpikeWarning(threshold=0.5, window=10, recent=2)  # too short to fire
    spike.on_epoch_begin(0)
    # Running epoch means after steps 3 and 6 (calls of 3 steps): losses 1,1,1 then 4,4,4.
    spike.on_train_batch_end(2, {"loss": 1.0})
    spike.on_train_batch_end(5, {"loss": 2.5})
    assert spike._losses == pytest.approx([1.0, 1.0, 1.0, 4.0, 4.0, 4.0])


def budget_model(seconds, steps_per_execution):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    optimizer = create_optimizer(1e-3, num_train_steps=1, budget_seconds=seconds)
    model.compile(optimizer=optimizer, loss="mse", steps_per_execution=steps_per_execution)
    return model, cb.TimeBudget(optimizer.budget_schedule, log=lambda message: None)


def test_time_budget_stops_at_the_end_of_a_call():
    model, budget = budget_model(3.0, steps_per_execution=5)
    model.fit(linear_data(steps=1000).repeat(), epochs=10**6, steps_per_epoch=50,
              verbose=0, callbacks=[budget])
    steps = int(model.optimizer.iterations.numpy())
    assert steps > 5 and steps % 5 == 0  # past the first call, stopped at a call's end
    assert float(budget.schedule.seconds_spent.numpy()) >= 3.0


def test_time_budget_shorter_than_the_first_call_is_an_error():
    model, budget = budget_model(1e-6, steps_per_execution=5)
    with pytest.raises(ValueError, match="shorter than the first training step"):
        model.fit(linear_data(steps=100), epochs=1, steps_per_epoch=50, verbose=0,
                  callbacks=[budget])


def test_updates_per_execution_divides_the_epoch():
    def config(steps_per_epoch, steps_per_execution=1, num_train_steps=1000):
        return PretrainConfig(train={"steps_per_epoch": steps_per_epoch},
                              pretrain={"steps_per_execution": steps_per_execution,
                                        "num_train_steps": num_train_steps})

    assert updates_per_execution(config(500, 25)) == 25
    assert updates_per_execution(config(100, 30)) == 25
    assert updates_per_execution(config(7, 5, num_train_steps=7)) == 1
    assert updates_per_execution(config(100)) == 1
