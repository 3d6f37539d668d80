"""Dev evaluation after every epoch, and keeping the best epoch's weights.

Task metrics such as MCC, Spearman, entity F1, SQuAD EM/F1 or recall@k are
not streaming Keras metrics: they need every dev prediction at once. So a
callback runs a plain function after each epoch, adds its scores to the logs
as `dev_<name>` (CSV, TensorBoard and `ModelCheckpoint` read them there), and
`ModelCheckpoint` keeps the best epoch's weights.

Example:
>>> evaluation = DevEvaluation(lambda: {"accuracy": 0.5}, verbose=0)
>>> logs = {}
>>> evaluation.on_epoch_end(0, logs)
>>> logs
{'dev_accuracy': 0.5}
>>> best_epoch([{"f1": 0.2}, {"f1": float("nan")}, {"f1": 0.7}], "f1")
2
"""

import os
import shutil
import tempfile

import keras
import numpy as np

from tfbert.train import callbacks as train_callbacks
from tfbert.train.multi_worker import is_chief

BEST_WEIGHTS = "best.weights.h5"


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
            logs.update({f"dev_{k}": v for k, v in flat.items()})
        if self.verbose:
            shown = ", ".join(f"{k}={v:.4f}" for k, v in flat.items())
            print(f"epoch {epoch + 1}: dev {shown}", flush=True)


def best_epoch(scores, main_metric):
    """Index of the best epoch by `main_metric`; NaN (e.g. Pearson of constant
    predictions) never counts as the best."""
    values = [s[main_metric] for s in scores]
    return int(np.argmax(np.nan_to_num(np.asarray(values, np.float64), nan=-np.inf)))


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
        evaluation,  # first: the callbacks below read its dev_* logs
        keras.callbacks.ModelCheckpoint(best_path, monitor=f"dev_{main_metric}", mode="max",
                                        save_best_only=True, save_weights_only=True),
    ] + train_callbacks.training_callbacks(model_dir, keep_checkpoints=1,
                                           tensorboard=tensorboard) + list(extra_callbacks)
    try:
        train_callbacks.fit_resumable(model, make_dataset, callbacks, epochs, steps_per_epoch,
                                      verbose=verbose)
        if os.path.isfile(best_path):
            model.load_weights(best_path)
    finally:
        if best_dir != model_dir:
            shutil.rmtree(best_dir, ignore_errors=True)
    return evaluation
