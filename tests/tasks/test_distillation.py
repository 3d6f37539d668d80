"""Task distillation on the shipped real-sentence sentiment data: a 2-layer
student (teacher layers 0 and 5) distilled from the fine-tuned converted
MiniLM classifier keeps at least 95% of the teacher's dev accuracy and
exports like any task model; the same student trained on the gold labels
alone with the same steps is printed next to it, not asserted (see below). Its speed against the teacher is measured side
by side in benchmarks/bench_distill.py.

Caveat, measured: this is one seeded run (seed 1 for teacher and students).
With a teacher trained at seed 42 and students at seeds 1, 2, 3, 42 the
distilled student scored 0.967, 1.000, 0.717, 0.900 against gold-only 0.967,
1.000, 1.000, 0.933: on 60 dev sentences, distillation is not a reliable gain
here, so "beats gold-only" is not asserted; the 95% bound guards the seeded
path, not a general claim."""

import os

import numpy as np
import pytest

from tfbert.tasks.classification import ClassificationConfig, ClassificationTask
from tfbert.tasks.distillation import DistillationTask, augment_texts
from tfbert.tasks.runner import TrainConfig, finetune
from tfbert.train.distill import DistillConfig, init_student

TEACHER_LR = 3e-4  # 4 epochs: confident soft targets (mean logit margin ~5)
STUDENT_LAYERS = [0, 5]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def minilm_ckpt(minilm_dir, tmp_path_factory):
    from tfbert.convert import from_huggingface

    return from_huggingface(minilm_dir, str(tmp_path_factory.mktemp("distill") / "minilm"))


def sentiment_task(data_dir):
    return ClassificationTask(ClassificationConfig(
        train_file=os.path.join(data_dir, "sentiment_train.tsv"),
        dev_file=os.path.join(data_dir, "sentiment_dev.tsv"), seq_length=32))


@pytest.mark.slow
def test_distilled_student_keeps_teacher_accuracy(
        tmp_path, minilm_ckpt, data_dir):
    ckpt = minilm_ckpt
    teacher = finetune(sentiment_task(data_dir),
                       TrainConfig(batch_size=16, learning_rate=TEACHER_LR, epochs=4, seed=1,
                                   jit_compile=False, verbose=0),
                       str(tmp_path / "teacher"), init_checkpoint=ckpt,
                       export_dir=str(tmp_path / "teacher_export"))
    student = init_student(ckpt, str(tmp_path / "student"), layers=STUDENT_LAYERS)
    train = TrainConfig(batch_size=16, learning_rate=3e-4, epochs=2, seed=1, jit_compile=False,
                        verbose=0)
    distilled = finetune(
        DistillationTask(sentiment_task(data_dir), teacher.export_dir,
                         DistillConfig(temperature=1.0, soft_weight=1.0, hard_weight=0.5),
                         augment_copies=4, augment_checkpoint=ckpt),
        train, str(tmp_path / "distilled"), init_checkpoint=student,
        export_dir=str(tmp_path / "distilled_export"))
    gold = finetune(sentiment_task(data_dir), train, str(tmp_path / "gold"),
                    init_checkpoint=student)
    print(f"dev accuracy: teacher {teacher.best_score:.3f}, distilled 2-layer student "
          f"{distilled.best_score:.3f}, gold-only 2-layer student {gold.best_score:.3f}")
    assert distilled.model.encoder.config.num_layers == 2
    assert distilled.best_score >= 0.95 * teacher.best_score
    # The student exports like any task model: strings in, labels out.
    from tfbert.export.task_model import load_task_model
    import tensorflow as tf

    serve = load_task_model(distilled.export_dir).signatures["serving_default"]
    out = serve(text=tf.constant(["The soundtrack was superb .", "Sadly , the laptop was "
                                                                "a nightmare ."]))
    assert [s.decode() for s in out["label"].numpy()] == ["positive", "negative"]


def test_augmented_transfer_set_uses_embedding_neighbours(minilm_ckpt, tmp_path):
    ckpt = minilm_ckpt
    texts = ["Sadly , the movie was awful .", "The staff was wonderful ."]
    out = augment_texts(texts, ckpt, copies=3, rate=1.0, seed=0)
    assert len(out) == 6
    assert out == augment_texts(texts, ckpt, copies=3, rate=1.0, seed=0)  # deterministic
    assert all(o != t for o, t in zip(out, texts * 3))
    # Neighbours of a sentiment word are words, and mostly sentiment words.
    swapped = {o.split()[-2] for o in out[::2]}
    assert swapped and all(w.isalpha() and w != "awful" for w in swapped)
    with pytest.raises(ValueError, match="augment_copies needs augment_checkpoint"):
        DistillationTask(sentiment_task(os.path.join(REPO, "tests", "data", "finetune")),
                         str(tmp_path), augment_copies=2)
