"""Distillation as one library call: `distill(mode, cfg, ...)`.

Three modes (`MODES`), one config (`DistillExperimentConfig`: the YAML's
`task:`, `train:` and `distill:` sections, the teacher and the student):

- `init_student`: a student checkpoint from every k-th layer (or the listed
  `layers`) of a teacher checkpoint (`tfbert.train.distill.init_student`).
- `task`: a fine-tuned teacher export labels the training data and a
  classification or regression student learns soft targets plus gold
  labels (`tfbert.tasks.distillation.DistillationTask`, trained by
  `tfbert.tasks.runner.finetune`); the best epoch is exported.
- `general`: masked-LM distillation from a teacher checkpoint with `mlm/*`
  weights (`tfbert.train.distill.MlmDistiller`); writes
  `<model_dir>/pretrained`.

Each mode checks its settings first and prints one line at the end; errors
are one line (ValueError, FileNotFoundError, TypeError).

Example (the settings are checked before any checkpoint is read):
>>> distill("general", DistillExperimentConfig(teacher="ckpt"))
Traceback (most recent call last):
ValueError: --mode=general needs --teacher (a tfbert checkpoint with mlm/* weights), train_files (--set train_files=...) and --model_dir.
"""

import dataclasses
import os
import time
from typing import Union

from tfbert import config_loader
from tfbert.train.distill import DistillConfig
from tfbert.train.train_config import TrainConfig

MODES = ("init_student", "task", "general")


@dataclasses.dataclass
class DistillExperimentConfig:
    """The distillation YAML (`task:`, `train:`, `distill:`), the teacher and the student."""

    task: dict = dataclasses.field(default_factory=dict)
    train: TrainConfig = dataclasses.field(default_factory=TrainConfig)
    distill: DistillConfig = dataclasses.field(default_factory=DistillConfig)
    # The teacher: a task SavedModel export (mode task) or a tfbert checkpoint.
    teacher: str = ""
    # init_student: which teacher layers the student keeps.
    every_k: int = config_loader.at_least(0, 0)  # 0: use `layers`
    layers: list = dataclasses.field(default_factory=list)
    output_dir: str = ""
    # The student (task / general): a tfbert checkpoint, or preset + encoder + vocab.
    init_checkpoint: str = ""
    preset: str = ""
    encoder: Union[dict, str] = dataclasses.field(default_factory=dict)
    vocab_file: str = ""
    lower_case: bool = True
    # task mode: a transfer set of this many augmented copies of the training
    # sentences (words swapped for neighbours in augment_checkpoint's word
    # embeddings; default: init_checkpoint), labelled by the teacher.
    augment_copies: int = config_loader.at_least(0, 0)
    augment_checkpoint: str = ""
    # task mode: unlabelled in-domain text the teacher labels too (a .txt, one
    # text per line, or a file in the task's format; labels are not needed).
    transfer_file: str = ""
    # general mode: masked-LM data and schedule.
    train_files: str = ""
    max_predictions_per_seq: int = config_loader.at_least(1, 20)
    num_train_steps: int = config_loader.at_least(1, 1000)
    model_dir: str = ""
    export_dir: str = ""

    def __post_init__(self):
        config_loader.validate(self)


def distill(mode, cfg, task_name="classification", overrides=(), source="config",
            overwrite=False):
    """Runs distillation mode `mode` (one of `MODES`) with `cfg`. Task mode
    only: `task_name` is the student's task, `overrides` and `source` (the
    YAML's path) name the settings in errors, `overwrite` starts fresh in a
    `model_dir` that holds another run."""
    if cfg.transfer_file and mode != "task":
        raise ValueError(f"transfer_file is for --mode=task, not --mode={mode}.")
    if mode == "init_student":
        init_student_mode(cfg)
    elif mode == "task":
        task_mode(cfg, task_name, overrides, source, overwrite)
    else:
        general_mode(cfg)


def student_config(cfg):
    """BertConfig of a randomly initialised student (None with a checkpoint)."""
    from tfbert.runs.finetune import random_init_config

    return random_init_config(cfg, what="a randomly initialised student")


def init_student_mode(cfg):
    from tfbert import checkpoint
    from tfbert.train.distill import init_student

    if not cfg.teacher or not cfg.output_dir:
        raise ValueError("--mode=init_student needs --teacher (a tfbert checkpoint) and "
                         "--output_dir.")
    path = init_student(cfg.teacher, cfg.output_dir, every_k=cfg.every_k or None,
                        layers=cfg.layers or None)
    config = checkpoint.read_checkpoint(path).config
    print(f"Wrote a {config.num_layers}-layer student to {path}")


