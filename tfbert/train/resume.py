"""Resume and preemption: a training run that is killed or preempted continues
where it stopped.

Scripts train with `fit_resumable(model, make_dataset, ...)`, i.e.
`model.fit(..., epochs=E, steps_per_epoch=K)`; an "epoch" is a chunk of K
steps. A killed run (SIGKILL) that restarts with the same flags continues at
the first unfinished chunk (Keras restores the weights, the optimizer state
and the epoch), so at most K steps are redone. A preempted run (SIGTERM,
what cloud schedulers send first) saves at the step it is on and stops, and
the rerun continues at that step: no step is redone.

The backup lives in `<model_dir>/backup/` (`BACKUP_DIR`);
`tfbert.train.callbacks.training_callbacks` lists the `PreemptibleBackup`
with the other standard callbacks.
"""

import json
import os
import signal
import threading

import keras
import tensorflow as tf

from tfbert.train.multi_worker import WorkerBackupAndRestore, task
from tfbert.train.optimizer import build_before_fit

BACKUP_DIR = "backup"


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
    build_before_fit(model)
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
