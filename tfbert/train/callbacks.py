"""Keras callbacks shared by the training scripts: resume, logs, checkpoints.

`training_callbacks(model_dir)` wires the standard set:

    <model_dir>/backup/        BackupAndRestore state (weights, optimizer, epoch)
    <model_dir>/checkpoints/   periodic `ckpt-<step>.weights.h5` (last N kept)
    <model_dir>/tensorboard/   TensorBoard scalars
    <model_dir>/log.csv        one row per finished epoch (appended on resume)

Scripts train with `fit_resumable(model, make_dataset, ...)`, i.e.
`model.fit(..., epochs=E, steps_per_epoch=K)`; an "epoch" is a chunk of K
steps. A killed run (SIGKILL) that restarts with the same flags continues at
the first unfinished chunk (Keras restores the weights, the optimizer state
and the epoch), so at most K steps are redone. A preempted run (SIGTERM,
what cloud schedulers send first) saves at the step it is on and stops, and
the rerun continues at that step: no step is redone.
"""

import glob
import json
import os
import re
import shutil
import signal
import threading
import time
import warnings

import keras
import tensorflow as tf

from tfbert.atomic import atomic_file
from tfbert.train.multi_worker import WorkerBackupAndRestore, is_chief, task

BACKUP_DIR = "backup"
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
    never deletes it): `tfbert.tasks.pretrain_experiment.export_step` (the pretraining tool's
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
        self._in_spike = False

    def on_epoch_begin(self, epoch, logs=None):
        self._previous_mean = 0.0

    def on_train_batch_end(self, batch, logs=None):
        if not logs or "loss" not in logs:
            return
        mean = float(logs["loss"])
        loss = (batch + 1) * mean - batch * self._previous_mean
        self._previous_mean = mean
        self._losses = (self._losses + [loss])[-(self.window + self.recent):]
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
    stops and the epoch ends as usual (backup, periodic checkpoint).
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

    def on_train_batch_end(self, batch, logs=None):
        spent = self.seconds_spent()
        self.schedule.seconds_spent.assign(spent)
        if spent < self.schedule.budget_seconds:
            return
        optimizer = self.model.optimizer
        micro_steps = int(getattr(optimizer, "_iterations", optimizer.iterations).numpy())
        if micro_steps % self.schedule.steps_per_update:
            return  # mid-accumulation: stop at the update
        if not self.spent_before and micro_steps == self.schedule.steps_per_update:
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


def resume_point(model_dir):
    """`(epoch, batch)` where the backup in `model_dir` resumes: `(0, 0)` for
    a fresh run, `(e, 0)` after epoch e-1 finished, `(e, b)` when a SIGTERM
    stopped epoch e after b of its steps.

    Read before `fit` so the input pipeline can skip the batches that the
    finished steps already consumed (no example is seen twice or skipped).
    """
    path = os.path.join(model_dir, BACKUP_DIR, "training_metadata.json")
    if not os.path.isfile(path):
        return 0, 0
    with open(path, encoding="utf-8") as f:
        meta = json.load(f)
    return int(meta["epoch"]), int(meta.get("batch") or 0)


class Preempted(Exception):
    """Training stopped on SIGTERM after saving its state; rerun the same
    command to continue at the saved step."""


class PreemptibleBackup(WorkerBackupAndRestore):
    """`BackupAndRestore` at every epoch end, and at the current step on
    SIGTERM (what cloud schedulers send before preempting a machine): the
    running step finishes, the backup records `(epoch, batch)`, training
    stops (`preempted` is True) and `fit_resumable` continues at that step.

    Under multi-worker training every worker asks after each step whether any
    worker got the signal (one scalar all-reduce), so all stop at the same
    step and the chief writes the backup. TensorFlow's
    `PreemptionCheckpointHandler` does this for custom loops with
    `tf.train.Checkpoint`; Keras `fit` and its `.weights.h5` backup need this
    callback instead.

    Example:
    >>> backup = PreemptibleBackup("/tmp/run/backup")
    >>> backup.preempted
    False
    """

    def __init__(self, backup_dir):
        # delete_checkpoint=False: rerunning a finished run is a no-op
        # instead of a silent restart from scratch.
        super().__init__(backup_dir, save_freq="epoch", double_checkpoint=True,
                         delete_checkpoint=False)
        self.preempted = False
        self.batch_offset = 0  # steps of this epoch done before this fit (a resumed cut epoch)
        self._signalled = False
        self._epoch = 0
        self._previous_handler = None
        self._any_worker = None

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        self.preempted = self._signalled = False
        # Python runs signal handlers in the main thread only, between steps.
        if threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGTERM, self._on_sigterm)

    def _on_sigterm(self, signum, frame):
        self._signalled = True  # acted on when the running step ends
        print("SIGTERM: saving at the end of this step, then stopping.", flush=True)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.preempted or not self._stop_requested():
            return
        self.preempted = True
        if batch + 1 >= self.params.get("steps", 0):
            return  # the epoch's last step: its own epoch-end backup follows
        self._current_epoch = self._epoch
        self._last_batch_seen = self.batch_offset + batch + 1
        self._save_model()
        self.model.stop_training = True

    def on_epoch_end(self, epoch, logs=None):
        if self.preempted and self.model.stop_training:
            return  # Keras ends a cut epoch like a full one; its backup is the step's
        super().on_epoch_end(epoch, logs)
        if self.preempted:
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self._previous_handler is not None:
            signal.signal(signal.SIGTERM, self._previous_handler)
            self._previous_handler = None
        super().on_train_end(logs)

    def _stop_requested(self):
        if task()[0] is None:  # one process: its own signal decides
            return self._signalled
        if self._any_worker is None:
            strategy = self.model.distribute_strategy

            @tf.function
            def any_worker(flag):
                total = strategy.reduce("SUM", strategy.run(lambda f: f, args=(flag,)), axis=None)
                return total > 0

            self._any_worker = any_worker
        return bool(self._any_worker(tf.constant(float(self._signalled))))


