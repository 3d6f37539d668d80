"""`finetune`: trains any task (BERT paper recipe), keeps the best dev checkpoint, exports.

The recipe: AdamW with linear warmup over 10% of the steps and linear decay
to 0, batch 16/32, learning rate 5e-5/3e-5/2e-5, 2-4 epochs; `model.fit`
with XLA; the task metric on the dev file after every epoch; the best
epoch's weights are kept (`<model_dir>/best.weights.h5`) and exported.

Example:
>>> task = ClassificationTask(ClassificationConfig(train_file=..., dev_file=...))  # doctest: +SKIP
>>> result = finetune(task, TrainConfig(epochs=3), "/tmp/sst2",
...                   init_checkpoint="checkpoints/minilm")  # doctest: +SKIP
>>> result.best_score, result.export_dir  # doctest: +SKIP
"""

import dataclasses
import math
import os
import tempfile
import time
from typing import Optional

import keras
import numpy as np
import tensorflow as tf

from tfbert import checkpoint
from tfbert.config import BertConfig
from tfbert.encoder import BertEncoder
from tfbert.text.preprocessor import BertPreprocessor
from tfbert.train import callbacks as train_callbacks
from tfbert.train.optimizer import create_optimizer
from tfbert.train.multi_worker import is_chief, with_auto_shard
from tfbert.train.strategy import xla_supported

BEST_WEIGHTS = "best.weights.h5"


@dataclasses.dataclass
class TrainConfig:
    """The `train:` section of a finetune YAML (BERT paper defaults)."""

    batch_size: int = 32
    eval_batch_size: int = 64
    learning_rate: float = 5e-5
    epochs: int = 3
    steps_per_epoch: Optional[int] = None  # default: one pass over the training file
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    optimizer_type: str = "adamw"
    clipnorm: float = 1.0
    seed: int = 42
    jit_compile: bool = True
    tensorboard: bool = False
    verbose: int = 2
    # Frozen-encoder mode (classification/regression): features of the
    # chosen layers are computed once, then only a dense head is trained.
    frozen_encoder: bool = False
    frozen_layers: tuple = (-4, -3, -2, -1)
    frozen_combine: str = "concat"
    frozen_pooling: str = "mean"
    head_learning_rate: float = 1e-3
    head_epochs: int = 30


@dataclasses.dataclass
class FinetuneResult:
    task: object  # the prepared task (label list, preprocessor): `task.export(model, dir)`
    model: object
    dev_scores: list  # one dict of task metrics per epoch
    best_epoch: int
    best_score: float
    main_metric: str
    seconds: float
    export_dir: Optional[str] = None


class DevEvaluation(keras.callbacks.Callback):
    """After each epoch: the task metrics on the dev file, added to the logs
    as `dev_<name>` (so `ModelCheckpoint`, CSV and TensorBoard see them).

    Written by hand because GLUE/seqeval metrics (MCC, Spearman, entity F1)
    are not streaming Keras metrics; `model.predict` gives all outputs at once.
    """

    def __init__(self, task, dev_inputs, reference, verbose=1):
        super().__init__()
        self.task = task
        self.dev_inputs = dev_inputs
        self.reference = reference
        self.verbose = verbose
        self.scores = []

    def on_epoch_end(self, epoch, logs=None):
        predictions = self.model.predict(self.dev_inputs, verbose=0)
        scores = self.task.score(predictions, self.reference)
        self.scores.append(scores)
        flat = {k: float(v) for k, v in scores.items() if np.isscalar(v)}
        if logs is not None:
            logs.update({f"dev_{k}": v for k, v in flat.items()})
        if self.verbose:
            shown = ", ".join(f"{k}={v:.4f}" for k, v in flat.items())
            print(f"epoch {epoch + 1}: dev {shown}", flush=True)


def build_encoder_and_preprocessor(init_checkpoint=None, encoder_config=None, vocab_file=None,
                                   lower_case=True, seq_length=128):
    """From a tfbert checkpoint dir (pretrained), or a config + vocab (random init)."""
    if init_checkpoint:
        ckpt = checkpoint.read_checkpoint(init_checkpoint)
        encoder = BertEncoder(ckpt.config)
        encoder.set_named_weights(ckpt.encoder_weights(), source=ckpt.weights_path)
        preprocessor = BertPreprocessor.from_pretrained(init_checkpoint, seq_length=seq_length)
        return encoder, preprocessor
    if encoder_config is None or not vocab_file:
        raise ValueError("finetune needs init_checkpoint, or encoder_config and vocab_file "
                         "for a randomly initialised encoder.")
    if isinstance(encoder_config, str):
        encoder_config = BertConfig.from_preset(encoder_config)
    encoder = BertEncoder(encoder_config)
    preprocessor = BertPreprocessor(vocab_file=vocab_file, lower_case=lower_case,
                                    seq_length=seq_length,
                                    max_seq_length=encoder_config.max_position_embeddings)
    return encoder, preprocessor


