r"""Fine-tunes BERT on a task and exports a model that takes raw strings.

    python tools/finetune.py --task=classification \
        --config=configs/finetune_sst2.yaml \
        --init_checkpoint=checkpoints/minilm --model_dir=runs/sst2

Tasks (`tfbert.tasks.TASKS`; `--helpfull` lists them): `classification`,
`regression` and `frozen_classification` (TSV/CSV/JSONL with column flags),
`tagging` (CoNLL-2003: NER, or POS with `--set task.tag_column=1`),
`feature_extraction` (no training: exports the features model),
`distillation` (a classification or regression student taught by a teacher
export, `task.teacher`; see also `tools/distill.py --mode=task`).

Without a YAML, `--set` alone is enough where the task needs nothing else:

    python tools/finetune.py --task=classification --init_checkpoint=checkpoints/minilm \
        --model_dir=runs/reviews --set task.train_file=reviews.tsv \
        --set task.text_column=review --set task.label_column=stars

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

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging

from tfbert import config_loader
from tfbert.tasks import TASKS
from tfbert.runs.finetune import FinetuneConfig

flags.DEFINE_enum("task", None, sorted(TASKS), "The task to fine-tune.")
flags.DEFINE_string("config", None, "YAML file with task:, train: and grid: sections "
                    "(optional: --set alone is enough where the task needs nothing else).")
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
flags.mark_flags_as_required(["task"])
FLAGS = flags.FLAGS


def load_config():
    """`(FinetuneConfig, overrides)` from --config, the flags and --set."""
    cfg, overrides = config_loader.load_flags(FinetuneConfig, FLAGS, (
        "init_checkpoint", "model_dir", "export_dir", "export_jit_compile",
        "distribution_strategy", "tpu"))
    if not cfg.model_dir:
        raise ValueError("Set --model_dir (or model_dir in the YAML).")
    return cfg, overrides


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    logging.set_verbosity(logging.WARNING)  # TF's INFO lines about SavedModel internals
    from tfbert.runs.finetune import run_experiment
    from tfbert.train.resume import Preempted

    try:
        cfg, overrides = load_config()
        # Every setting is checked before any work (a bad value or file is one line).
        summary = run_experiment(FLAGS.task, cfg, overrides, FLAGS.config or "--set",
                                 FLAGS.overwrite)
    except Preempted as e:  # state saved: a clean stop the scheduler can restart
        print(f"finetune: {e}", flush=True)
        return 0
    except (ValueError, FileNotFoundError, TypeError) as e:
        # Bad input (labels, files, columns): the message names the file and line.
        print(f"finetune: error: {e}", file=sys.stderr)
        return 1
    if summary is not None:  # the chief of a multi-worker run, or a single process
        print(json.dumps({k: summary[k] for k in ("task", "main_metric", "best_score",
                                                  "export_dir")}))
    return 0


if __name__ == "__main__":
    app.run(main)
