r"""Fine-tunes BERT on a task and exports a model that takes raw strings.

    python tools/finetune.py --task=classification \
        --config=configs/finetune_sst2.yaml \
        --init_checkpoint=checkpoints/minilm --model_dir=runs/sst2

Tasks (`tfbert.tasks.TASKS`; `--helpfull` lists them): `classification`,
`regression` and `frozen_classification` (TSV/CSV/JSONL with column flags),
`tagging` (CoNLL-2003: NER, or POS with `--set task.tag_column=1`),
`feature_extraction` (no training: exports the features model).

The YAML has three sections (see `configs/finetune_*.yaml`):
`task:` the task's data and head settings (its `config_class`, e.g.
`ClassificationConfig`), `train:` the recipe (`tfbert.train.train_config.TrainConfig`;
defaults are the BERT paper's: AdamW, warmup 10% then linear decay, XLA),
and optionally `grid:` lists of `learning_rate`, `batch_size`, `epochs` to try
(each setting is trained, a dev-score table is printed, the best is exported).
`--set section.key=value` overrides any field, e.g. `--set train.epochs=2`.

After every epoch the task metric is computed on validation data (a
held-out 10% of the training file by default, or `train.validation_file`)
and on `task.dev_file`. The validation score chooses the epoch (and the grid
setting); the dev file is only reported (`results.json` says which data
chose). The chosen weights are kept, and the end-to-end SavedModel (`serving_default`
takes `text`, plus `text_b` for pairs) is written to `--export_dir` or
`<model_dir>/export/<unix time>`.
"""

import dataclasses
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Union

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging

from tfbert import experiment
from tfbert.tasks import TASKS, get_task
from tfbert.train.multi_worker import is_chief
from tfbert.train.run_config import claim_model_dir
from tfbert.train.evaluation import selection_key
from tfbert.train.train_config import TrainConfig


@dataclasses.dataclass
class GridConfig:
    learning_rate: list = dataclasses.field(default_factory=list)
    batch_size: list = dataclasses.field(default_factory=list)
    epochs: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class FinetuneConfig:
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
    distribution_strategy: str = "off"
    num_devices: int = 0
    tpu: str = ""  # TPU name or grpc:// address for distribution_strategy: tpu


flags.DEFINE_enum("task", None, sorted(TASKS), "The task to fine-tune.")
flags.DEFINE_string("config", None, "YAML file with task:, train: and grid: sections.")
flags.DEFINE_string("init_checkpoint", None, "tfbert checkpoint dir (e.g. converted weights).")
flags.DEFINE_string("model_dir", None, "Directory for checkpoints, logs and the export.")
flags.DEFINE_string("export_dir", None, "SavedModel destination (default <model_dir>/export/<time>).")
flags.DEFINE_boolean(
    "export_jit_compile", None, "Run the exported model's encoder under XLA at bucketed shapes "
    "(lower latency at small batches; the first request of each shape compiles). Off by default: "
    "stock TF Serving runs it only when started with --xla_cpu_compilation_enabled=true.")
flags.DEFINE_string("distribution_strategy", None, "off|one_device|mirrored|multi_worker_mirrored|tpu")
flags.DEFINE_string("tpu", None, "TPU name or grpc:// address (distribution_strategy=tpu).")
flags.DEFINE_multi_string("set", [], "Overrides, section.key=value (values parse as YAML).")
flags.DEFINE_boolean("overwrite", False, "Start fresh in a model_dir that holds another run.")
flags.mark_flags_as_required(["task", "config"])
FLAGS = flags.FLAGS


def load_config():
    overrides = experiment.parse_overrides(FLAGS.set)
    for name in ("init_checkpoint", "model_dir", "export_dir", "export_jit_compile",
                 "distribution_strategy", "tpu"):
        if getattr(FLAGS, name) is not None:
            overrides[name] = getattr(FLAGS, name)
    cfg = experiment.load(FinetuneConfig, FLAGS.config, overrides)
    if not cfg.model_dir:
        raise ValueError("Set --model_dir (or model_dir in the YAML).")
    return cfg, overrides


