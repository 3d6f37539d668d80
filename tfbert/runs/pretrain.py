"""Pretraining as `tools/pretrain.py` runs it, as library calls.

`PretrainConfig` is the YAML (data, masking, model, optimization, runtime),
checked when it is built; `validate(cfg)` adds what a run needs (data, vocab,
model_dir). `run(cfg)` pretrains with `model.fit` (resuming what `model_dir` holds, saving
every `steps_per_epoch` steps, warning on loss spikes) and writes
`<model_dir>/pretrained/`, a tfbert checkpoint directory; `export_step`
turns any saved step into one. The script only parses flags and calls them.

Example:
>>> cfg = PretrainConfig(train_files="data/*.tfrecord", vocab_file="vocab.txt",
...                      model_dir="runs/x", num_train_steps=300, steps_per_epoch=100)
>>> validate(cfg)
>>> dataclasses.replace(cfg, num_train_steps=250)
Traceback (most recent call last):
ValueError: num_train_steps (250) must be a multiple of steps_per_epoch (100), the unit of checkpoint and resume.
"""

import dataclasses
import json
import os
import time
from typing import Optional

from tfbert import config_loader
from tfbert.atomic import write_json
from tfbert.data.pretraining.instances import (NEXT_SENTENCE_TASKS, fold_use_nsp,
                                               next_sentence_task_of)
from tfbert.text.masking import STRATEGIES as MASKING_STRATEGIES
from tfbert.train.strategy import STRATEGIES
from tfbert.train.train_config import DTYPE_POLICIES


# Old names, one release: the fine-tuning config's names (Keras' dtype policy,
# transformers' `adam_epsilon` and `warmup_steps`), and the pair task's.
@config_loader.renamed(mixed_precision="dtype_policy", epsilon="adam_epsilon",
                    num_warmup_steps="warmup_steps",
                    use_nsp=("next_sentence_task", next_sentence_task_of))
