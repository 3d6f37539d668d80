"""`finetune`: trains any task, keeps the best epoch chosen on validation data, exports.

The recipe (`TrainConfig`, `tfbert.train.recipe`): AdamW with linear warmup
over 10% of the steps and linear decay to 0; learning rate, batch size and
epochs by model and data size unless set; `model.fit` with XLA. After every
epoch the task metric is computed on validation data (`train.validation_file`,
or by default a held-out 10% of the training file, written to
`<model_dir>/validation_split/`, when that is at least 50 examples) and on the
dev file. The validation score
chooses the epoch (ties: lower validation loss); the dev file is only
reported. The chosen epoch's weights are kept (`<model_dir>/best.weights.h5`)
and exported. The training loop is `tfbert.train.trainer.fit_task`, reached
through `Task.fit` (overridden only by a task with another training scheme).

Example (a tiny random encoder, two short epochs; use `init_checkpoint=`
for pretrained weights):
>>> import tempfile
>>> from tfbert.tasks.classification import ClassificationTask
>>> task = ClassificationTask({"train_file": "tests/data/finetune/sentiment_train.tsv",
...                            "dev_file": "tests/data/finetune/sentiment_dev.tsv",
...                            "seq_length": 16})
>>> result = finetune(task, TrainConfig(epochs=2, steps_per_epoch=3, batch_size=8,
...                                     jit_compile=False, verbose=0), tempfile.mkdtemp(),
...                   encoder_config=BertConfig.from_preset("tiny", vocab_size=1931),
...                   vocab_file="tests/data/pretraining/vocab.txt")
>>> result.main_metric, len(result.dev_scores), sorted(result.dev_scores[0])[:3]
('accuracy', 2, ['accuracy', 'f1', 'mcc'])
>>> result.selected_on  # 160 sentences: too few to hold out a useful slice
'none (10% of 160 examples is 16, fewer than 50: too few to choose on): the whole training file trains and the last epoch is kept'
>>> result.best_epoch
2
"""

import dataclasses
import os
import time
from typing import Optional

import keras
import tensorflow as tf

from tfbert import checkpoint
from tfbert.config import BertConfig
from tfbert.data.batching import steps_per_epoch
from tfbert.data.validation_split import TooSmallToSplit
from tfbert.encoder import BertEncoder
from tfbert.text.preprocessor import BertPreprocessor
from tfbert.train import recipe
from tfbert.train.evaluation import BEST_WEIGHTS  # noqa: F401  (re-exported)
from tfbert.train.strategy import xla_supported
from tfbert.train.train_config import TrainConfig


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
    dev: object = None  # `task.eval_data(dev_file)`, for `task.write_predictions`
    summary: dict = None  # data and the resolved recipe (`training_summary`)
    selected_on: str = ""  # which data chose `best_epoch`


def build_encoder_and_preprocessor(init_checkpoint=None, encoder_config=None, vocab_file=None,
                                   lower_case=True, seq_length=128):
    """From a tfbert checkpoint dir (pretrained), or a config + vocab (random init)."""
    if init_checkpoint:
        ckpt = checkpoint.read_checkpoint(init_checkpoint)
        encoder = BertEncoder.from_checkpoint(ckpt)
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


def training_summary(task, train, encoder_config):
    """`(train with the recipe resolved, summary dict)`: what a user should
    see before training starts (examples, labels, steps, warmup, truncation,
    and how the learning rate and epochs were chosen)."""
    train_file = getattr(task.config, "train_file", "")
    n = task.num_examples(train_file) if train_file else 0
    train, notes = recipe.resolve(train, n, encoder_config, task.min_train_steps)
    steps = train.steps_per_epoch or steps_per_epoch(n, train.batch_size)
    total = steps * train.epochs
    summary = {**task.summary(), "train_examples": n,
               "seq_length": getattr(task.config, "seq_length", None),
               "batch_size": train.batch_size, "steps_per_epoch": steps,
               "total_steps": total, "warmup_steps": int(train.warmup_ratio * total),
               "learning_rate": train.learning_rate, "epochs": train.epochs,
               "recipe": notes, "dtype_policy": train.dtype_policy or "float32"}
    if train.lora_rank:
        summary["lora"] = (f"rank {train.lora_rank} on {', '.join(train.lora_targets)}; "
                           "encoder frozen, adapters and head train")
    if train.gradient_accumulation_steps > 1:
        summary["micro_batch_size"] = (f"{train.micro_batch_size} ({train.batch_size} per update "
                                       f"= {train.gradient_accumulation_steps} accumulated "
                                       "micro-batches)")
    return train, summary


def format_summary(summary):
    lines = ["Fine-tuning summary:"]
    for key, value in summary.items():
        if key == "recipe":
            continue
        lines.append(f"  {key:<16} {summary['recipe'].get(key, value)}")
    return "\n".join(lines)


