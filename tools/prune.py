r"""Removes the least important attention heads of a fine-tuned run and exports
the smaller model (Michel, Levy & Neubig 2019).

    python tools/prune.py --model_dir=runs/sst2 --fraction=0.3 \
        --export_dir=saved_models/sst2_pruned --epochs=1

`--model_dir` is a `tools/finetune.py` run of the classification or
regression task. The heads are ranked by importance on its dev file (all
layers together), the `--fraction` least important go (with `--step`,
iteratively: `--step` of the heads at a time, the rest scored again after
each, as Michel et al.'s Section 4.1), `--epochs` (default
0) fine-tunes the smaller model again on the run's training file, and the
strings-in SavedModel is written to `--export_dir`. The last line printed is
one JSON object: `heads_before`, `heads_after`, `dev_score_before`,
`dev_score_after` (and `dev_score_pruned`, before any fine-tuning),
`export_dir`. The work is `tfbert.runs.prune.prune_run`.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging

flags.DEFINE_string("model_dir", None, "A tools/finetune.py run (classification or regression).")
flags.DEFINE_float("fraction", None, "The fraction of the heads to remove, in [0, 1).")
flags.DEFINE_string("export_dir", None, "Where the pruned strings-in SavedModel goes.")
flags.DEFINE_integer("epochs", 0, "Epochs of fine-tuning after pruning (0: none).")
flags.DEFINE_float("step", 1.0, "Prune iteratively, this fraction of the heads at a time, "
                   "scoring the rest again after each step (default: all at once).")
flags.mark_flags_as_required(["model_dir", "fraction", "export_dir"])
FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    logging.set_verbosity(logging.WARNING)
    from tfbert.runs.prune import prune_run

    try:
        summary = prune_run(FLAGS.model_dir, FLAGS.fraction, FLAGS.export_dir, FLAGS.epochs,
                            FLAGS.step)
    except (ValueError, FileNotFoundError, TypeError) as e:
        print(f"prune: error: {e}", file=sys.stderr)
        return 1
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(app.run(main))