@dataclasses.dataclass
class PretrainConfig:
    # --- Data ---
    train_files: str = ""
    vocab_file: str = ""  # taken from init_checkpoint when that is set
    lower_case: bool = True
    # nsp | sop (ALBERT's sentence order; same binary head) | none (masked LM only).
    next_sentence_task: str = config_loader.one_of(NEXT_SENTENCE_TASKS, "nsp")
    # Held-out records evaluated after every epoch; empty: <train dir>/eval/ when
    # it exists; "none": no evaluation.
    eval_files: str = ""
    masking_strategy: str = config_loader.one_of(MASKING_STRATEGIES, "token")
    span_boundary_objective: bool = False  # SpanBERT's SBO; needs masking_strategy: span
    masked_lm_prob: float = config_loader.in_range(0.0, 1.0, 0.15, high_open=True)
    max_predictions_per_seq: int = config_loader.at_least(1, 20)
    dynamic_masking: bool = True  # False: use masks stored by create_pretraining_data
    shuffle_buffer: int = config_loader.at_least(1, 10000)
    # --- Model ---
    preset: str = "base"
    encoder_overrides: dict = dataclasses.field(default_factory=dict)
    init_checkpoint: str = ""  # a tfbert checkpoint dir (e.g. converted weights)
    # --- Optimization ---
    batch_size: int = config_loader.at_least(1, 32)  # per optimizer update
    # N > 1: each update averages N micro-batches of batch_size / N sequences
    # (Keras' optimizer accumulation); num_train_steps and steps_per_epoch
    # count updates.
    gradient_accumulation_steps: int = config_loader.at_least(1, 1)
    num_train_steps: int = config_loader.at_least(1, 1000)
    # Train for this long instead of num_train_steps (leave that unset): the
    # learning rate decays over the time spent and the run ends on time.
    budget_minutes: Optional[float] = config_loader.positive(None)
    warmup_steps: int = config_loader.at_least(0, 100)
    learning_rate: float = config_loader.positive(1e-4)
    end_learning_rate: float = config_loader.at_least(0.0, 0.0)
    power: float = 1.0
    optimizer_type: str = config_loader.one_of(("adamw", "lamb"), "adamw")
    weight_decay: float = config_loader.at_least(0.0, 0.01)
    clipnorm: float = config_loader.at_least(0.0, 1.0)  # 0: no clipping
    beta_1: float = config_loader.in_range(0.0, 1.0, 0.9, high_open=True)
    beta_2: float = config_loader.in_range(0.0, 1.0, 0.999, high_open=True)
    adam_epsilon: float = config_loader.positive(1e-6)
    # --- Runtime ---
    model_dir: str = ""
    steps_per_epoch: int = config_loader.at_least(1, 100)  # the resume / checkpoint unit
    # Updates per call of the compiled step (Keras' steps_per_execution): the
    # per-step Python of fit and the callbacks runs once per N updates; the
    # time budget's clock and the loss-spike check move in steps of N. An
    # epoch is whole calls: the largest divisor of steps_per_epoch up to N.
    steps_per_execution: int = config_loader.at_least(1, 1)
    checkpoint_every_epochs: int = config_loader.at_least(1, 1)
    keep_checkpoints: int = config_loader.at_least(1, 3)
    dtype_policy: str = config_loader.one_of(DTYPE_POLICIES, "")  # e.g. mixed_bfloat16
    jit_compile: bool = True
    distribution_strategy: str = config_loader.one_of(STRATEGIES, "off")
    num_devices: int = config_loader.at_least(0, 0)  # 0: all
    tpu: str = ""  # TPU name or grpc:// address for distribution_strategy: tpu
    seed: int = 0
    tensorboard: bool = True
    # Warn when the mean loss of 20 steps exceeds (1 + this) x the median of
    # the 200 steps before; 0 turns the check off.
    loss_spike_threshold: float = config_loader.at_least(0.0, 0.5)
    verbose: int = config_loader.in_range(0, 2, 1)  # 1: progress bar, 2: one line per epoch

    def __post_init__(self):
        config_loader.validate(self)
        if self.span_boundary_objective and (self.masking_strategy != "span"
                                             or not self.dynamic_masking):
            raise ValueError("span_boundary_objective needs masking_strategy: span with "
                             "dynamic_masking.")
        if self.batch_size % self.gradient_accumulation_steps:
            raise ValueError(
                f"gradient_accumulation_steps ({self.gradient_accumulation_steps}) must divide "
                f"batch_size ({self.batch_size}): each micro-batch is batch_size / "
                "gradient_accumulation_steps sequences.")
        if self.budget_minutes:
            _check_budget(self)
        elif self.num_train_steps % self.steps_per_epoch:
            raise ValueError(
                f"num_train_steps ({self.num_train_steps}) must be a multiple of "
                f"steps_per_epoch ({self.steps_per_epoch}), the unit of checkpoint and resume."
            )


def validate(cfg):
    """What a run needs besides a valid config (each config checks itself when built)."""
    if not cfg.model_dir:
        raise ValueError("--model_dir is required.")
    if not cfg.train_files:
        raise ValueError("--train_files is required.")
    if not cfg.vocab_file and not cfg.init_checkpoint:
        raise ValueError("--vocab_file is required (or --init_checkpoint, whose vocab is used).")


def _check_budget(cfg):
    """A budget run's conflicts (the budget, not a step count, ends it)."""
    if cfg.num_train_steps != PretrainConfig.__dataclass_fields__["num_train_steps"].default:
        raise ValueError(
            f"budget_minutes ({cfg.budget_minutes:g}) and num_train_steps "
            f"({cfg.num_train_steps}) are both set: a budget run ends on time, not at a step "
            "count; leave num_train_steps out (check the --config YAML).")
    if cfg.distribution_strategy == "multi_worker_mirrored":
        raise ValueError("budget_minutes does not work with distribution_strategy: "
                         "multi_worker_mirrored (each worker would keep its own clock).")


def updates_per_execution(cfg):
    """`steps_per_execution`, cut to the largest divisor of `steps_per_epoch`
    (an epoch, the resume unit, is whole calls of the compiled step).

    >>> updates_per_execution(PretrainConfig(steps_per_epoch=500, steps_per_execution=25))
    25
    >>> updates_per_execution(PretrainConfig(steps_per_epoch=10, steps_per_execution=25))
    10
    """
    most = min(cfg.steps_per_execution, cfg.steps_per_epoch)
    return max(n for n in range(1, most + 1) if cfg.steps_per_epoch % n == 0)


