"""The epoch kept is chosen on validation scores (ties: lower validation
loss), never on the dev scores that are reported; its weights are the ones
loaded at the end."""

import keras
import numpy as np
import tensorflow as tf

from tfbert.train.evaluation import BEST_WEIGHTS, best_epoch, fit_keeping_best, selection_key

# Per epoch: what the task metric says on the validation slice and on dev.
# Epochs 1 and 2 tie on validation accuracy; 2 has the lower loss. Epoch 3
# is the best on dev, which must not matter.
SCORES = [{"validation_accuracy": 0.8, "validation_loss": 0.5, "accuracy": 0.9},
          {"validation_accuracy": 0.8, "validation_loss": 0.3, "accuracy": 0.5},
          {"validation_accuracy": 0.7, "validation_loss": 0.2, "accuracy": 1.0}]


def test_validation_chooses_ties_go_to_lower_loss_dev_never_chooses(tmp_path):
    x = np.linspace(-1, 1, 64, dtype="float32")[:, None]
    y = (x[:, 0] > 0).astype("int32")
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(0.5),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    snapshots = []

    class Snapshot(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            snapshots.append([w.copy() for w in model.get_weights()])

    calls = iter(SCORES)
    make_dataset = lambda skip: tf.data.Dataset.from_tensor_slices((x, y)).batch(16).repeat().skip(
        skip)
    evaluation = fit_keeping_best(model, make_dataset, lambda: next(calls), "accuracy",
                                  str(tmp_path), epochs=3, steps_per_epoch=4, verbose=0,
                                  extra_callbacks=[Snapshot()])
    assert evaluation.scores == SCORES
    assert best_epoch(evaluation.scores, "accuracy") == 1
    for got, want in zip(model.get_weights(), snapshots[1]):
        np.testing.assert_array_equal(got, want)
    assert not np.array_equal(snapshots[1][0], snapshots[2][0])  # training did move on
    assert (tmp_path / BEST_WEIGHTS).is_file()
    # The per-epoch log has both, under their own names.
    log = (tmp_path / "log.csv").read_text().splitlines()
    assert len(log) == 4
    header = log[0].split(",")
    assert "validation_accuracy" in header and "dev_accuracy" in header


def test_without_validation_the_last_epoch_is_kept():
    assert best_epoch([{"accuracy": 0.9}, {"accuracy": 0.1}], "accuracy") == 1
    nan = float("nan")
    assert best_epoch([{"validation_f1": nan}, {"validation_f1": 0.1}], "f1") == 1


def test_a_task_without_a_metric_has_no_selection_key():
    # Feature extraction trains nothing and has no metric (main_metric None).
    assert selection_key({"validation_loss": 0.1}, None) is None
    assert selection_key(SCORES[0], "accuracy") == (0.8, -0.5)