def use_xla(train, strategy):
    """`train.jit_compile`, except where the strategy rules XLA out
    (`tfbert.train.strategy.xla_supported`)."""
    if train.jit_compile and not xla_supported(strategy):
        print("finetune: XLA is off for a multi-replica strategy on CPU devices.", flush=True)
        return False
    return train.jit_compile


def finetune(task, train, model_dir, init_checkpoint=None, encoder_config=None, vocab_file=None,
             lower_case=True, strategy=None, export_dir=None):
    """Fine-tunes `task` and returns a `FinetuneResult` (best weights loaded).

    `export_dir`: where to write the end-to-end SavedModel (None: no export).
    """
    if isinstance(train, dict):
        train = TrainConfig(**train)
    strategy = strategy or tf.distribute.get_strategy()
    train = dataclasses.replace(train, jit_compile=use_xla(train, strategy))
    keras.utils.set_random_seed(train.seed)
    os.makedirs(model_dir, exist_ok=True)
    start = time.perf_counter()

    with strategy.scope():
        encoder, preprocessor = build_encoder_and_preprocessor(
            init_checkpoint, encoder_config, vocab_file, lower_case, task.config.seq_length)
    task.prepare(preprocessor)
    dev_inputs, reference = task.eval_data(task.config.dev_file, train.eval_batch_size)

    if train.frozen_encoder:
        from tfbert.tasks.feature_extraction import train_frozen_head

        model, evaluation = train_frozen_head(task, encoder, train, dev_inputs, reference,
                                              model_dir, strategy)
    else:
        model, evaluation = _train_full(task, encoder, train, dev_inputs, reference,
                                        model_dir, strategy)

    if not evaluation.scores:  # a finished run restored by BackupAndRestore: nothing trained
        evaluation.scores.append(task.score(model.predict(dev_inputs, verbose=0), reference))
    scores = [s[task.main_metric] for s in evaluation.scores]
    # NaN (e.g. Pearson of constant predictions) never counts as the best epoch.
    best = int(np.argmax(np.nan_to_num(scores, nan=-np.inf)))
    result = FinetuneResult(task=task, model=model, dev_scores=evaluation.scores, best_epoch=best + 1,
                            best_score=float(scores[best]), main_metric=task.main_metric,
                            seconds=time.perf_counter() - start)
    if export_dir:
        result.export_dir = task.export(model, export_dir)
    return result


def _train_full(task, encoder, train, dev_inputs, reference, model_dir, strategy):
    n = task.num_examples(task.config.train_file)
    steps = train.steps_per_epoch or max(1, n // train.batch_size)
    total = steps * train.epochs
    train_ds = with_auto_shard(task.dataset(task.config.train_file, train.batch_size,
                                            training=True, seed=train.seed))
    with strategy.scope():
        model = task.build_model(encoder)
        optimizer = create_optimizer(
            train.learning_rate, num_train_steps=total,
            num_warmup_steps=int(train.warmup_fraction * total),
            optimizer_type=train.optimizer_type, weight_decay=train.weight_decay,
            clipnorm=train.clipnorm)
        model.compile(optimizer=optimizer, loss=task.loss(), weighted_metrics=task.metrics(),
                      jit_compile=train.jit_compile)
    evaluation = DevEvaluation(task, dev_inputs, reference, verbose=train.verbose)
    # Multi-worker: the chief keeps the best weights in model_dir; the other
    # workers keep theirs in a temporary directory of their own.
    best_dir = model_dir if is_chief() else tempfile.mkdtemp(prefix="tfbert-worker-")
    best_path = os.path.join(best_dir, BEST_WEIGHTS)
    callbacks = [
        evaluation,  # first: the callbacks below read its dev_* logs
        keras.callbacks.ModelCheckpoint(best_path, monitor=f"dev_{task.main_metric}",
                                        mode="max", save_best_only=True,
                                        save_weights_only=True),
    ] + train_callbacks.training_callbacks(model_dir, keep_checkpoints=1,
                                           tensorboard=train.tensorboard)
    model.fit(train_ds, epochs=train.epochs, steps_per_epoch=steps, callbacks=callbacks,
              verbose=train.verbose)
    if os.path.isfile(best_path):
        model.load_weights(best_path)
    return model, evaluation
