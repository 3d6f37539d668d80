"""Keras 3 `fit` under `MultiWorkerMirroredStrategy`, and who writes files.

Keras 3.15's TensorFlow trainer fails twice under MultiWorkerMirroredStrategy:
1. `fit` builds the model symbolically from a first batch by *reducing* the
   per-replica batch across workers (`strategy.reduce("MEAN", batch)`), which
   cannot convert a `PerReplica` to a tensor. Any one replica's batch has the
   right shapes, so we take the local one.
2. Metric results are reduced with `strategy.reduce("MEAN", v, axis=0)`, which
   fails on scalars (rank 0 has no axis 0). Scalars are reduced with
   `axis=None` (the mean over replicas); other values keep Keras' rule.

`patch_keras_fit()` installs both fixes (idempotent); `get_strategy(
"multi_worker_mirrored")` calls it, and users with their own `fit` code call it
once before `fit`. Everything else (gradient all-reduce, optimizer, callbacks)
is Keras' own.
"""

import json
import os

import keras
import tensorflow as tf
from keras.src.backend.tensorflow import trainer as tf_trainer

_PATCHED = {}


def patch_keras_fit():
    """Makes `model.fit` / `evaluate` work under MultiWorkerMirroredStrategy."""
    if _PATCHED:
        return
    original_build = tf_trainer.TensorFlowTrainer._maybe_symbolic_build
    original_reduce = tf_trainer.reduce_per_replica

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        if iterator is not None and self._distribute_strategy is not None:
            for _, _, it in iterator:
                batch = next(it)
                strategy = self.distribute_strategy
                data_batch = tf.nest.map_structure(
                    lambda x: strategy.experimental_local_results(x)[0]
                    if isinstance(x, tf.distribute.DistributedValues) else x,
                    batch,
                )
                break
            with self.distribute_strategy.scope():
                self._symbolic_build(data_batch=data_batch)
            return
        return original_build(self, iterator=iterator, data_batch=data_batch)

    def reduce_per_replica(values, strategy, reduction):
        if reduction in ("auto", "mean") and tf_trainer._collective_all_reduce_multi_worker(
            strategy
        ):
            def reduce_one(v):
                if v.shape.rank == 0:
                    return strategy.reduce("MEAN", v, axis=None)
                return original_reduce(v, strategy, reduction)

            return tf.nest.map_structure(reduce_one, values)
        return original_reduce(values, strategy, reduction)

    tf_trainer.TensorFlowTrainer._maybe_symbolic_build = _maybe_symbolic_build
    tf_trainer.reduce_per_replica = reduce_per_replica
    _PATCHED.update(build=original_build, reduce=original_reduce)


def task():
    """`(task_type, task_index)` from `TF_CONFIG`, or `(None, 0)` without one."""
    config = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
    info = config.get("task", {})
    return info.get("type"), int(info.get("index", 0))


def is_chief():
    """True for the worker that writes checkpoints and logs: the `chief` task,
    else worker 0 (TF's convention), and any single-process run."""
    config = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
    task_type, index = task()
    if task_type is None or task_type == "chief":
        return True
    has_chief = "chief" in config.get("cluster", {})
    return task_type == "worker" and index == 0 and not has_chief


def with_auto_shard(dataset, policy="DATA"):
    """Sets the dataset's auto-shard policy explicitly: `DATA` (every worker
    reads all files and keeps every N-th element; works for any source) or
    `FILE` (each worker reads its own files; needs >= one file per worker)."""
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = getattr(
        tf.data.experimental.AutoShardPolicy, policy
    )
    return dataset.with_options(options)


class WorkerBackupAndRestore(keras.callbacks.BackupAndRestore):
    """`BackupAndRestore` for multi-worker runs: every worker restores from
    the shared `backup_dir` (all replicas must resume from the same state),
    only the chief writes it, so the backup is written once and workers never
    race on one file."""

    def _save_model(self):
        if is_chief():
            super()._save_model()

    def on_train_end(self, logs=None):
        if is_chief():
            super().on_train_end(logs)
