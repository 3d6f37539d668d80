"""Pretraining as `tools/pretrain.py` runs it, as library calls.

`PretrainConfig` is the YAML, in the layout of every run (fine-tuning's
`FinetuneConfig`, distillation's): the encoder (`preset`, `encoder`,
`init_checkpoint`, `vocab_file`, `lower_case`) and the runtime at the top,
`train:` (a `TrainConfig`, with pretraining's defaults: `PretrainTrainConfig`)
and `pretrain:` (`PretrainSettings`: data, masking, length and schedule,
checkpoints). The old flat keys (`batch_size`, `num_train_steps`, ...,
`encoder_overrides`) still load, each with a one-line FutureWarning naming
its new key. `validate(cfg)` adds what a run needs (data, vocab, model_dir).
`run(cfg)` pretrains with `model.fit` (resuming what `model_dir` holds,
saving every `train.steps_per_epoch` steps, warning on loss spikes) and
writes `<model_dir>/pretrained/`, a tfbert checkpoint directory;
`export_step` turns any saved step into one. The script only parses flags
and calls them.

Example:
>>> cfg = PretrainConfig(vocab_file="vocab.txt", model_dir="runs/x",
...                      pretrain={"train_files": "data/*.tfrecord", "num_train_steps": 300},
...                      train={"steps_per_epoch": 100})
>>> validate(cfg)
>>> cfg.train.learning_rate, cfg.train.batch_size  # pretraining's defaults
(0.0001, 32)
>>> PretrainConfig(pretrain={"num_train_steps": 250}, train={"steps_per_epoch": 100})
Traceback (most recent call last):
ValueError: pretrain.num_train_steps (250) must be a multiple of train.steps_per_epoch (100), the unit of checkpoint and resume.
"""

import dataclasses
import json
import os
import time
from typing import Optional, Union

from tfbert import config_loader
from tfbert.atomic import write_json
from tfbert.config_loader import at_least, in_range, one_of, positive
from tfbert.data.pretraining.instances import (NEXT_SENTENCE_TASKS, fold_use_nsp,
                                               next_sentence_task_of)
from tfbert.text.masking import STRATEGIES as MASKING_STRATEGIES
from tfbert.train.strategy import STRATEGIES
from tfbert.train.train_config import TrainConfig

# The `train:` fields pretraining uses; TrainConfig's others (epochs,
# validation, LoRA, ...) are fine-tuning's and refused when set.
TRAIN_FIELDS = ("batch_size", "gradient_accumulation_steps", "learning_rate", "steps_per_epoch",
                "weight_decay", "optimizer_type", "clipnorm", "adam_epsilon", "seed",
                "jit_compile", "dtype_policy", "tensorboard", "verbose")


@dataclasses.dataclass
class PretrainTrainConfig(TrainConfig):
    """`TrainConfig` with pretraining's defaults (BERT's pretraining recipe:
    batch 32, learning rate 1e-4, Adam epsilon 1e-6; seed 0, 100 updates per
    epoch, a progress bar), the `train:` section of `PretrainConfig`. A run
    has no recipe to choose them, so they are never None here."""

    batch_size: int = at_least(1, 32)  # per optimizer update
    learning_rate: float = positive(1e-4)
    steps_per_epoch: int = at_least(1, 100)  # the resume / checkpoint unit
    clipnorm: float = at_least(0.0, 1.0)  # 0: no clipping
    adam_epsilon: float = positive(1e-6)
    seed: int = 0
    verbose: int = in_range(0, 2, 1)  # 1: progress bar, 2: one line per epoch

    def __post_init__(self):
        super().__post_init__()
        for field in dataclasses.fields(TrainConfig):
            if field.name not in TRAIN_FIELDS and getattr(self, field.name) != _default(field):
                raise ValueError(
                    f"train.{field.name} is a fine-tuning setting; pretraining's train: takes "
                    f"{', '.join(TRAIN_FIELDS)} (the run's length is pretrain.num_train_steps "
                    "or pretrain.budget_minutes).")


def _default(field):
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


