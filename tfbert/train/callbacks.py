"""Keras callbacks shared by the training scripts: logs, checkpoints, loss
spikes, the time budget, and the standard set.

`training_callbacks(model_dir)` wires the standard set:

    <model_dir>/backup/        BackupAndRestore state (weights, optimizer, epoch)
    <model_dir>/checkpoints/   periodic `ckpt-<step>.weights.h5` (last N kept)
    <model_dir>/tensorboard/   TensorBoard scalars
    <model_dir>/log.csv        one row per finished epoch (appended on resume)

Resuming a killed or preempted run (`PreemptibleBackup`, `fit_resumable`,
`resume_point`) is `tfbert.train.resume`; its names are importable from here
too.
"""

import glob
import os
import re
import shutil
import time
import warnings

import keras

from tfbert.atomic import atomic_file
from tfbert.train.multi_worker import is_chief
# Re-exported: callers import the resume names from here as well.
from tfbert.train.resume import (BACKUP_DIR, Preempted, PreemptibleBackup,  # noqa: F401
                                 fit_resumable, resume_point)

CHECKPOINT_DIR = "checkpoints"
TENSORBOARD_DIR = "tensorboard"
LOG_FILE = "log.csv"


class PeriodicCheckpoint(keras.callbacks.Callback):
    """Every `every_epochs` epochs, saves `ckpt-<step>.weights.h5` in
    `directory` (step = optimizer iterations) and keeps the newest `keep`.

    `save_fn(model, step)`, if given, runs as well (e.g. to write a tfbert
    checkpoint directory).

    Example:
    >>> cb = PeriodicCheckpoint("/tmp/run/checkpoints", every_epochs=2, keep=3)
    """

    def __init__(self, directory, every_epochs=1, keep=3, save_fn=None):
        super().__init__()
        if every_epochs < 1:
            raise ValueError(f"every_epochs must be >= 1, got {every_epochs}.")
        self.directory = directory
        self.every_epochs = every_epochs
        self.keep = keep
        self.save_fn = save_fn

    def on_epoch_end(self, epoch, logs=None):
        if (epoch + 1) % self.every_epochs:
            return
        step = int(self.model.optimizer.iterations.numpy())
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, f"ckpt-{step:08d}.weights.h5")
        # A killed run never leaves a truncated checkpoint under the final name.
        with atomic_file(path, suffix=".weights.h5") as tmp:
            self.model.save_weights(tmp, overwrite=True)
        if self.save_fn is not None:
            self.save_fn(self.model, step)
        for old in list_checkpoints(self.directory)[: -self.keep or None]:
            os.remove(old)