def finetune(task, train, model_dir, init_checkpoint=None, encoder_config=None, vocab_file=None,
             lower_case=True, strategy=None, export_dir=None, export_jit_compile=False):
    """Fine-tunes `task` (any `tfbert.tasks.base.Task`) and returns a
    `FinetuneResult` (best weights loaded).

    `export_dir`: where to write the end-to-end SavedModel (None: no export).
    `export_jit_compile`: `task.export(..., jit_compile=True)` (XLA serving;
    TF Serving needs `--xla_cpu_compilation_enabled=true`).
    """
    if isinstance(train, dict):
        train = TrainConfig(**train)
    strategy = strategy or tf.distribute.get_strategy()
    train = dataclasses.replace(train, jit_compile=use_xla(train, strategy))
    keras.utils.set_random_seed(train.seed)
    previous_policy = keras.config.dtype_policy()
    if train.dtype_policy:
        keras.config.set_dtype_policy(train.dtype_policy)
    try:
        return _finetune(task, train, model_dir, init_checkpoint, encoder_config, vocab_file,
                         lower_case, strategy, export_dir, export_jit_compile)
    finally:  # the policy is the run's, not the process's
        keras.config.set_dtype_policy(previous_policy)


def choose_validation(task, train, model_dir):
    """`(validation file or None, what chose the epoch)`. Without
    `train.validation_file`, `train.validation_fraction` of the training file
    is held out (`task.split_validation`) and the task trains on the rest."""
    if train.validation_file:
        return train.validation_file, f"validation: {train.validation_file}"
    train_file = getattr(task.config, "train_file", "")
    if train.validation_fraction == 0 or not train_file:
        return None, "none (train.validation_fraction=0): the last epoch is kept"
    try:
        split = task.split_validation(train_file, os.path.join(model_dir, "validation_split"),
                                      train.validation_fraction, train.seed)
    except TooSmallToSplit as e:
        return None, (f"none ({e}: too few to choose on): the whole training file trains and "
                      "the last epoch is kept")
    if split is None:
        return None, f"none ({task.name} cannot hold out data): the last epoch is kept"
    train_part, validation = split
    held = task.num_examples(validation)
    task.config = dataclasses.replace(task.config, train_file=train_part)
    return validation, (f"validation: {train.validation_fraction:.0%} of the training file "
                        f"held out ({held} examples)")


def _finetune(task, train, model_dir, init_checkpoint, encoder_config, vocab_file, lower_case,
              strategy, export_dir, export_jit_compile=False):
    os.makedirs(model_dir, exist_ok=True)
    start = time.perf_counter()

    with strategy.scope():
        encoder, preprocessor = build_encoder_and_preprocessor(
            init_checkpoint, encoder_config, vocab_file, lower_case, task.config.seq_length)
    task.prepare(preprocessor)  # labels from the whole training file
    validation, selected_on = choose_validation(task, train, model_dir)
    train, summary = training_summary(task, train, encoder.config)
    summary["selected_on"] = selected_on
    if train.verbose:
        print(format_summary(summary), flush=True)
    dev = task.eval_data(getattr(task.config, "dev_file", ""), train.eval_batch_size)
    model, scores = task.fit(encoder, train, model_dir, strategy, dev, validation=validation)
    summary["trainable_params"] = int(sum(w.numpy().size for w in model.trainable_weights))
    if train.lora_rank:  # the adapters and head alone (tfbert.train.lora.load_adapters)
        from tfbert.atomic import write_bytes
        from tfbert.train.lora import adapters_npz

        summary["lora_adapters"] = os.path.join(model_dir, "lora_adapters.npz")
        write_bytes(summary["lora_adapters"], adapters_npz(model))
    if not scores:  # a finished run restored by BackupAndRestore: nothing trained
        scores = [task.evaluate(model, dev)]
    best = task.best_epoch(scores)
    result = FinetuneResult(task=task, model=model, dev_scores=scores, best_epoch=best + 1,
                            best_score=float(scores[best].get(task.main_metric, "nan")),
                            main_metric=task.main_metric, seconds=time.perf_counter() - start,
                            dev=dev, summary=summary, selected_on=selected_on)
    if export_dir:
        result.export_dir = export_task(task, model, export_dir, export_jit_compile)
    return result


def export_task(task, model, export_dir, jit_compile=False):
    """`task.export(model, export_dir)`, with `jit_compile=True` only when
    set: a custom Task's two-argument `export` keeps working. LoRA adapters
    are merged into their kernels first (`tfbert.train.lora.merge_lora`):
    the exported graph has no adapter ops."""
    from tfbert.train.lora import lora_layers, merge_lora

    if lora_layers(model):
        merge_lora(model)
    return task.export(model, export_dir, **({"jit_compile": True} if jit_compile else {}))