@dataclasses.dataclass
class PretrainSettings:
    """The `pretrain:` section: what only pretraining has."""

    # --- Data ---
    train_files: str = ""
    # Held-out records evaluated after every epoch; empty: <train dir>/eval/ when
    # it exists; "none": no evaluation.
    eval_files: str = ""
    # nsp | sop (ALBERT's sentence order; same binary head) | none (masked LM only).
    next_sentence_task: str = one_of(NEXT_SENTENCE_TASKS, "nsp")
    masking_strategy: str = one_of(MASKING_STRATEGIES, "token")
    span_boundary_objective: bool = False  # SpanBERT's SBO; needs masking_strategy: span
    masked_lm_prob: float = in_range(0.0, 1.0, 0.15, high_open=True)
    max_predictions_per_seq: int = at_least(1, 20)
    dynamic_masking: bool = True  # False: use masks stored by create_pretraining_data
    shuffle_buffer: int = at_least(1, 10000)
    # --- Length and schedule (train.gradient_accumulation_steps > 1: each
    # update averages N micro-batches; num_train_steps and
    # train.steps_per_epoch count updates) ---
    num_train_steps: int = at_least(1, 1000)
    # Train for this long instead of num_train_steps (leave that unset): the
    # learning rate decays over the time spent and the run ends on time.
    budget_minutes: Optional[float] = positive(None)
    warmup_steps: int = at_least(0, 100)
    end_learning_rate: float = at_least(0.0, 0.0)
    power: float = 1.0
    beta_1: float = in_range(0.0, 1.0, 0.9, high_open=True)
    beta_2: float = in_range(0.0, 1.0, 0.999, high_open=True)
    # --- Checkpoints and checks ---
    checkpoint_every_epochs: int = at_least(1, 1)
    keep_checkpoints: int = at_least(1, 3)
    # Warn when the mean loss of 20 steps exceeds (1 + this) x the median of
    # the 200 steps before; 0 turns the check off.
    loss_spike_threshold: float = at_least(0.0, 0.5)
    # Updates per call of the compiled step (Keras' steps_per_execution): the
    # per-step Python of fit and the callbacks runs once per N updates; the
    # time budget's clock and the loss-spike check move in steps of N. An
    # epoch is whole calls: the largest divisor of train.steps_per_epoch up
    # to N. Runtime: not part of the stored run config.
    steps_per_execution: int = at_least(1, 1)

    def __post_init__(self):
        config_loader.validate(self)
        if self.span_boundary_objective and (self.masking_strategy != "span"
                                             or not self.dynamic_masking):
            raise ValueError("pretrain.span_boundary_objective needs masking_strategy: span "
                             "with dynamic_masking.")


# Old names, one release: every key of the flat layout (before `train:` and
# `pretrain:`), `encoder_overrides`, and the names renamed before that
# (Keras' dtype policy, transformers' `adam_epsilon` and `warmup_steps`, the
# pair task's).
OLD_KEYS = {
    **{name: f"train.{name}" for name in TRAIN_FIELDS},
    **{f.name: f"pretrain.{f.name}" for f in dataclasses.fields(PretrainSettings)},
    "encoder_overrides": "encoder",
    "mixed_precision": "train.dtype_policy",
    "epsilon": "train.adam_epsilon",
    "num_warmup_steps": "pretrain.warmup_steps",
    "use_nsp": ("pretrain.next_sentence_task", next_sentence_task_of),
}


