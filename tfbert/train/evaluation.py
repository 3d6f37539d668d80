"""Evaluation after every epoch, and keeping the best epoch's weights.

Task metrics such as MCC, Spearman, entity F1, SQuAD EM/F1 or recall@k are
not streaming Keras metrics: they need every prediction at once. So a
callback runs a plain function after each epoch and adds its scores to the
logs (CSV and TensorBoard read them there): `validation_<name>` for the
validation data that chooses the epoch, `dev_<name>` for the dev file that is
reported. `KeepBest` saves the weights of the best epoch by the validation
score, ties going to the lower validation loss (`selection_key`); the dev
file never chooses when validation scores exist.

Example:
>>> evaluation = DevEvaluation(lambda: {"accuracy": 0.5, "validation_accuracy": 1.0}, verbose=0)
>>> logs = {}
>>> evaluation.on_epoch_end(0, logs)
>>> logs
{'dev_accuracy': 0.5, 'validation_accuracy': 1.0}
>>> best_epoch([{"validation_f1": 0.2}, {"validation_f1": float("nan")},
...             {"validation_f1": 0.7}, {"validation_f1": 0.5}], "f1")
2
>>> best_epoch([{"validation_f1": 1.0, "validation_loss": 0.3, "f1": 0.9},
...             {"validation_f1": 1.0, "validation_loss": 0.1, "f1": 0.8}], "f1")
1
>>> best_epoch([{"f1": 0.9}, {"f1": 0.5}], "f1")  # no validation data: the last epoch
1
"""

import os
import shutil
import tempfile

import keras
import numpy as np

from tfbert.train import callbacks as train_callbacks
from tfbert.train.resume import fit_resumable
from tfbert.train.multi_worker import is_chief

BEST_WEIGHTS = "best.weights.h5"
VALIDATION = "validation_"  # prefix of the scores that choose the epoch


class DevEvaluation(keras.callbacks.Callback):
    """Calls `evaluate()` -> dict of scores after every epoch; keeps them in `scores`."""

    def __init__(self, evaluate, verbose=1):
        super().__init__()
        self.evaluate = evaluate
        self.verbose = verbose
        self.scores = []

    def on_epoch_end(self, epoch, logs=None):
        if self.model is not None and self.model.stop_training:  # cut short by SIGTERM: not scored
            return
        scores = self.evaluate()
        self.scores.append(scores)
        flat = {k: float(v) for k, v in scores.items() if np.isscalar(v)}
        if logs is not None:
            logs.update({k if k.startswith(VALIDATION) else f"dev_{k}": v
                         for k, v in flat.items()})
        if self.verbose:
            shown = ", ".join(f"{k}={v:.4f}" for k, v in flat.items())
            print(f"epoch {epoch + 1}: dev {shown}", flush=True)


def selection_key(scores, main_metric):
    """What "best" means for one epoch's scores: the validation metric, then
    the lower validation loss; NaN (e.g. Pearson of constant predictions) is
    never best. None without validation scores (the last epoch is kept: the
    dev file that is reported never chooses; nor for a task with no metric,
    feature extraction, which trains nothing)."""
    if main_metric is None or VALIDATION + main_metric not in scores:
        return None
    return (_number(scores[VALIDATION + main_metric]),
            _number(scores.get(VALIDATION + "loss", np.nan), -1.0))


def _number(value, sign=1.0):
    """`sign * value`, NaN as the worst."""
    value = float(value)
    return -np.inf if np.isnan(value) else sign * value


def best_epoch(scores, main_metric):
    """Index of the best epoch by `selection_key` (the first of equals; the
    last epoch without validation scores)."""
    keys = [selection_key(s, main_metric) for s in scores]
    if any(k is None for k in keys):
        return len(scores) - 1
    return max(range(len(keys)), key=lambda i: (keys[i], -i))


class KeepBest(keras.callbacks.Callback):
    """Saves the model's weights to `path` after each epoch whose scores (the
    last of `evaluation.scores`) beat every earlier epoch's by `selection_key`."""

    def __init__(self, path, evaluation, main_metric):
        super().__init__()
        self.path, self.evaluation, self.main_metric = path, evaluation, main_metric
        self.best = None

    def on_epoch_end(self, epoch, logs=None):
        if self.model.stop_training or not self.evaluation.scores:
            return
        key = selection_key(self.evaluation.scores[-1], self.main_metric)
        if key is None or self.best is None or key > self.best:
            self.best = key
            self.model.save_weights(self.path, overwrite=True)


class RestoreBestEpoch(keras.callbacks.Callback):
    """The runner's epoch selection for Keras `fit` (`StringsModel.fit` with
    the recipe and validation data): after each epoch, the weights of the best
    epoch so far by the Keras log `monitor` (`mode` "max" or "min"; ties go
    to the lower `val_loss`, NaN is never best; `val_loss` itself, lower
    better, when the logs lack `monitor`: a model compiled with metrics of
    the user's) are kept in memory, and they are restored when training
    ends. `best_epoch`: 0-based, None before any epoch was validated."""

    def __init__(self, monitor, mode="max"):
        super().__init__()
        self.monitor, self.sign = monitor, 1.0 if mode == "max" else -1.0
        self.best = self.best_epoch = self.best_weights = None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.monitor not in logs:
            if "val_loss" not in logs:
                return
            self.monitor, self.sign = "val_loss", -1.0
        key = (_number(logs[self.monitor], self.sign),
               _number(logs.get("val_loss", np.nan), -1.0))
        if self.best is None or key > self.best:
            self.best, self.best_epoch = key, epoch
            self.best_weights = self.model.get_weights()

    def on_train_end(self, logs=None):
        if self.best_weights is not None:
            self.model.set_weights(self.best_weights)


def fit_keeping_best(model, make_dataset, evaluate, main_metric, model_dir, epochs,
                     steps_per_epoch, verbose=2, tensorboard=False, extra_callbacks=()):
    """`model.fit` with dev evaluation each epoch; the best epoch's weights are
    saved to `<model_dir>/best.weights.h5` and loaded at the end.

    Resumable: `tfbert.train.callbacks.training_callbacks` backs up every
    epoch under `model_dir` (and the current step on SIGTERM, then raises
    `Preempted`); `make_dataset(skip_batches)` builds the training data (see
    `fit_resumable`). Returns the `DevEvaluation` (its `scores` per epoch;
    empty when a finished run was restored and nothing trained).
    """
    evaluation = DevEvaluation(evaluate, verbose=verbose)
    # Multi-worker: the chief keeps the best weights in model_dir; the other
    # workers keep theirs in a temporary directory of their own.
    best_dir = model_dir if is_chief() else tempfile.mkdtemp(prefix="tfbert-worker-")
    best_path = os.path.join(best_dir, BEST_WEIGHTS)
    callbacks = [
        evaluation,  # first: the callbacks below read its scores
        KeepBest(best_path, evaluation, main_metric),
    ] + train_callbacks.training_callbacks(model_dir, keep_checkpoints=1,
                                           tensorboard=tensorboard) + list(extra_callbacks)
    try:
        fit_resumable(model, make_dataset, callbacks, epochs, steps_per_epoch, verbose=verbose)
        if os.path.isfile(best_path):
            model.load_weights(best_path)
    finally:
        if best_dir != model_dir:
            shutil.rmtree(best_dir, ignore_errors=True)
    return evaluation
