"""Shared training callbacks: periodic checkpoints, resume epoch, standard set."""

import json

import keras
import numpy as np

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
    assert cb.resume_epoch(model_dir) == 0
    callbacks = cb.training_callbacks(model_dir, checkpoint_every_epochs=1)
    names = [type(c).__name__ for c in callbacks]
    assert names[:3] == ["WorkerBackupAndRestore", "CSVLogger", "PeriodicCheckpoint"]
    assert isinstance(callbacks[0], keras.callbacks.BackupAndRestore)
    model = small_model()
    model.fit(np.ones((4, 3)), np.zeros((4, 1)), epochs=3, verbose=0, callbacks=callbacks)
    assert cb.resume_epoch(model_dir) == 3
    meta = json.loads((tmp_path / "run" / "backup" / "training_metadata.json").read_text())
    assert meta["epoch"] == 3
    rows = (tmp_path / "run" / "log.csv").read_text().strip().split("\n")
    assert [r.split(",")[0] for r in rows[1:]] == ["0", "1", "2"]
    # A finished run rerun with the same callbacks trains no more epochs.
    history = model.fit(np.ones((4, 3)), np.zeros((4, 1)), epochs=3, verbose=0,
                        callbacks=cb.training_callbacks(model_dir))
    assert history.epoch == []