@config_loader.renamed(**OLD_KEYS)
@dataclasses.dataclass
class PretrainConfig:
    """The pretraining YAML: `train:`, `pretrain:`, the encoder and the runtime.
    `train` and `pretrain` also take a mapping (and `train` a `TrainConfig`,
    whose fields left at fine-tuning's defaults take pretraining's)."""

    train: PretrainTrainConfig = dataclasses.field(default_factory=PretrainTrainConfig)
    pretrain: PretrainSettings = dataclasses.field(default_factory=PretrainSettings)
    # --- Encoder: a preset (+ encoder settings) for random init, or a tfbert
    # checkpoint dir to continue (its vocab and casing are used) ---
    init_checkpoint: str = ""
    preset: str = "base"
    # BertConfig fields over the preset (`--set encoder.num_layers=4`; with an
    # init_checkpoint, over its config, e.g. dropout), or the path of a
    # BertConfig YAML (random init only).
    encoder: Union[dict, str] = dataclasses.field(default_factory=dict)
    vocab_file: str = ""  # taken from init_checkpoint when that is set
    lower_case: bool = True
    # --- Runtime ---
    model_dir: str = ""
    distribution_strategy: str = one_of(STRATEGIES, "off")
    num_devices: int = at_least(0, 0)  # 0: all
    tpu: str = ""  # TPU name or grpc:// address for distribution_strategy: tpu

    def __post_init__(self):
        name = type(self).__name__
        if isinstance(self.train, dict):
            self.train = config_loader.from_dict(PretrainTrainConfig, self.train,
                                                 source=f"{name}.train", prefix="train.")
        elif type(self.train) is TrainConfig:  # noqa: E721  (not the subclass)
            self.train = PretrainTrainConfig(**{
                f.name: getattr(self.train, f.name) for f in dataclasses.fields(TrainConfig)
                if getattr(self.train, f.name) != _default(f)})
        if isinstance(self.pretrain, dict):
            self.pretrain = config_loader.from_dict(PretrainSettings, self.pretrain,
                                                    source=f"{name}.pretrain",
                                                    prefix="pretrain.")
        for section, cls in (("train", PretrainTrainConfig), ("pretrain", PretrainSettings)):
            if not isinstance(getattr(self, section), cls):
                raise ValueError(f"{name}.{section}: expected a mapping or {cls.__name__}, "
                                 f"got {getattr(self, section)!r:.60}.")
        config_loader.validate(self)
        if self.pretrain.budget_minutes:
            _check_budget(self)
        elif self.pretrain.num_train_steps % self.train.steps_per_epoch:
            raise ValueError(
                f"pretrain.num_train_steps ({self.pretrain.num_train_steps}) must be a multiple "
                f"of train.steps_per_epoch ({self.train.steps_per_epoch}), the unit of "
                "checkpoint and resume.")


def validate(cfg):
    """What a run needs besides a valid config (each config checks itself when built)."""
    if not cfg.model_dir:
        raise ValueError("--model_dir is required.")
    if not cfg.pretrain.train_files:
        raise ValueError("--train_files is required (pretrain.train_files).")
    if not cfg.vocab_file and not cfg.init_checkpoint:
        raise ValueError("--vocab_file is required (or --init_checkpoint, whose vocab is used).")
    if cfg.init_checkpoint and isinstance(cfg.encoder, str):
        raise ValueError(f"encoder: {cfg.encoder} (a BertConfig YAML) applies to random init "
                         "only; an init_checkpoint brings its own architecture (give encoder "
                         "settings as a mapping to change e.g. dropout).")


def _check_budget(cfg):
    """A budget run's conflicts (the budget, not a step count, ends it)."""
    pre = cfg.pretrain
    if pre.num_train_steps != PretrainSettings.__dataclass_fields__["num_train_steps"].default:
        raise ValueError(
            f"pretrain.budget_minutes ({pre.budget_minutes:g}) and pretrain.num_train_steps "
            f"({pre.num_train_steps}) are both set: a budget run ends on time, not at a step "
            "count; leave num_train_steps out (check the --config YAML).")
    if cfg.distribution_strategy == "multi_worker_mirrored":
        raise ValueError("budget_minutes does not work with distribution_strategy: "
                         "multi_worker_mirrored (each worker would keep its own clock).")


def stored_config(cfg):
    """The run config `run` stores in `<model_dir>/pretrain_config.json` (and
    compares on resume): every field but the runtime `steps_per_execution`."""
    values = dataclasses.asdict(cfg)
    del values["pretrain"]["steps_per_execution"]
    return values


def read_stored_config(values, source="pretrain_config.json"):
    """`PretrainConfig` from a stored run config of any layout tfbert wrote
    (flat, with old names: taken without warnings; the user did not write them)."""
    return config_loader.from_dict(PretrainConfig, fold_use_nsp(values), source=source,
                                   warn=False)


def _stored_in_layout(values):
    """A stored run config in today's layout with every field (defaults for
    fields it predates), to compare with this run's; as it was when it is no
    valid config (the comparison then names what differs)."""
    try:
        return stored_config(read_stored_config(values))
    except (ValueError, TypeError):
        return fold_use_nsp(values)


def updates_per_execution(cfg):
    """`pretrain.steps_per_execution`, cut to the largest divisor of
    `train.steps_per_epoch` (an epoch, the resume unit, is whole calls of the
    compiled step).

    >>> updates_per_execution(PretrainConfig(train={"steps_per_epoch": 500},
    ...                                      pretrain={"steps_per_execution": 25}))
    25
    >>> updates_per_execution(PretrainConfig(train={"steps_per_epoch": 10},
    ...                                      pretrain={"steps_per_execution": 25}))
    10
    """
    steps_per_epoch = cfg.train.steps_per_epoch
    most = min(cfg.pretrain.steps_per_execution, steps_per_epoch)
    return max(n for n in range(1, most + 1) if steps_per_epoch % n == 0)


