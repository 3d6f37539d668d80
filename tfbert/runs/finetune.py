"""A fine-tuning experiment as `tools/finetune.py` runs it, as one library call.

`FinetuneConfig` is the YAML (`task:`, `train:`, optional `grid:`, the
encoder and the runtime); `run_experiment` trains every grid setting
(`tfbert.tasks.runner.finetune`), keeps the one the validation data chose,
writes the dev predictions, exports it and writes `results.json` (atomically).
The script only parses flags, calls it and prints.

Example (one setting, a random tiny encoder):
>>> import tempfile
>>> cfg = FinetuneConfig(
...     task={"train_file": "tests/data/finetune/sentiment_train.tsv",
...           "dev_file": "tests/data/finetune/sentiment_dev.tsv", "seq_length": 16},
...     train=TrainConfig(epochs=1, steps_per_epoch=2, batch_size=8, jit_compile=False,
...                       verbose=0, tensorboard=False),
...     preset="tiny", encoder={"vocab_size": 1931},
...     vocab_file="tests/data/pretraining/vocab.txt", model_dir=tempfile.mkdtemp())
>>> summary = run_experiment("classification", cfg, log=lambda line: None)
>>> summary["main_metric"], len(summary["dev_scores"]), os.path.isdir(summary["export_dir"])
('accuracy', 1, True)
"""

import dataclasses
import itertools
import os
import shutil
import tempfile
import time
from typing import Union

import numpy as np

from tfbert import config_loader
from tfbert.atomic import write_json
from tfbert.tasks import get_task
from tfbert.train.evaluation import selection_key
from tfbert.train.multi_worker import is_chief
from tfbert.train.run_config import claim_model_dir
from tfbert.train.strategy import STRATEGIES
from tfbert.train.train_config import TrainConfig


@dataclasses.dataclass
class GridConfig:
    """Lists to try (each combination trains; the validation score picks one)."""

    learning_rate: list = dataclasses.field(default_factory=list)
    batch_size: list = dataclasses.field(default_factory=list)
    epochs: list = dataclasses.field(default_factory=list)

    def __post_init__(self):
        config_loader.validate(self)


@dataclasses.dataclass
class FinetuneConfig:
    """The fine-tuning YAML: `task:` (the task's own config), `train:`, `grid:`,
    the encoder and the runtime."""

    task: dict = dataclasses.field(default_factory=dict)
    train: TrainConfig = dataclasses.field(default_factory=TrainConfig)
    grid: GridConfig = dataclasses.field(default_factory=GridConfig)
    # --- Encoder: a tfbert checkpoint dir, or a preset + vocab for random init ---
    init_checkpoint: str = ""
    preset: str = ""
    # Random init of any architecture: BertConfig fields over the preset
    # (`--set encoder.num_layers=6`), or the path of a BertConfig YAML.
    encoder: Union[dict, str] = dataclasses.field(default_factory=dict)
    vocab_file: str = ""
    lower_case: bool = True
    # --- Runtime ---
    model_dir: str = ""
    export_dir: str = ""
    export_jit_compile: bool = False  # XLA in the exported model (tfbert.export.compiled_call)
    distribution_strategy: str = config_loader.one_of(STRATEGIES, "off")
    num_devices: int = config_loader.at_least(0, 0)  # 0: all
    tpu: str = ""  # TPU name or grpc:// address for distribution_strategy: tpu

    def __post_init__(self):
        config_loader.validate(self)


def random_init_config(cfg, what="random init"):
    """The `BertConfig` of a randomly initialised encoder from `cfg.preset`,
    `cfg.encoder` (BertConfig fields, or a YAML path) and `cfg.vocab_file`;
    None with `cfg.init_checkpoint`. Shared by fine-tuning and distillation."""
    from tfbert.config import BertConfig

    if cfg.init_checkpoint:
        if cfg.encoder:
            raise ValueError("encoder: settings apply to random init only; an init_checkpoint "
                             "brings its own architecture.")
        return None
    if not (cfg.preset or cfg.encoder) or not cfg.vocab_file:
        raise ValueError("Set --init_checkpoint, or vocab_file with preset and/or encoder "
                         f"settings for {what}.")
    if isinstance(cfg.encoder, str):
        return BertConfig.from_yaml(cfg.encoder)
    return BertConfig.from_preset(cfg.preset or "base", **cfg.encoder)


def grid_settings(cfg):
    """`[TrainConfig, ...]`: one per combination of the grid lists (or just `cfg.train`)."""
    axes = {k: v for k, v in dataclasses.asdict(cfg.grid).items() if v}
    if not axes:
        return [cfg.train]
    names = list(axes)
    return [dataclasses.replace(cfg.train, **dict(zip(names, values)))
            for values in itertools.product(*(axes[n] for n in names))]


def task_config_of(task_name, settings, overrides=(), source="config"):
    """The config of task `task_name` from the `task:` section `settings`,
    checked; errors name `<source>:task` and the key (`task.<key>`)."""
    return config_loader.from_dict(get_task(task_name).config_class, settings,
                                source=f"{source}:task", overridden=overrides, prefix="task.")


