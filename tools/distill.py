r"""Distils a smaller student from a teacher (DistilBERT-style).

    # 1. a student checkpoint from every k-th layer of a teacher checkpoint
    python tools/distill.py --mode=init_student --teacher=checkpoints/minilm \
        --every_k=3 --output_dir=checkpoints/minilm_l2

    # 2. task distillation: a fine-tuned teacher (any tools/finetune.py export)
    #    labels the training file; the student learns soft targets + gold labels
    python tools/distill.py --mode=task --task=classification \
        --config=configs/finetune_sst2.yaml --teacher=runs/sst2/export/1700000000 \
        --init_checkpoint=checkpoints/minilm_l2 --model_dir=runs/sst2_student \
        [--transfer_file=data/unlabelled.txt] [--set augment_copies=4]

    # 3. general distillation on the masked-LM objective (teacher: a tfbert
    #    checkpoint with mlm/* weights; data: tools/create_pretraining_data.py)
    python tools/distill.py --mode=general --teacher=runs/bert/pretrained \
        --init_checkpoint=checkpoints/student --set train_files='data/*.tfrecord' \
        --model_dir=runs/general --set num_train_steps=10000

Task mode takes the same YAML as `tools/finetune.py` (`task:`, `train:`),
plus a `distill:` section (`tfbert.train.distill.DistillConfig`: temperature,
soft_weight, hard_weight, cosine_weight). The student starts from
`--init_checkpoint` (e.g. the output of mode 1), or from `preset` +
`encoder` settings + `vocab_file` (random init). The best dev epoch is
exported like any task model (`<model_dir>/export/<unix time>` or
`--export_dir`). General mode writes `<model_dir>/pretrained` (a tfbert
checkpoint with the student's encoder and MLM head). The work is
`tfbert.runs.distill.distill`.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging

from tfbert import config_loader
from tfbert.runs.distill import MODES, DistillExperimentConfig, distill

flags.DEFINE_enum("mode", "task", MODES, "init_student | task | general.")
flags.DEFINE_string("task", "classification", "Task name (mode task).")
flags.DEFINE_string("config", None, "YAML with task:, train:, distill: sections.")
flags.DEFINE_string("teacher", None, "Teacher: task export dir (task) or tfbert checkpoint.")
flags.DEFINE_integer("every_k", None, "init_student: keep teacher layers 0, k, 2k, ...")
flags.DEFINE_string("output_dir", None, "init_student: where to write the student checkpoint.")
flags.DEFINE_string("init_checkpoint", None, "Student tfbert checkpoint.")
flags.DEFINE_string("model_dir", None, "Run directory.")
flags.DEFINE_string("export_dir", None, "Task mode: SavedModel destination.")
flags.DEFINE_string("transfer_file", None, "Task mode: unlabelled text for the teacher to label "
                    "(.txt, one text per line, or the task's format).")
flags.DEFINE_multi_string("set", [], "Overrides, section.key=value (values parse as YAML).")
flags.DEFINE_boolean("overwrite", False, "Start fresh in a model_dir that holds another run.")
FLAGS = flags.FLAGS


def load_config():
    return config_loader.load_flags(DistillExperimentConfig, FLAGS, (
        "teacher", "every_k", "output_dir", "init_checkpoint", "model_dir", "export_dir",
        "transfer_file"))


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    logging.set_verbosity(logging.WARNING)
    try:
        cfg, overrides = load_config()
        distill(FLAGS.mode, cfg, FLAGS.task, overrides, FLAGS.config, FLAGS.overwrite)
    except (ValueError, FileNotFoundError, TypeError) as e:
        print(f"distill: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(app.run(main))