def build_model(cfg, vocab):
    """BertPretrainer from init_checkpoint (heads too, when present) or a preset."""
    from tfbert import BertConfig, BertEncoder
    from tfbert.models.pretrainer import BertPretrainer

    task = cfg.pretrain.next_sentence_task
    sbo = cfg.pretrain.span_boundary_objective
    if cfg.init_checkpoint:
        model = BertPretrainer.from_checkpoint(
            cfg.init_checkpoint, use_sbo=sbo, config_overrides=cfg.encoder or None,
            next_sentence_task=task,
        )
    else:
        if isinstance(cfg.encoder, str):
            config = BertConfig.from_yaml(cfg.encoder)
        else:
            config = BertConfig.from_preset(cfg.preset, **{"vocab_size": vocab.vocab_size,
                                                          **cfg.encoder})
        model = BertPretrainer(BertEncoder(config), use_sbo=sbo, next_sentence_task=task)
    if model.config.vocab_size != vocab.vocab_size:
        raise ValueError(
            f"The model has vocab_size {model.config.vocab_size} but the vocabulary "
            f"has {vocab.vocab_size} tokens."
        )
    return model


def run(cfg, overwrite=False):
    """Pretrains as `cfg` says (resuming what `cfg.model_dir` holds); returns the
    summary it writes to `<model_dir>/summary.json` (non-chief workers: the step
    and weights checksum only). `overwrite`: start fresh in a model_dir that
    holds another run."""
    import keras
    import numpy as np

    from tfbert import checkpoint
    from tfbert.data.pretraining.writer import pretraining_dataset
    from tfbert.text.masking import MaskedLMMasker
    from tfbert.text.vocab import load_vocab
    from tfbert.train import callbacks as cb
    from tfbert.train.optimizer import create_optimizer
    from tfbert.train.multi_worker import is_chief, with_auto_shard
    from tfbert.train.resume import fit_resumable, resume_point
    from tfbert.train.run_config import claim_model_dir
    from tfbert.train.strategy import get_strategy, xla_supported

    validate(cfg)
    train, pre = cfg.train, cfg.pretrain
    # Before anything is resumed: a model_dir holds one run (one config).
    # Updates per call are runtime, like verbose: a run resumes with another
    # value. A run stored in the flat layout (or before a field existed)
    # resumes too: the stored config is read back into today's layout.
    claim_model_dir(cfg.model_dir, stored_config(cfg), overwrite=overwrite,
                    name="pretrain_config.json", write=is_chief(),
                    renamed=config_loader.renamed_keys(PretrainConfig),
                    upgrade=_stored_in_layout)
    lower_case = cfg.lower_case
    vocab_file = cfg.vocab_file
    if cfg.init_checkpoint:
        ckpt = checkpoint.read_checkpoint(cfg.init_checkpoint)
        vocab_file, lower_case = ckpt.vocab_file, ckpt.lower_case
        del ckpt
    vocab = load_vocab(vocab_file)
    keras.utils.set_random_seed(train.seed)
    if train.dtype_policy:
        keras.config.set_dtype_policy(train.dtype_policy)
    strategy = get_strategy(cfg.distribution_strategy, num_devices=cfg.num_devices or None,
                            tpu=cfg.tpu)

    summary_path = os.path.join(cfg.model_dir, "summary.json")
    if pre.budget_minutes and os.path.isfile(summary_path):
        # A budget run's state stays at its end; training on would overspend.
        print(f"pretrain: the time budget of this run is spent; see {summary_path}.", flush=True)
        with open(summary_path, encoding="utf-8") as f:
            return json.load(f)
    # A budget run ends through its TimeBudget callback, not an epoch count.
    epochs = 10**9 if pre.budget_minutes else pre.num_train_steps // train.steps_per_epoch
    accumulate = train.gradient_accumulation_steps
    micro_batch = train.micro_batch_size
    keras_steps = train.steps_per_epoch * accumulate  # micro-batches per epoch
    initial_epoch, initial_batch = resume_point(cfg.model_dir)
    masker = None
    if pre.dynamic_masking:
        masker = MaskedLMMasker.from_vocab(
            vocab, max_predictions=pre.max_predictions_per_seq,
            mask_rate=pre.masked_lm_prob, strategy=pre.masking_strategy,
        )
    task = pre.next_sentence_task

    def make_dataset(skip_batches):
        dataset = pretraining_dataset(
            pre.train_files, micro_batch, masker=masker, seed=train.seed,
            shuffle_buffer=pre.shuffle_buffer, next_sentence_task=task,
            skip_batches=skip_batches,
        )
        if cfg.distribution_strategy == "multi_worker_mirrored":
            dataset = with_auto_shard(dataset, "DATA")
        return dataset

    eval_files = find_eval_files(cfg)
    eval_dataset = None
    if eval_files and cfg.distribution_strategy == "multi_worker_mirrored":
        print("pretrain: no per-epoch evaluation under multi_worker_mirrored.", flush=True)
    elif eval_files:
        eval_dataset = evaluation_dataset(cfg, eval_files, micro_batch, masker)
        print(f"pretrain: evaluating {eval_files} after every epoch.", flush=True)

    jit_compile = train.jit_compile and xla_supported(strategy)
    if train.jit_compile and not jit_compile:
        print("pretrain: XLA is off for a multi-replica strategy on CPU devices.", flush=True)
    with strategy.scope():
        model = build_model(cfg, vocab)
        optimizer = create_optimizer(
            train.learning_rate, pre.num_train_steps, pre.warmup_steps,
            optimizer_type=train.optimizer_type, weight_decay=train.weight_decay,
            end_learning_rate=pre.end_learning_rate, power=pre.power,
            clipnorm=train.clipnorm or None, beta_1=pre.beta_1, beta_2=pre.beta_2,
            epsilon=train.adam_epsilon, gradient_accumulation_steps=accumulate,
            budget_seconds=pre.budget_minutes and 60.0 * pre.budget_minutes,
        )
        # Keras counts micro-batches; 1 keeps one call per micro-batch.
        per_call = updates_per_execution(cfg)
        model.compile(optimizer=optimizer, jit_compile=jit_compile,
                      steps_per_execution=per_call * accumulate if per_call > 1 else 1)
        x, _ = next(iter(make_dataset(0).take(1)))
        model(x)  # build: BackupAndRestore restores into built variables
    if initial_epoch or initial_batch:
        print(f"Resuming at epoch {initial_epoch} "
              f"(step {initial_epoch * train.steps_per_epoch + initial_batch / accumulate:g}).",
              flush=True)

    callbacks = cb.training_callbacks(
        cfg.model_dir, checkpoint_every_epochs=pre.checkpoint_every_epochs,
        keep_checkpoints=pre.keep_checkpoints, tensorboard=train.tensorboard,
    )
    budget = None
    if pre.budget_minutes:
        budget = cb.TimeBudget(optimizer.budget_schedule,
                               log=lambda message: print(f"pretrain: {message}", flush=True))
        callbacks.insert(0, budget)  # first: the backup and the log see its clock
    spikes = None
    if pre.loss_spike_threshold and is_chief():
        spikes = cb.LossSpikeWarning(
            pre.loss_spike_threshold,
            checkpoint_dir=os.path.join(cfg.model_dir, cb.CHECKPOINT_DIR),
            log=lambda message: print(f"pretrain: {message}", flush=True),
        )
        callbacks.append(spikes)
    start = time.time()
    history = fit_resumable(model, make_dataset, callbacks, epochs, keras_steps,
                            verbose=train.verbose, validation_data=eval_dataset)
    seconds = time.time() - start
    step = int(model.optimizer.iterations.numpy())
    # Equal on every worker of a multi-worker run (replicas stay in sync).
    checksum = float(sum(np.sum(w.numpy(), dtype=np.float64) for w in model.weights))
    print(f"Weights checksum at step {step}: {checksum:.12e}")
    if not is_chief():
        return {"step": step, "weights_checksum": checksum}
    out_dir = model.save_checkpoint(
        os.path.join(cfg.model_dir, "pretrained"), vocab_file, lower_case,
        source=f"tfbert pretraining, step {step}",
    )
    summary = {
        "step": step,
        "epochs_run_now": len(history.epoch),
        "first_epoch_run_now": history.epoch[0] if history.epoch else None,
        "seconds": seconds,
        "final_metrics": {k: float(v[-1]) for k, v in history.history.items()},
        "checkpoint": out_dir,
        "weights_checksum": checksum,
        "eval_files": eval_files,
        "loss_spikes": [{"step": s, "recent_loss": r, "level": lv}
                        for s, r, lv in (spikes.spikes if spikes else [])],
    }
    if budget is not None:
        summary["budget_seconds"] = budget.schedule.budget_seconds
        summary["budget_seconds_spent"] = float(budget.schedule.seconds_spent.numpy())
    write_json(os.path.join(cfg.model_dir, "summary.json"), summary)
    print(f"Done at step {step}; tfbert checkpoint in {out_dir}")
    return summary