def build_model(cfg, vocab):
    """BertPretrainer from init_checkpoint (heads too, when present) or a preset."""
    from tfbert import BertConfig, BertEncoder
    from tfbert.models.pretrainer import BertPretrainer

    task = cfg.next_sentence_task
    if cfg.init_checkpoint:
        model = BertPretrainer.from_checkpoint(
            cfg.init_checkpoint, use_sbo=cfg.span_boundary_objective,
            config_overrides=cfg.encoder_overrides or None, next_sentence_task=task,
        )
    else:
        config = BertConfig.from_preset(cfg.preset, **{"vocab_size": vocab.vocab_size,
                                                      **cfg.encoder_overrides})
        model = BertPretrainer(BertEncoder(config), use_sbo=cfg.span_boundary_objective,
                               next_sentence_task=task)
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
    # Before anything is resumed: a model_dir holds one run (one config).
    # Updates per call are runtime, like verbose: a run resumes with another
    # value, and runs stored before the field existed resume too.
    stored = {k: v for k, v in dataclasses.asdict(cfg).items() if k != "steps_per_execution"}
    claim_model_dir(cfg.model_dir, stored, overwrite=overwrite,
                    name="pretrain_config.json", write=is_chief(),
                    renamed=config_loader.renamed_keys(PretrainConfig), upgrade=fold_use_nsp)
    lower_case = cfg.lower_case
    vocab_file = cfg.vocab_file
    if cfg.init_checkpoint:
        ckpt = checkpoint.read_checkpoint(cfg.init_checkpoint)
        vocab_file, lower_case = ckpt.vocab_file, ckpt.lower_case
        del ckpt
    vocab = load_vocab(vocab_file)
    keras.utils.set_random_seed(cfg.seed)
    if cfg.dtype_policy:
        keras.config.set_dtype_policy(cfg.dtype_policy)
    strategy = get_strategy(cfg.distribution_strategy, num_devices=cfg.num_devices or None,
                            tpu=cfg.tpu)

    summary_path = os.path.join(cfg.model_dir, "summary.json")
    if cfg.budget_minutes and os.path.isfile(summary_path):
        # A budget run's state stays at its end; training on would overspend.
        print(f"pretrain: the time budget of this run is spent; see {summary_path}.", flush=True)
        with open(summary_path, encoding="utf-8") as f:
            return json.load(f)
    # A budget run ends through its TimeBudget callback, not an epoch count.
    epochs = 10**9 if cfg.budget_minutes else cfg.num_train_steps // cfg.steps_per_epoch
    accumulate = cfg.gradient_accumulation_steps
    micro_batch = cfg.batch_size // accumulate
    keras_steps = cfg.steps_per_epoch * accumulate  # micro-batches per epoch
    initial_epoch, initial_batch = resume_point(cfg.model_dir)
    masker = None
    if cfg.dynamic_masking:
        masker = MaskedLMMasker.from_vocab(
            vocab, max_predictions=cfg.max_predictions_per_seq,
            mask_rate=cfg.masked_lm_prob, strategy=cfg.masking_strategy,
        )
    task = cfg.next_sentence_task

    def make_dataset(skip_batches):
        dataset = pretraining_dataset(
            cfg.train_files, micro_batch, masker=masker, seed=cfg.seed,
            shuffle_buffer=cfg.shuffle_buffer, next_sentence_task=task,
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
        # The same masks every epoch (fixed seed, no shuffle): scores compare across epochs.
        eval_dataset = pretraining_dataset(
            eval_files, micro_batch, masker=masker, seed=cfg.seed + 1, shuffle_buffer=0,
            repeat=False, next_sentence_task=task, drop_remainder=False,
        )
        print(f"pretrain: evaluating {eval_files} after every epoch.", flush=True)

    jit_compile = cfg.jit_compile and xla_supported(strategy)
    if cfg.jit_compile and not jit_compile:
        print("pretrain: XLA is off for a multi-replica strategy on CPU devices.", flush=True)
    with strategy.scope():
        model = build_model(cfg, vocab)
        optimizer = create_optimizer(
            cfg.learning_rate, cfg.num_train_steps, cfg.warmup_steps,
            optimizer_type=cfg.optimizer_type, weight_decay=cfg.weight_decay,
            end_learning_rate=cfg.end_learning_rate, power=cfg.power,
            clipnorm=cfg.clipnorm or None, beta_1=cfg.beta_1, beta_2=cfg.beta_2,
            epsilon=cfg.adam_epsilon, gradient_accumulation_steps=accumulate,
            budget_seconds=cfg.budget_minutes and 60.0 * cfg.budget_minutes,
        )
        # Keras counts micro-batches; 1 keeps one call per micro-batch.
        per_call = updates_per_execution(cfg)
        model.compile(optimizer=optimizer, jit_compile=jit_compile,
                      steps_per_execution=per_call * accumulate if per_call > 1 else 1)
        x, _ = next(iter(make_dataset(0).take(1)))
        model(x)  # build: BackupAndRestore restores into built variables
    if initial_epoch or initial_batch:
        print(f"Resuming at epoch {initial_epoch} "
              f"(step {initial_epoch * cfg.steps_per_epoch + initial_batch / accumulate:g}).",
              flush=True)

    callbacks = cb.training_callbacks(
        cfg.model_dir, checkpoint_every_epochs=cfg.checkpoint_every_epochs,
        keep_checkpoints=cfg.keep_checkpoints, tensorboard=cfg.tensorboard,
    )
    budget = None
    if cfg.budget_minutes:
        budget = cb.TimeBudget(optimizer.budget_schedule,
                               log=lambda message: print(f"pretrain: {message}", flush=True))
        callbacks.insert(0, budget)  # first: the backup and the log see its clock
    spikes = None
    if cfg.loss_spike_threshold and is_chief():
        spikes = cb.LossSpikeWarning(
            cfg.loss_spike_threshold,
            checkpoint_dir=os.path.join(cfg.model_dir, cb.CHECKPOINT_DIR),
            log=lambda message: print(f"pretrain: {message}", flush=True),
        )
        callbacks.append(spikes)
    start = time.time()
    history = fit_resumable(model, make_dataset, callbacks, epochs, keras_steps,
                            verbose=cfg.verbose, validation_data=eval_dataset)
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


def find_eval_files(cfg):
    """`eval_files`, or the `eval/` split next to the training shards."""
    from tfbert.data.pretraining.writer import EVAL_DIR, METADATA_FILE, expand_files

    if cfg.eval_files == "none":
        return ""
    if cfg.eval_files:
        expand_files(cfg.eval_files, what="eval file")  # a clear error when missing
        return cfg.eval_files
    first = expand_files(cfg.train_files, what="training file")[0]
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
        # Runs stored before the renames hold old names: from_dict takes
        # the plain renames, fold_use_nsp the pair task.
        cfg = config_loader.from_dict(PretrainConfig, fold_use_nsp(json.load(f)),
                                   source=config_path)
    weights = find_checkpoint(os.path.join(model_dir, CHECKPOINT_DIR), step)
    vocab_file, lower_case = cfg.vocab_file, cfg.lower_case
    if cfg.init_checkpoint:
        ckpt = checkpoint.read_checkpoint(cfg.init_checkpoint)
        vocab_file, lower_case = ckpt.vocab_file, ckpt.lower_case
    model = build_model(cfg, load_vocab(vocab_file))
    ids = np.array([[2, 5, 6, 3]], "int32")
    x = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids),
         "masked_lm_positions": np.ones([1, cfg.max_predictions_per_seq], "int32")}
    if cfg.span_boundary_objective:
        from tfbert.models.pretrainer import SPAN_INPUTS

        x.update({name: np.ones([1, cfg.max_predictions_per_seq], "int32") for name in SPAN_INPUTS})
    model(x)  # build the variables, then load the saved ones into them
    model.load_weights(weights)
    out = export_dir or os.path.join(model_dir, f"pretrained-step-{step}")
    model.save_checkpoint(out, vocab_file, lower_case, source=f"tfbert pretraining, step {step} ({weights})")
    print(f"Wrote the weights of step {step} as a tfbert checkpoint directory: {out}")
    return out