class LossSpikeWarning(keras.callbacks.Callback):
    """Warns when the training loss jumps well above its recent level.

    The loss of each step is recovered from Keras' running epoch mean. When
    the mean of the last `recent` steps exceeds `(1 + threshold)` times the
    median of the `window` steps before them, it prints one warning (until
    the loss comes back down), records the step in `spikes`, and keeps a copy
    of the newest periodic checkpoint from before the spike as
    `before-spike-<step>.weights.h5` in `checkpoint_dir` (periodic pruning
    never deletes it): `tfbert.runs.pretrain.export_step` (the pretraining tool's
    `--export_step=<step>`) turns it into
    a tfbert checkpoint directory.

    Example:
    >>> cb = LossSpikeWarning(threshold=0.5, checkpoint_dir="/tmp/run/checkpoints")
    """

    def __init__(self, threshold=0.5, window=200, recent=20, checkpoint_dir=None, log=print):
        super().__init__()
        if threshold <= 0 or recent < 1 or window < recent:
            raise ValueError("threshold must be > 0 and window >= recent >= 1.")
        self.threshold = threshold
        self.window = window
        self.recent = recent
        self.checkpoint_dir = checkpoint_dir
        self.log = log
        self.spikes = []  # (step, recent mean, level)
        self._losses = []
        self._previous_mean = 0.0
        self._previous_batch = -1
        self._in_spike = False

    def on_epoch_begin(self, epoch, logs=None):
        self._previous_mean = 0.0
        self._previous_batch = -1

    def on_train_batch_end(self, batch, logs=None):
        if not logs or "loss" not in logs:
            return
        mean = float(logs["loss"])
        # Under steps_per_execution=N Keras calls this once per N steps
        # (`batch` is the last one): each of them gets their mean loss.
        steps = max(batch - self._previous_batch, 1)
        loss = ((batch + 1) * mean - (self._previous_batch + 1) * self._previous_mean) / steps
        self._previous_mean, self._previous_batch = mean, batch
        self._losses = (self._losses + [loss] * steps)[-(self.window + self.recent):]
        if len(self._losses) < self.window + self.recent:
            return
        level = sorted(self._losses[:self.window])[self.window // 2]
        now = sum(self._losses[self.window:]) / self.recent
        if now > (1 + self.threshold) * level and not self._in_spike:
            self._in_spike = True
            step = int(self.model.optimizer.iterations.numpy())
            self.spikes.append((step, now, level))
            # Onset: the start of the run of steps above the bar that ends the
            # window (else its highest step); weights saved before it never
            # saw its batch.
            window = self._losses[self.window:]
            bar = (1 + self.threshold) * level
            first = len(window) - 1 if window[-1] > bar else window.index(max(window))
            while first > 0 and window[first - 1] > bar:
                first -= 1
            kept = self._keep_checkpoint_before(step - self.recent + first)
            where = (f"; weights from before it: {kept} (export with --export_step="
                     f"{_step_of(kept)} makes a tfbert checkpoint of them)" if kept else "")
            self.log(f"Warning: the training loss jumped at step {step}: the last "
                     f"{self.recent} steps average {now:.3f}, against {level:.3f} before"
                     f"{where}.")
        elif now < (1 + self.threshold / 2) * level:
            self._in_spike = False

    def _keep_checkpoint_before(self, step):
        if not self.checkpoint_dir:
            return None
        before = [p for p in list_checkpoints(self.checkpoint_dir) if _step_of(p) <= step]
        if not before:
            return None
        kept = os.path.join(self.checkpoint_dir,
                            f"before-spike-{_step_of(before[-1]):08d}.weights.h5")
        if not os.path.exists(kept):
            with atomic_file(kept, suffix=".weights.h5") as tmp:
                shutil.copyfile(before[-1], tmp)
        return kept


class TimeBudget(keras.callbacks.Callback):
    """Ends training when a time budget is spent, and keeps the clock of the
    learning-rate schedule (`tfbert.train.optimizer.TimeBudgetDecay`).

    The clock is the wall time inside `fit` (compilation, evaluation and
    checkpoint saves count), continued from the schedule's `seconds_spent`
    variable, which the backup restores: a resumed run spends only what is
    left. Before every step the variable is set from the clock, so the
    compiled step reads the schedule's progress; after the step that spends
    the budget (at an optimizer update, under gradient accumulation) training
    stops and the epoch ends as usual (backup, periodic checkpoint). Under
    `steps_per_execution=N` Keras calls the callbacks once per N steps: the
    clock moves and the budget is checked every N steps.
    `learning_rate` (of the epoch's last step) and `budget_seconds_spent` are
    added to each epoch's logs. List it before the backup and loggers, so
    they save and log the clock of the same moment.

    If the first step of a fresh run already spends the budget, a
    `ValueError` says so: the budget is shorter than one step.

    Example:
    >>> from tfbert.train.optimizer import TimeBudgetDecay
    >>> budget = TimeBudget(TimeBudgetDecay(1e-3, budget_seconds=60.0))
    """

    def __init__(self, schedule, log=print):
        super().__init__()
        self.schedule = schedule
        self.log = log
        self.spent_before = None  # the restored clock, read at the first step
        self._fit_start = 0.0
        self._last_step_clock = 0.0
        self._previous_batch = -1

    def seconds_spent(self):
        return self.spent_before + time.monotonic() - self._fit_start

    def on_train_begin(self, logs=None):
        self._fit_start = time.monotonic()
        self.spent_before = None

    def on_train_batch_begin(self, batch, logs=None):
        if self.spent_before is None:  # after every on_train_begin: the backup has restored it
            self.spent_before = float(self.schedule.seconds_spent.numpy())
            if self.spent_before:
                self.log(f"Time budget: {self.spent_before:.1f} s of "
                         f"{self.schedule.budget_seconds:.1f} s spent before this run.")
        self._last_step_clock = self.seconds_spent()
        self.schedule.seconds_spent.assign(self._last_step_clock)

    def on_epoch_begin(self, epoch, logs=None):
        self._previous_batch = -1

    def on_train_batch_end(self, batch, logs=None):
        spent = self.seconds_spent()
        self.schedule.seconds_spent.assign(spent)
        # Keras steps this call ran: 1, or N under steps_per_execution=N.
        ran, self._previous_batch = batch - self._previous_batch, batch
        if spent < self.schedule.budget_seconds:
            return
        optimizer = self.model.optimizer
        micro_steps = int(getattr(optimizer, "_iterations", optimizer.iterations).numpy())
        if micro_steps % self.schedule.steps_per_update:
            return  # mid-accumulation: stop at the update
        # A fresh run whose first update ends in this call (no update before it).
        if not self.spent_before and micro_steps - ran < self.schedule.steps_per_update:
            raise ValueError(
                f"The time budget ({self.schedule.budget_seconds:g} s) is shorter than the "
                f"first training step, which took {spent:.1f} s (compilation included).")
        self.model.stop_training = True

    def on_epoch_end(self, epoch, logs=None):
        spent = self.seconds_spent()
        self.schedule.seconds_spent.assign(spent)
        if spent >= self.schedule.budget_seconds:  # e.g. spent by the epoch's evaluation
            self.model.stop_training = True
        if logs is not None:
            optimizer = self.model.optimizer
            last_step = int(getattr(optimizer, "_iterations", optimizer.iterations).numpy()) - 1
            logs["learning_rate"] = float(self.schedule.rate(last_step, self._last_step_clock))
            logs["budget_seconds_spent"] = spent


def _step_of(path):
    return int(re.search(r"(\d+)\.weights\.h5$", path).group(1))


def find_checkpoint(directory, step):
    """The weights file of `step` in `directory` (periodic or kept before a
    spike); the error lists the steps there are."""
    for name in (f"ckpt-{step:08d}.weights.h5", f"before-spike-{step:08d}.weights.h5"):
        if os.path.isfile(os.path.join(directory, name)):
            return os.path.join(directory, name)
    found = sorted(glob.glob(os.path.join(directory, "*.weights.h5")))
    steps = sorted({_step_of(p) for p in found if re.search(r"\d+\.weights\.h5$", p)})
    raise FileNotFoundError(
        f"No checkpoint of step {step} in {directory}; saved steps: "
        f"{', '.join(map(str, steps)) or 'none'}."
    )


def list_checkpoints(directory):
    """The `ckpt-<step>.weights.h5` files in `directory`, oldest first."""
    found = glob.glob(os.path.join(directory, "ckpt-*.weights.h5"))
    found = [p for p in found if re.fullmatch(r"ckpt-\d+\.weights\.h5", os.path.basename(p))]
    return sorted(found)


def training_callbacks(model_dir, checkpoint_every_epochs=1, keep_checkpoints=3,
                       tensorboard=True, save_fn=None):
    """The standard callbacks for `model.fit` writing under `model_dir`.

    The progress bar is Keras' own (`fit(verbose=1)`), so it is not listed.
    Under MultiWorkerMirroredStrategy only the chief writes logs and
    checkpoints; the other workers get the backup (restore only).

    Example:
    >>> cbs = training_callbacks("/tmp/run", checkpoint_every_epochs=5)
    >>> [type(c).__name__ for c in cbs]
    ['PreemptibleBackup', 'CSVLogger', 'PeriodicCheckpoint', 'TensorBoard']
    """
    os.makedirs(model_dir, exist_ok=True)
    # Every worker restores from the shared backup; only the chief writes it.
    backup = PreemptibleBackup(os.path.join(model_dir, BACKUP_DIR))
    if not is_chief():
        return [backup]
    callbacks = [
        backup,
        keras.callbacks.CSVLogger(os.path.join(model_dir, LOG_FILE), append=True),
        PeriodicCheckpoint(
            os.path.join(model_dir, CHECKPOINT_DIR),
            every_epochs=checkpoint_every_epochs,
            keep=keep_checkpoints,
            save_fn=save_fn,
        ),
    ]
    if tensorboard and not _have_tensorboard():
        warnings.warn("TensorBoard logs skipped: `pip install tensorboard` to write them.")
    elif tensorboard:
        callbacks.append(
            keras.callbacks.TensorBoard(
                os.path.join(model_dir, TENSORBOARD_DIR), write_graph=False
            )
        )
    return callbacks


def _have_tensorboard():
    # TF 2.21 no longer depends on tensorboard; tf.summary needs it to write.
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        return False
    return True