def evaluation_dataset(cfg, eval_files, micro_batch, masker=None):
    """The held-out records `fit` evaluates after every epoch: the same masks
    every epoch (fixed seed, no shuffle), so scores compare across epochs."""
    from tfbert.data.batching import with_known_length
    from tfbert.data.pretraining.writer import pretraining_dataset

    # Its length declared: with an unknown one Keras' fit waited ~24 s per epoch
    # to drop the previous evaluation iterator (docs/pretraining.md).
    return with_known_length(pretraining_dataset(
        eval_files, micro_batch, masker=masker, seed=cfg.train.seed + 1, shuffle_buffer=0,
        repeat=False, next_sentence_task=cfg.pretrain.next_sentence_task,
        drop_remainder=False,
    ))


def find_eval_files(cfg):
    """`pretrain.eval_files`, or the `eval/` split next to the training shards."""
    from tfbert.data.pretraining.writer import EVAL_DIR, METADATA_FILE, expand_files

    eval_files = cfg.pretrain.eval_files
    if eval_files == "none":
        return ""
    if eval_files:
        expand_files(eval_files, what="eval file")  # a clear error when missing
        return eval_files
    first = expand_files(cfg.pretrain.train_files, what="training file")[0]
    split = os.path.join(os.path.dirname(os.path.abspath(first)), EVAL_DIR)
    meta = os.path.join(split, METADATA_FILE)
    if os.path.isfile(meta):
        with open(meta, encoding="utf-8") as f:
            if json.load(f).get("instances"):
                return os.path.join(split, "*.tfrecord")
    return ""