def encoder_config(cfg):
    """The BertConfig of a randomly initialised encoder (None with a checkpoint)."""
    from tfbert.config import BertConfig

    if cfg.init_checkpoint:
        if cfg.encoder:
            raise ValueError("encoder: settings apply to random init only; an init_checkpoint "
                             "brings its own architecture.")
        return None
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


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    logging.set_verbosity(logging.WARNING)  # TF's INFO lines about SavedModel internals
    try:
        cfg, overrides = load_config()
        task_class = get_task(FLAGS.task)
        task_config = experiment.from_dict(task_class.config_class, cfg.task,
                                           source=f"{FLAGS.config}:task", overridden=overrides,
                                           prefix="task.")
        if not cfg.init_checkpoint and not ((cfg.preset or cfg.encoder) and cfg.vocab_file):
            raise ValueError("Set --init_checkpoint, or vocab_file with preset and/or encoder "
                             "settings for random init.")
        random_init = encoder_config(cfg)
        claim_model_dir(cfg.model_dir, {"task_name": FLAGS.task, **dataclasses.asdict(cfg)},
                        overwrite=FLAGS.overwrite, name="finetune_config.json",
                        write=is_chief())
    except (ValueError, FileNotFoundError, TypeError) as e:
        print(f"finetune: error: {e}", file=sys.stderr)
        return 1

    from tfbert.tasks.runner import export_task, finetune
    from tfbert.train.callbacks import Preempted
    from tfbert.train.strategy import get_strategy

    strategy = get_strategy(cfg.distribution_strategy, num_devices=cfg.num_devices or None,
                            tpu=cfg.tpu)
    export_dir = cfg.export_dir or os.path.join(cfg.model_dir, "export", str(int(time.time())))
    settings = grid_settings(cfg)
    rows, best, best_row = [], None, None
    for i, train in enumerate(settings):
        run_dir = cfg.model_dir
        if len(settings) > 1:
            run_dir = os.path.join(cfg.model_dir, "grid",
                                   f"lr{train.learning_rate}_bs{train.batch_size}_ep{train.epochs}")
        try:
            result = finetune(
                task_class(task_config), train, run_dir,
                init_checkpoint=cfg.init_checkpoint or None,
                encoder_config=random_init,
                vocab_file=cfg.vocab_file or None, lower_case=cfg.lower_case, strategy=strategy)
        except Preempted as e:  # state saved: a clean stop the scheduler can restart
            print(f"finetune: {e}", flush=True)
            return 0
        except (ValueError, FileNotFoundError) as e:
            # Bad input (labels, files, columns): the message names the file and line.
            print(f"finetune: error: {e}", file=sys.stderr)
            return 1
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
        print(f"\nDev {best.main_metric} per setting:")
        print("learning_rate  batch_size  epochs  best_epoch  validation  " + best.main_metric)
        for r in rows:
            chosen = r["selection_score"][0] if r["selection_score"] else float("nan")
            print(f"{r['learning_rate']:<13g}  {r['batch_size']:<10}  {r['epochs']:<6}  "
                  f"{r['best_epoch']:<10}  {chosen:<10.4f}  {r[best.main_metric]:.4f}")

    # Equal on every worker of a multi-worker run (replicas stay in sync).
    checksum = float(sum(np.sum(w.numpy(), dtype=np.float64) for w in best.model.weights))
    print(f"Weights checksum: {checksum:.12e}")
    # Every worker predicts (multi-worker predict runs collectives); only the
    # chief keeps the files, exports and writes results.json.
    predictions_dir = cfg.model_dir if is_chief() else tempfile.mkdtemp(prefix="tfbert-worker-")
    written = best.task.write_predictions(best.model, best.dev, predictions_dir)
    if not is_chief():
        shutil.rmtree(predictions_dir, ignore_errors=True)
        return 0
    out = export_task(best.task, best.model, export_dir, cfg.export_jit_compile)
    summary = {"task": FLAGS.task, "main_metric": best.main_metric, "best_score": best.best_score,
               "best_epoch": best.best_epoch,
               **_plain([best.dev_scores[best.best_epoch - 1]])[0],
               "dev_scores": _plain(best.dev_scores), "grid": rows, "export_dir": out,
               "recipe": best.summary, "selected_on": best.selected_on,
               "prediction_files": written,
               "trainable_params": best.summary.get("trainable_params")}
    # Non-scalar scores of the chosen epoch (multi-label: per_label, thresholds).
    summary.update({k: v for k, v in best.dev_scores[best.best_epoch - 1].items()
                    if isinstance(v, dict)})
    with open(os.path.join(cfg.model_dir, "results.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps({k: summary[k] for k in ("task", "main_metric", "best_score", "export_dir")}))
    return 0


def _better(row, best_row, metric):
    """Grid: the validation score chooses (the dev score only without one)."""
    key = lambda r: r["selection_score"] or (r[metric],)
    return best_row is None or key(row) > key(best_row)


def _plain(scores):
    return [{k: float(v) for k, v in s.items() if np.isscalar(v)} for s in scores]


if __name__ == "__main__":
    app.run(main)
