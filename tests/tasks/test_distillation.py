"""Task distillation on real text with headroom: which family of standard-
library modules a docstring sentence comes from (5 classes; this machine's
Python; `tfbert.datasets.docstring_families`), with 20 gold sentences per class,
200 unlabelled sentences per class and 60 dev sentences per class.

The teacher is the converted all-MiniLM-L6-v2 fine-tuned on the gold
sentences. A 2-layer student (teacher layers 0 and 5) distilled from it,
with the unlabelled sentences as a transfer set (`transfer_file`: the
teacher labels them), learns the teacher's labels and exports like any task
model. How it compares, over seeds, with the same student trained on the
gold labels alone at equal steps, and how much of the teacher's accuracy it
keeps, is `python benchmarks/bench_distill.py --seeds=1,2,3`
(docs/smaller_models.md's table): a claim about means over seeds, measured
there, not asserted on one seed here."""

import os

import numpy as np
import pytest

from tfbert.tasks.classification import ClassificationConfig, ClassificationTask
from tfbert.tasks.distillation import DistillationTask, augment_texts, read_transfer_file
from tfbert.tasks.runner import TrainConfig, finetune
from tfbert.train.distill import DistillConfig, init_student

from tfbert.datasets import docstring_families

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def minilm_ckpt(minilm_checkpoint):
    return minilm_checkpoint  # converted once per run (tests/conftest.py)


def sentiment_task(data_dir):
    return ClassificationTask(ClassificationConfig(
        train_file=os.path.join(data_dir, "sentiment_train.tsv"),
        dev_file=os.path.join(data_dir, "sentiment_dev.tsv"), seq_length=32))


def docstring_classification(data):
    return ClassificationTask(ClassificationConfig(
        train_file=str(data / "train.tsv"), dev_file=str(data / "dev.tsv"),
        seq_length=docstring_families.SEQ_LENGTH))


@pytest.mark.slow
def test_distilled_student_learns_the_teachers_labels_and_serves(tmp_path, minilm_ckpt):
    """Over a minute: the teacher is MiniLM fine-tuned for real (a teacher that
    knows nothing teaches nothing; half the benchmark's epochs), then the
    student trains a quarter of the benchmark's steps; nothing smaller shows a
    student taking a teacher's labels."""
    import keras
    import tensorflow as tf

    from tfbert.export.task_model import load_task_model

    data = tmp_path / "data"
    sizes = docstring_families.build_docstring_task(str(data), **docstring_families.TASK_SIZES)
    assert sizes == {"train": 100, "dev": 300, "transfer": 1000}
    # Half the benchmark teacher's 8 epochs: dev accuracy 0.71 against its 0.75
    # (docs/smaller_models.md), above the 0.6 this test needs, at half the cost;
    # its 2-layer student then scores 0.62 and agrees with it on 0.77.
    teacher = finetune(docstring_classification(data),
                       TrainConfig(**{**docstring_families.TEACHER_TRAIN, "epochs": 4},
                                   jit_compile=False, verbose=0),
                       str(tmp_path / "teacher"), init_checkpoint=minilm_ckpt,
                       export_dir=str(tmp_path / "teacher_export"))
    keras.backend.clear_session()
    student = init_student(minilm_ckpt, str(tmp_path / "student"),
                           layers=docstring_families.STUDENT_LAYERS)
    train = TrainConfig(**{**docstring_families.STUDENT_TRAIN, "epochs": 1}, seed=1,
                        jit_compile=False, verbose=0)
    distilled = finetune(
        DistillationTask(docstring_classification(data), teacher.export_dir,
                         DistillConfig(**docstring_families.DISTILL),
                         transfer_file=str(data / "transfer.txt")),
        train, str(tmp_path / "distilled"), init_checkpoint=student,
        export_dir=str(tmp_path / "distilled_export"))
    assert distilled.model.encoder.config.num_layers == 2
    assert distilled.summary["total_steps"] == 75

    # The student's export and the teacher's, on the dev sentences: strings in, labels out.
    dev, labels = distilled.task.task.read(str(data / "dev.tsv"))
    names = np.array(distilled.task.label_list)

    def served(export_dir):
        serve = load_task_model(export_dir).signatures["serving_default"]
        return np.array([p.decode() for i in range(0, len(dev.text), 64) for p in
                         serve(text=tf.constant(dev.text[i:i + 64]))["label"].numpy()])

    student_labels, teacher_labels = served(distilled.export_dir), served(teacher.export_dir)
    accuracy = float(np.mean(student_labels == names[labels]))
    agreement = float(np.mean(student_labels == teacher_labels))
    print(f"dev accuracy: teacher {teacher.best_score:.3f}, distilled 2-layer student "
          f"{distilled.best_score:.3f} (served {accuracy:.3f}), agreeing with the teacher on "
          f"{agreement:.3f}")
    assert teacher.best_score >= 0.6  # 5 classes: far above chance, else nothing is tested
    assert abs(accuracy - distilled.best_score) <= 1 / len(labels)  # the export is the model
    assert accuracy >= 0.5
    assert agreement >= 0.6