def export_step(model_dir, step, export_dir=None):
    """Writes the weights saved at `step` (periodic or kept before a loss
    spike) as a tfbert checkpoint directory; returns its path."""
    import numpy as np

    from tfbert import checkpoint
    from tfbert.text.vocab import load_vocab
    from tfbert.train.callbacks import CHECKPOINT_DIR, find_checkpoint

    config_path = os.path.join(model_dir, "pretrain_config.json")
    if not os.path.isfile(config_path):
        raise FileNotFoundError(f"{config_path} is missing: the model_dir must be a "
                                "pretraining run directory.")
    with open(config_path, encoding="utf-8") as f:
        # Runs stored in the flat layout or before the renames hold old names.
        cfg = read_stored_config(json.load(f), source=config_path)
    weights = find_checkpoint(os.path.join(model_dir, CHECKPOINT_DIR), step)
    vocab_file, lower_case = cfg.vocab_file, cfg.lower_case
    if cfg.init_checkpoint:
        ckpt = checkpoint.read_checkpoint(cfg.init_checkpoint)
        vocab_file, lower_case = ckpt.vocab_file, ckpt.lower_case
    model = build_model(cfg, load_vocab(vocab_file))
    ids = np.array([[2, 5, 6, 3]], "int32")
    x = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids),
         "masked_lm_positions": np.ones([1, cfg.pretrain.max_predictions_per_seq], "int32")}
    if cfg.pretrain.span_boundary_objective:
        from tfbert.models.pretrainer import SPAN_INPUTS

        x.update({name: np.ones([1, cfg.pretrain.max_predictions_per_seq], "int32")
                  for name in SPAN_INPUTS})
    model(x)  # build the variables, then load the saved ones into them
    model.load_weights(weights)
    out = export_dir or os.path.join(model_dir, f"pretrained-step-{step}")
    model.save_checkpoint(out, vocab_file, lower_case, source=f"tfbert pretraining, step {step} ({weights})")
    print(f"Wrote the weights of step {step} as a tfbert checkpoint directory: {out}")
    return out
