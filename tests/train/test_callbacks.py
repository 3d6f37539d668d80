"""Shared training callbacks: periodic checkpoints, resume epoch, standard set,
loss spikes. SIGTERM and resume: tests/train/test_resume.py."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfbert.train import callbacks as cb


def small_model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def test_periodic_checkpoint_names_by_step_and_keeps_the_newest(tmp_path):
    model = small_model()
    x, y = np.ones((8, 3)), np.zeros((8, 1))
    saver = cb.PeriodicCheckpoint(str(tmp_path / "ckpt"), every_epochs=2, keep=2)
    model.fit(x, y, batch_size=4, epochs=8, verbose=0, callbacks=[saver])  # 2 steps/epoch
    names = [p.split("/")[-1] for p in cb.list_checkpoints(str(tmp_path / "ckpt"))]
    assert names == ["ckpt-00000012.weights.h5", "ckpt-00000016.weights.h5"]
    restored = small_model()
    restored.load_weights(str(tmp_path / "ckpt" / names[-1]))
    np.testing.assert_allclose(restored.get_weights()[0], model.get_weights()[0])


def test_standard_set_and_resume_epoch(tmp_path):
    model_dir = str(tmp_path / "run")
    assert cb.resume_point(model_dir) == (0, 0)
    callbacks = cb.training_callbacks(model_dir, checkpoint_every_epochs=1)
    names = [type(c).__name__ for c in callbacks]
    assert names[:3] == ["PreemptibleBackup", "CSVLogger", "PeriodicCheckpoint"]
    assert isinstance(callbacks[0], keras.callbacks.BackupAndRestore)
    model = small_model()
    model.fit(np.ones((4, 3)), np.zeros((4, 1)), epochs=3, verbose=0, callbacks=callbacks)
    assert cb.resume_point(model_dir) == (3, 0)
    meta = json.loads((tmp_path / "run" / "backup" / "training_metadata.json").read_text())
    assert meta["epoch"] == 3
    rows = (tmp_path / "run" / "log.csv").read_text().strip().split("\n")
    assert [r.split(",")[0] for r in rows[1:]] == ["0", "1", "2"]
    # A finished run rerun with the same callbacks trains no more epochs.
    history = model.fit(np.ones((4, 3)), np.zeros((4, 1)), epochs=3, verbose=0,
                        callbacks=cb.training_callbacks(model_dir))
    assert history.epoch == []


def test_loss_spike_warning_keeps_the_weights_from_before_the_jump(tmp_path):
    # A real fit whose targets flip sign at step 400: the loss jumps from the
    # noise floor (~1) to several times it. Noisy targets keep the floor
    # steady, so the steps before the flip raise no false alarm.
    rng = np.random.default_rng(0)
    x = rng.normal(size=(600 * 16, 3)).astype("float32")
    w = np.array([[1.0], [-2.0], [0.5]], "float32")
    y = x @ w + rng.normal(size=(600 * 16, 1)).astype("float32")
    y[400 * 16:] = -(x[400 * 16:] @ w) + rng.normal(size=(200 * 16, 1)).astype("float32")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    messages = []
    directory = str(tmp_path / "ckpt")
    spike = cb.LossSpikeWarning(threshold=0.5, checkpoint_dir=directory, log=messages.append)
    saver = cb.PeriodicCheckpoint(directory, every_epochs=1, keep=2)
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)  # 600 steps in 12 epochs of 50
    model.fit(data, epochs=12, steps_per_epoch=50, verbose=0, callbacks=[saver, spike])
    assert len(spike.spikes) == 1, messages
    step, recent, level = spike.spikes[0]
    assert 400 < step <= 420 and recent > 1.5 * level
    assert "jumped at step" in messages[0] and "--export_step=400" in messages[0]
    kept = tmp_path / "ckpt" / "before-spike-00000400.weights.h5"
    assert kept.is_file()  # pruning (keep=2) removed ckpt-400, not the kept copy
    assert not (tmp_path / "ckpt" / "ckpt-00000400.weights.h5").exists()
    assert cb.find_checkpoint(directory, 400) == str(kept)
    restored = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    restored.load_weights(str(kept))
    assert np.abs(restored.get_weights()[0] - w).max() < 0.3  # fitted the first target
    with pytest.raises(FileNotFoundError, match="saved steps: 400, 550, 600"):
        cb.find_checkpoint(directory, 123)