def test_transfer_file_reads_lines_or_the_task_format(tmp_path):
    task = sentiment_task(os.path.join(REPO, "tests", "data", "finetune"))
    (tmp_path / "pool.txt").write_text("First sentence .\n\nSecond\tone , with a tab .\n")
    assert read_transfer_file(task, str(tmp_path / "pool.txt")) == {
        "text": ["First sentence .", "Second\tone , with a tab ."]}
    # The task's own format and text column; no label column needed.
    (tmp_path / "pool.tsv").write_text("id\tsentence\n1\tA fine day .\n2\tRain again .\n")
    assert read_transfer_file(task, str(tmp_path / "pool.tsv")) == {
        "text": ["A fine day .", "Rain again ."]}
    (tmp_path / "bad.tsv").write_text("text\nA fine day .\n")
    with pytest.raises(ValueError, match=r"transfer_file: .*bad.tsv, line 1: no column named "
                                         r"'sentence'"):
        read_transfer_file(task, str(tmp_path / "bad.tsv"))
    with pytest.raises(FileNotFoundError, match="transfer_file: file not found"):
        DistillationTask(task, str(tmp_path), transfer_file=str(tmp_path / "missing.txt"))


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


def test_transfer_set_rows_gold_then_augmented_then_transfer_file(tmp_path):
    """Gold rows keep their labels (weight 1); augmented copies and transfer-file
    rows follow with zero targets and weight 0; the teacher labels every row."""
    import tensorflow as tf

    from tfbert import BertConfig, BertEncoder, checkpoint
    from tfbert.export.task_model import load_task_model

    data = os.path.join(REPO, "tests", "data", "finetune")
    vocab = os.path.join(REPO, "tests", "data", "pretraining", "vocab.txt")
    config = BertConfig.from_preset("tiny", vocab_size=1931)
    teacher = finetune(sentiment_task(data),
                       TrainConfig(epochs=1, steps_per_epoch=2, batch_size=8, jit_compile=False,
                                   verbose=0),
                       str(tmp_path / "teacher"), encoder_config=config, vocab_file=vocab,
                       export_dir=str(tmp_path / "export"))
    words = checkpoint.save_checkpoint(str(tmp_path / "words"), config,
                                       BertEncoder(config).get_named_weights(), vocab, True)
    (tmp_path / "pool.txt").write_text("The service was slow .\nA lovely quiet evening .\n")
    task = sentiment_task(data)
    task.prepare(teacher.task.preprocessor)
    distill = DistillationTask(task, teacher.export_dir, augment_copies=2,
                               augment_checkpoint=words, transfer_file=str(tmp_path / "pool.txt"))
    texts, targets, weights, soft = distill.transfer_set(task.config.train_file)
    gold_texts, gold_targets = task.read(task.config.train_file)
    n = len(gold_targets)
    assert len(texts["text"]) == len(targets) == len(weights) == len(soft) == 3 * n + 2
    assert texts["text"][:n] == list(gold_texts.text)
    assert texts["text"][3 * n:] == ["The service was slow .", "A lovely quiet evening ."]
    np.testing.assert_array_equal(targets[:n], gold_targets)
    assert not targets[n:].any()
    np.testing.assert_array_equal(weights, [1.0] * n + [0.0] * (2 * n + 2))
    serve = load_task_model(teacher.export_dir).signatures["serving_default"]
    want = serve(text=tf.constant(texts["text"][-2:]))["logits"].numpy()
    np.testing.assert_allclose(soft[-2:], want, atol=1e-5)


def test_distillation_is_a_listed_task_built_from_its_config(tmp_path):
    """`TASKS["distillation"]` from a `task:` dict (the student's
    ClassificationConfig fields plus the teacher) trains through `finetune`
    like any task, and exports the student."""
    from tfbert import BertConfig
    from tfbert.tasks import TASKS, Task

    data = os.path.join(REPO, "tests", "data", "finetune")
    vocab = os.path.join(REPO, "tests", "data", "pretraining", "vocab.txt")
    config = BertConfig.from_preset("tiny", vocab_size=1931)
    train = TrainConfig(epochs=1, steps_per_epoch=2, batch_size=8, jit_compile=False, verbose=0,
                        validation_fraction=0.0)
    task_dict = {"train_file": os.path.join(data, "sentiment_train.tsv"),
                 "dev_file": os.path.join(data, "sentiment_dev.tsv"), "seq_length": 32}
    with pytest.raises(ValueError, match="distillation needs task.teacher"):
        finetune(TASKS["distillation"](task_dict), train, str(tmp_path / "none"),
                 encoder_config=config, vocab_file=vocab)
    teacher = finetune(sentiment_task(data), train, str(tmp_path / "teacher"),
                       encoder_config=config, vocab_file=vocab, export_dir=str(tmp_path / "t"))
    task = TASKS["distillation"]({**task_dict, "teacher": teacher.export_dir,
                                  "distill": {"temperature": 3.0}})
    assert isinstance(task, Task) and task.distill.temperature == 3.0
    result = finetune(task, train, str(tmp_path / "student"), encoder_config=config,
                      vocab_file=vocab, export_dir=str(tmp_path / "s"))
    assert result.task.name == "distillation" and result.main_metric == "accuracy"
    assert result.summary["task"] == "classification"  # the student task's summary
    assert result.task.label_list == teacher.task.label_list
    assert os.path.isfile(os.path.join(result.export_dir, "saved_model.pb"))


@pytest.mark.parametrize("setting, message", [
    ({"multi_label": True, "label_separator": ","}, "not multi_label: true"),
    ({"long_text": "windows"}, "set long_text: truncate"),
    ({"augment_copies": 2}, "augment_copies needs"),
])
def test_unsupported_settings_are_refused_in_one_line(setting, message):
    """The soft targets are one softmax per text: multi-label and windowed
    students are refused before anything loads, not trained on the wrong thing."""
    from tfbert.tasks import TASKS

    with pytest.raises(ValueError, match=message) as e:
        TASKS["distillation"]({"teacher": "teacher_export", **setting})
    assert "\n" not in str(e.value)
