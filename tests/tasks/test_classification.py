"""ClassificationTask: data pipeline, labels, scores, raw-string predictions, errors."""

import os

import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertEncoder
from tfbert.tasks.classification import ClassificationConfig, ClassificationTask


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_dataset_tokenizes_in_graph_with_labels(data_dir, make_preprocessor):
    train = os.path.join(data_dir, "sentiment_train.tsv")
    task = ClassificationTask(ClassificationConfig(train_file=train, dev_file=train,
                                                   seq_length=16))
    pre = make_preprocessor(16)
    task.prepare(pre)
    assert task.label_list == ["negative", "positive"] and task.main_metric == "accuracy"
    x, y = next(iter(task.dataset(train, batch_size=4)))
    assert x["input_word_ids"].shape == (4, 16) and y.numpy().tolist() == [1, 0, 0, 0]
    # Same ids as the preprocessor on the raw first sentence.
    want = pre(tf.constant(["I think the video game made me happy ."]))["input_word_ids"]
    np.testing.assert_array_equal(x["input_word_ids"][:1], want)
    # Training: each epoch is one pass over all 160 examples (the last partial
    # batch kept), reshuffled each epoch, repeated.
    batches = list(task.dataset(train, batch_size=64, training=True).take(6))
    assert [b[0]["input_word_ids"].shape[0] for b in batches] == [64, 64, 32] * 2
    all_rows = sorted(tuple(r) for r in task.dataset(train, batch_size=160).get_single_element()[
        0]["input_word_ids"].numpy().tolist())

    def rows(epoch):
        return [tuple(r) + (0,) * (16 - len(r)) for b in epoch
                for r in b[0]["input_word_ids"].numpy().tolist()]

    assert sorted(rows(batches[:3])) == all_rows and sorted(rows(batches[3:])) == all_rows
    assert rows(batches[:3]) != rows(batches[3:])


def test_pairs_and_regression(tmp_path, make_preprocessor):
    path = write(tmp_path, "sts.tsv", "a\tb\tscore\nA man plays .\tA man sings .\t3.5\n"
                                      "Cats sleep .\tThe stock fell .\t0.0\n")
    task = ClassificationTask(ClassificationConfig(
        train_file=path, dev_file=path, text_column="a", text_b_column="b",
        label_column="score"), regression=True)
    task.prepare(make_preprocessor(16))
    assert task.num_outputs == 1 and task.main_metric == "corr"
    x, y = next(iter(task.dataset(path, batch_size=2)))
    np.testing.assert_allclose(y.numpy(), [[3.5], [0.0]])
    assert x["input_type_ids"].numpy()[0].tolist()[:12] == [0] * 6 + [1] * 5 + [0]
    scores = task.score(np.array([[2.0], [0.5]]), np.array([3.5, 0.0]))
    assert scores["pearson"] == pytest.approx(1.0)


def test_scores_multiclass(make_preprocessor):
    task = ClassificationTask(ClassificationConfig(label_list=["a", "b", "c"])).prepare(
        make_preprocessor())
    logits = np.eye(3)[[0, 1, 2, 2]]
    s = task.score(logits, np.array([0, 1, 2, 1]))
    assert s["accuracy"] == 0.75 and "macro_f1" in s and "f1" not in s


def test_predict_from_raw_strings(tiny_config, make_preprocessor):
    task = ClassificationTask(ClassificationConfig(label_list=["neg", "pos"], seq_length=16))
    task.prepare(make_preprocessor(16))
    model = task.build_model(BertEncoder(tiny_config))
    out = task.predict(model, ["Great film .", "Awful food ."])
    assert out["logits"].shape == (2, 2)
    np.testing.assert_allclose(out["probabilities"].sum(1), 1.0, rtol=1e-5)
    assert set(out["label"]) <= {"neg", "pos"}
    x = task.preprocessor(tf.constant(["Great film .", "Awful food ."]))
    np.testing.assert_allclose(out["logits"], model(x), atol=1e-5)