def fit_resumable(model, make_dataset, callbacks, epochs, steps_per_epoch, **fit_kwargs):
    """`model.fit` in chunks of `steps_per_epoch` steps that continues where
    the backup among `callbacks` (a `PreemptibleBackup`) says: a cut epoch
    first finishes its remaining steps, then the rest runs as usual.

    `make_dataset(skip_batches)` builds the training data from scratch
    without its first `skip_batches` batches (a deterministic order for a
    seed: the resumed stream equals the uninterrupted one). Returns a Keras
    `History` of the epochs run now; raises `Preempted` after a SIGTERM save.
    """
    backup = next(c for c in callbacks if isinstance(c, PreemptibleBackup))
    epoch, batch = resume_point(os.path.dirname(backup.backup_dir))
    history = keras.callbacks.History()
    history.epoch, history.history = [], {}
    fit_kwargs.setdefault("shuffle", False)  # the tf.data pipeline shuffles; Keras would only warn
    chunks = []
    if batch:  # a cut epoch: its remaining steps first
        chunks.append((epoch, epoch + 1, batch))
        epoch += 1
    if epoch < epochs or not chunks:  # (a finished run still restores its weights)
        chunks.append((epoch, max(epoch, epochs), 0))
    for first, end, done in chunks:
        backup.batch_offset = done
        h = model.fit(make_dataset(first * steps_per_epoch + done), initial_epoch=first,
                      epochs=end, steps_per_epoch=steps_per_epoch - done, callbacks=callbacks,
                      **fit_kwargs)
        backup.batch_offset = 0
        history.epoch += h.epoch
        for key, values in h.history.items():
            history.history.setdefault(key, []).extend(values)
        # Keras steps (micro-batches under gradient accumulation, where
        # `iterations` counts updates).
        # .numpy(): under MirroredStrategy the counter is a MirroredVariable, which int() refuses.
        done_steps = int(getattr(model.optimizer, "_iterations",
                                 model.optimizer.iterations).numpy())
        if backup.preempted and done_steps < epochs * steps_per_epoch:
            raise Preempted(f"preempted (SIGTERM) at step "
                            f"{int(model.optimizer.iterations.numpy())}; state saved in "
                            f"{backup.backup_dir}. Rerun the same command to continue there.")
    return history


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