def task_mode(cfg, task_name, overrides=(), source="config", overwrite=False):
    from tfbert.tasks import get_task
    from tfbert.tasks.distillation import DistillationTask
    from tfbert.runs.finetune import task_config_of
    from tfbert.tasks.runner import finetune
    from tfbert.train.run_config import claim_model_dir

    if not cfg.teacher or not os.path.isdir(cfg.teacher):
        raise FileNotFoundError(f"Teacher export directory not found: {cfg.teacher!r} "
                                "(--teacher: a tools/finetune.py SavedModel export).")
    if not cfg.model_dir:
        raise ValueError("Set --model_dir.")
    task_config = task_config_of(task_name, cfg.task, overrides, source)
    task = DistillationTask(get_task(task_name).from_config(task_config), cfg.teacher, cfg.distill,
                            augment_copies=cfg.augment_copies,
                            augment_checkpoint=cfg.augment_checkpoint or cfg.init_checkpoint,
                            seed=cfg.train.seed, transfer_file=cfg.transfer_file or None)
    random_init = student_config(cfg)
    claim_model_dir(cfg.model_dir, {"mode": "task", "task_name": task_name,
                                    **dataclasses.asdict(cfg)},
                    overwrite=overwrite, name="distill_config.json",
                    renamed=config_loader.renamed_keys(DistillExperimentConfig))
    export_dir = cfg.export_dir or os.path.join(cfg.model_dir, "export", str(int(time.time())))
    result = finetune(task, cfg.train, cfg.model_dir, init_checkpoint=cfg.init_checkpoint or None,
                      encoder_config=random_init, vocab_file=cfg.vocab_file or None,
                      lower_case=cfg.lower_case, export_dir=export_dir)
    print(f"Best dev {result.main_metric}: {result.best_score:.4f} (epoch {result.best_epoch}); "
          f"exported the student to {result.export_dir}")


def general_mode(cfg):
    import keras

    from tfbert import checkpoint
    from tfbert.data.pretraining.writer import pretraining_dataset
    from tfbert.encoder import BertEncoder
    from tfbert.models.pretrainer import BertPretrainer
    from tfbert.text.masking import MaskedLMMasker
    from tfbert.train.distill import MlmDistiller
    from tfbert.train.optimizer import create_optimizer

    if not cfg.teacher or not cfg.train_files or not cfg.model_dir:
        raise ValueError("--mode=general needs --teacher (a tfbert checkpoint with mlm/* "
                         "weights), train_files (--set train_files=...) and --model_dir.")
    teacher_ckpt = checkpoint.read_checkpoint(cfg.teacher)
    if not teacher_ckpt.prefixed_weights("mlm"):
        raise ValueError(f"{teacher_ckpt.weights_path} has no masked-LM head (mlm/*); the "
                         "teacher of general distillation needs one.")
    keras.utils.set_random_seed(cfg.train.seed)
    teacher = BertPretrainer.from_checkpoint(cfg.teacher, next_sentence_task="none")
    if cfg.init_checkpoint:
        student = BertPretrainer.from_checkpoint(cfg.init_checkpoint, next_sentence_task="none")
        vocab_file, lower_case = (checkpoint.read_checkpoint(cfg.init_checkpoint).vocab_file,
                                  teacher_ckpt.lower_case)
    else:
        student = BertPretrainer(BertEncoder(student_config(cfg)), next_sentence_task="none")
        vocab_file, lower_case = cfg.vocab_file, cfg.lower_case
    masker = MaskedLMMasker.from_vocab(teacher_ckpt.vocab_file,
                                       max_predictions=cfg.max_predictions_per_seq)
    dataset = pretraining_dataset(cfg.train_files, cfg.train.batch_size or 32, masker=masker,
                                  seed=cfg.train.seed, next_sentence_task="none")
    model = MlmDistiller(student, teacher, cfg.distill)
    steps = cfg.num_train_steps
    model.compile(optimizer=create_optimizer(cfg.train.learning_rate or 1e-4, steps,
                                             int(cfg.train.warmup_ratio * steps),
                                             weight_decay=cfg.train.weight_decay),
                  jit_compile=cfg.train.jit_compile)
    model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=cfg.train.verbose)
    out = student.save_checkpoint(os.path.join(cfg.model_dir, "pretrained"), vocab_file,
                                  lower_case, source=f"general distillation from {cfg.teacher}")
    print(f"Wrote the distilled student to {out}")