def test_length_bucketing_same_outputs_bounded_shapes(tiny_config, data_dir, make_preprocessor,
                                                      tmp_path):
    from tfbert.export.task_model import IDS_SIGNATURE, load_task_model
    from tfbert.text.packer import BUCKETS

    dev = os.path.join(data_dir, "sentiment_dev.tsv")
    long_text = " ".join(["the long and winding road"] * 10)  # > 32 wordpieces
    tasks = {}
    for bucketing in (True, False):
        task = ClassificationTask(ClassificationConfig(
            train_file=dev, dev_file=dev, seq_length=128, bucketing=bucketing))
        task.prepare(make_preprocessor(128))
        tasks[bucketing] = task
    model = tasks[True].build_model(BertEncoder(tiny_config))
    # Real sentences (about 10 wordpieces) ride in 16-wide batches; a batch
    # with a long text takes the next bucket; without bucketing, all are 128.
    widths = {x["input_word_ids"].shape[1] for x, _ in tasks[True].dataset(dev, batch_size=8)}
    assert widths == {16}
    assert {x["input_word_ids"].shape[1]
            for x, _ in tasks[False].dataset(dev, batch_size=8)} == {128}
    # Training batches too (grouped by length: tests/data/test_batching.py).
    for bucketing, want in ((True, {16}), (False, {128})):
        train = tasks[bucketing].dataset(dev, batch_size=8, training=True).take(20)
        # 60 sentences: 7 batches of 8 and the last partial batch of 4 per epoch.
        assert {x["input_word_ids"].shape[1] for x, _ in train} == want
        assert {x["input_word_ids"].shape[0] for x, _ in train} == {8, 4}
    x = tasks[True].encode({"text": tf.constant(["Great film .", long_text])})
    assert x["input_word_ids"].shape == (2, 64) and set(BUCKETS) >= {16, 64}
    # Same predictions and the same dev metric as fixed padding.
    texts = ["Great film .", long_text, "Awful food ."]
    np.testing.assert_allclose(tasks[True].predict(model, texts)["logits"],
                               tasks[False].predict(model, texts)["logits"], atol=1e-5)
    scores = [t.evaluate(model, t.eval_data(dev, 16)) for t in (tasks[True], tasks[False])]
    assert scores[0] == scores[1]
    # The export pads each request to its bucket, not to seq_length, with the
    # same outputs as the ids signature fed seq_length-wide inputs.
    path = tasks[True].export(model, str(tmp_path / "export"))
    loaded = load_task_model(path)
    served = loaded.signatures["serving_default"](text=tf.constant(texts))
    full = tasks[True].preprocessor(tf.constant(texts))
    np.testing.assert_allclose(served["logits"].numpy(),
                               loaded.signatures[IDS_SIGNATURE](**full)["logits"].numpy(),
                               atol=1e-5)


def test_bad_input_errors(tmp_path, data_dir, make_preprocessor):
    train = os.path.join(data_dir, "sentiment_train.tsv")
    dev = write(tmp_path, "dev.tsv", "sentence\tlabel\nFine .\tpositive\nMeh .\tneutral\n")
    task = ClassificationTask(ClassificationConfig(train_file=train, dev_file=dev))
    task.prepare(make_preprocessor())
    with pytest.raises(ValueError, match=r"dev\.tsv, line 3: label 'neutral' is not in the "
                                         r"label list \['negative', 'positive'\]"):
        task.eval_data(dev, 8)
    # No dev file set: the key is named (an empty path once read "Data file not found: ").
    with pytest.raises(ValueError, match=r"^classification: task\.dev_file is not set; each "
                                         r"epoch is scored on it"):
        task.eval_data("", 8)
    task = ClassificationTask(ClassificationConfig(train_file=train, text_column="text"))
    with pytest.raises(ValueError, match=r"sentiment_train\.tsv, line 1: no column named 'text'"):
        task.prepare(make_preprocessor())
    one = write(tmp_path, "one.tsv", "sentence\tlabel\nFine .\tpositive\n")
    with pytest.raises(ValueError, match="at least 2 labels"):
        ClassificationTask(ClassificationConfig(train_file=one)).prepare(make_preprocessor())
    with pytest.raises(ValueError, match=r"empty\.tsv: the file is empty"):
        ClassificationTask(ClassificationConfig(train_file=write(tmp_path, "empty.tsv", ""))
                           ).prepare(make_preprocessor())


def test_multi_label_is_chosen_by_from_config_not_by_new():
    from tfbert.tasks.classification import MultiLabelClassificationTask

    config = {"text_column": "t", "label_column": "l", "multi_label": True}
    assert type(ClassificationTask.from_config(config)) is MultiLabelClassificationTask
    assert type(ClassificationTask.from_config({"text_column": "t"})) is ClassificationTask
    with pytest.raises(ValueError, match=r"ClassificationTask with multi_label: true: build it "
                                         r"with ClassificationTask.from_config"):
        ClassificationTask(config)
