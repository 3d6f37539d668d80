"""Pretrains BERT (masked LM + next sentence prediction) with `model.fit`.

    python tools/pretrain.py --config=configs/pretrain_tiny.yaml \
        --train_files='data/pretrain-*.tfrecord' --vocab_file=vocab.txt \
        --model_dir=runs/tiny --num_train_steps=10000

Flags override the `--config` YAML; `--set key=value` sets any field of
`PretrainConfig` (e.g. `--set encoder.num_layers=4`, `--set train.batch_size=64`,
`--set pretrain.warmup_steps=500`). The YAML has the layout of every run:
the encoder and the runtime at the top, `train:` (a TrainConfig) and
`pretrain:` (data, masking, length and schedule); the flags below set their
fields (`--batch_size` is `train.batch_size`, `--train_files` is
`pretrain.train_files`). The old flat keys still load, each with a warning
naming its new key.

Training runs in chunks of `steps_per_epoch` steps (Keras epochs). After each
chunk, `<model_dir>/backup` holds the weights, optimizer state and epoch;
rerun the same command after a kill and training resumes at the first
unfinished chunk, with the input pipeline skipping the batches already used.
SIGTERM (a preemption notice) saves at the current step and exits 0; the
rerun continues at that step.

`--budget_minutes=N` trains for N minutes instead of `num_train_steps`:
warmup over `pretrain.warmup_steps`, then the learning rate decays to 0 over the
time spent, and the run stops when the budget is spent. A resumed run keeps
the clock (the backup saves it) and spends only what is left.

At the end, `<model_dir>/pretrained/` is a tfbert checkpoint directory
(encoder + `mlm/*` + `nsp/*` heads + vocab) for fine-tuning and export.

After every epoch the held-out data (`pretrain.eval_files`; by default the `eval/`
split that create_pretraining_data.py writes next to the shards) is
evaluated: `val_mlm_accuracy`, `val_nsp_accuracy`, ... in `log.csv` and
TensorBoard. A jump of the training loss well above its recent level prints
a warning and keeps the last checkpoint from before it. Any saved step
becomes a tfbert checkpoint directory with

    python tools/pretrain.py --model_dir=runs/tiny --export_step=3000 [--export_dir=...]
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags

from tfbert import config_loader
from tfbert.runs.pretrain import (PretrainConfig, PretrainSettings, PretrainTrainConfig,
                                  export_step, run, validate)

flags.DEFINE_string("config", None, "YAML experiment file with PretrainConfig fields.")
flags.DEFINE_multi_string("set", [], "Overrides, key=value (values parse as YAML).")
flags.DEFINE_boolean("overwrite", False, "Start fresh in a model_dir that holds another run.")
flags.DEFINE_integer("export_step", None, "Only write a tfbert checkpoint directory from the "
                     "weights saved at this step in <model_dir>/checkpoints, then exit.")
flags.DEFINE_string("export_dir", None, "Where --export_step writes (default "
                    "<model_dir>/pretrained-step-<step>).")
# Flags for the fields used most, each setting the field of its section.
_TOP_FLAGS = ("model_dir", "vocab_file", "init_checkpoint", "distribution_strategy", "preset",
              "tpu")
_TRAIN_FLAGS = ("batch_size", "learning_rate", "dtype_policy", "jit_compile", "steps_per_epoch",
                "seed")
_PRETRAIN_FLAGS = ("train_files", "num_train_steps", "masking_strategy", "next_sentence_task",
                   "eval_files")
_FLAG_KEYS = {**{name: f"train.{name}" for name in _TRAIN_FLAGS},
              **{name: f"pretrain.{name}" for name in _PRETRAIN_FLAGS + ("budget_minutes",)}}
config_loader.define_flags(PretrainConfig, _TOP_FLAGS)
config_loader.define_flags(PretrainTrainConfig, _TRAIN_FLAGS)
config_loader.define_flags(PretrainSettings, _PRETRAIN_FLAGS)
_OLD_FLAGS = ("mixed_precision", "use_nsp")  # accepted for one release, with a warning
flags.DEFINE_string("mixed_precision", None, "Deprecated: use --dtype_policy.")
flags.DEFINE_boolean("use_nsp", None, "Deprecated: use --next_sentence_task (--nouse_nsp is "
                     "--next_sentence_task=none).")
# Optional (None: no budget), so defined here rather than from the field's type.
flags.DEFINE_float("budget_minutes", None, "PretrainSettings.budget_minutes: train for this "
                   "many minutes (the learning rate decays over them) instead of "
                   "num_train_steps.")
FLAGS = flags.FLAGS


def config_from_flags():
    names = _TOP_FLAGS + _TRAIN_FLAGS + _PRETRAIN_FLAGS + _OLD_FLAGS + ("budget_minutes",)
    return config_loader.load_flags(PretrainConfig, FLAGS, names, keys=_FLAG_KEYS)[0]


def main(argv):
    del argv
    if FLAGS.export_step is not None:
        if not FLAGS.model_dir:
            print("pretrain: error: --export_step needs --model_dir.", file=sys.stderr)
            sys.exit(1)
        try:
            export_step(FLAGS.model_dir, FLAGS.export_step, FLAGS.export_dir)
        except (ValueError, FileNotFoundError) as e:
            print(f"pretrain: error: {e}", file=sys.stderr)
            sys.exit(1)
        return
    try:
        cfg = config_from_flags()
        validate(cfg)
    except (ValueError, FileNotFoundError, TypeError) as e:
        print(f"pretrain: error: {e}", file=sys.stderr)
        sys.exit(1)
    from tfbert.train.resume import Preempted

    try:
        run(cfg, overwrite=FLAGS.overwrite)
    except Preempted as e:  # state saved: a clean stop the scheduler can restart
        print(f"pretrain: {e}", flush=True)
    except (ValueError, FileNotFoundError) as e:
        print(f"pretrain: error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    app.run(main)