def prepare_experiment(task_name, cfg, overrides=(), source="config", overwrite=False):
    """Checks everything a run needs before any work and claims `cfg.model_dir`
    (`claim_model_dir`); returns `(task config, random-init BertConfig or None)`.
    Errors are one line (ValueError, FileNotFoundError, TypeError)."""
    if not cfg.model_dir:
        raise ValueError("Set --model_dir (or model_dir in the YAML).")
    task_config = task_config_of(task_name, cfg.task, overrides, source)
    random_init = random_init_config(cfg)
    claim_model_dir(cfg.model_dir, {"task_name": task_name, **dataclasses.asdict(cfg)},
                    overwrite=overwrite, name="finetune_config.json", write=is_chief(),
                    renamed=config_loader.renamed_keys(FinetuneConfig))
    return task_config, random_init


def run_experiment(task_name, cfg, overrides=(), source="config", overwrite=False, log=print):
    """Trains every grid setting of `cfg` for task `task_name`, exports the
    best and writes `<model_dir>/results.json`; returns its dict (on a
    non-chief worker of a multi-worker run: None, nothing written).
    `tfbert.train.resume.Preempted` passes through (state is saved)."""
    from tfbert.tasks.runner import export_task, finetune
    from tfbert.train.strategy import get_strategy

    task_config, random_init = prepare_experiment(task_name, cfg, overrides, source, overwrite)
    task_class = get_task(task_name)
    strategy = get_strategy(cfg.distribution_strategy, num_devices=cfg.num_devices or None,
                            tpu=cfg.tpu)
    export_dir = cfg.export_dir or os.path.join(cfg.model_dir, "export", str(int(time.time())))
    settings = grid_settings(cfg)
    rows, best, best_row = [], None, None
    for train in settings:
        run_dir = cfg.model_dir
        if len(settings) > 1:
            run_dir = os.path.join(cfg.model_dir, "grid",
                                   f"lr{train.learning_rate}_bs{train.batch_size}_ep{train.epochs}")
        result = finetune(
            task_class.from_config(task_config), train, run_dir, init_checkpoint=cfg.init_checkpoint or None,
            encoder_config=random_init, vocab_file=cfg.vocab_file or None,
            lower_case=cfg.lower_case, strategy=strategy)
        chosen = result.dev_scores[result.best_epoch - 1]
        rows.append({"learning_rate": result.summary["learning_rate"],
                     "batch_size": result.summary["batch_size"],
                     "epochs": result.summary["epochs"], "best_epoch": result.best_epoch,
                     result.main_metric: result.best_score,
                     "selection_score": selection_key(chosen, result.main_metric),
                     "seconds": round(result.seconds, 1)})
        if best is None or _better(rows[-1], best_row, result.main_metric):
            best, best_row = result, rows[-1]  # only the best run's model stays in memory
        del result

    if len(settings) > 1:
        log(grid_table(rows, best.main_metric))
    # Equal on every worker of a multi-worker run (replicas stay in sync).
    checksum = float(sum(np.sum(w.numpy(), dtype=np.float64) for w in best.model.weights))
    log(f"Weights checksum: {checksum:.12e}")
    # Every worker predicts (multi-worker predict runs collectives); only the
    # chief keeps the files, exports and writes results.json.
    predictions_dir = cfg.model_dir if is_chief() else tempfile.mkdtemp(prefix="tfbert-worker-")
    written = best.task.write_predictions(best.model, best.dev, predictions_dir)
    if not is_chief():
        shutil.rmtree(predictions_dir, ignore_errors=True)
        return None
    out = export_task(best.task, best.model, export_dir, cfg.export_jit_compile)
    summary = {"task": task_name, "main_metric": best.main_metric,
               "best_score": best.best_score, "best_epoch": best.best_epoch,
               **plain_scores([best.dev_scores[best.best_epoch - 1]])[0],
               "dev_scores": plain_scores(best.dev_scores), "grid": rows, "export_dir": out,
               "recipe": best.summary, "selected_on": best.selected_on,
               "prediction_files": written,
               "trainable_params": best.summary.get("trainable_params")}
    # Non-scalar scores of the chosen epoch (multi-label: per_label, thresholds).
    summary.update({k: v for k, v in best.dev_scores[best.best_epoch - 1].items()
                    if isinstance(v, dict)})
    write_json(os.path.join(cfg.model_dir, "results.json"), summary)
    return summary


def grid_table(rows, metric):
    """The grid's dev scores per setting, as a text table."""
    lines = [f"\nDev {metric} per setting:",
             "learning_rate  batch_size  epochs  best_epoch  validation  " + metric]
    for r in rows:
        chosen = r["selection_score"][0] if r["selection_score"] else float("nan")
        lines.append(f"{r['learning_rate']:<13g}  {r['batch_size']:<10}  {r['epochs']:<6}  "
                     f"{r['best_epoch']:<10}  {chosen:<10.4f}  {r[metric]:.4f}")
    return "\n".join(lines)


def _better(row, best_row, metric):
    """Grid: the validation score chooses (the dev score only without one)."""
    key = lambda r: r["selection_score"] or (r[metric],)
    return best_row is None or key(row) > key(best_row)


def plain_scores(scores):
    """The scalar metrics of each epoch's scores, as floats (JSON)."""
    return [{k: float(v) for k, v in s.items() if np.isscalar(v)} for s in scores]
