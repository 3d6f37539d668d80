"""ClassificationTask with `long_text="windows"`: every window read in training,
evaluation, `predict` and the exported model; one row per text however long."""

import csv
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertEncoder
from tfbert.tasks.classification import ClassificationConfig, ClassificationTask
from tfbert.text.windows import window_spans


def sentences(data_dir, name="sentiment_dev.tsv"):
    with open(os.path.join(data_dir, name), encoding="utf-8") as f:
        return [row["sentence"] for row in csv.DictReader(f, delimiter="\t")]


def make_task(make_preprocessor, seq_length=16, **kwargs):
    kwargs.setdefault("label_list", ["negative", "positive"])
    task = ClassificationTask(ClassificationConfig(seq_length=seq_length, long_text="windows",
                                                   **kwargs))
    return task.prepare(make_preprocessor(seq_length))


def test_windows_cover_the_text_in_order(make_preprocessor, data_dir):
    task = make_task(make_preprocessor, seq_length=16, doc_stride=7)
    text = " ".join(sentences(data_dir)[:6])
    pieces = task.preprocessor.tokenize(tf.constant([text])).merge_dims(1, 2)[0].numpy()
    spans, inputs = task.windows({"text": tf.constant([text, "Great film ."])})
    ids, mask = inputs["input_word_ids"].numpy(), inputs["input_mask"].numpy()
    n = int(spans["num_windows"][0])
    assert n == 1 + -(-(len(pieces) - 14) // 7) and int(spans["num_windows"][1]) == 1
    for w in range(n):  # [CLS] the window's 14 (or fewer) pieces [SEP]
        start = 7 * w
        body = pieces[start:start + 14]
        cls, sep = task.preprocessor.vocab.cls_id, task.preprocessor.vocab.sep_id
        assert ids[w, 0] == cls and ids[w, len(body) + 1] == sep
        np.testing.assert_array_equal(ids[w, 1:len(body) + 1], body)
        assert mask[w].sum() == len(body) + 2


def test_pairs_window_the_second_text(make_preprocessor, data_dir):
    task = make_task(make_preprocessor, seq_length=16, text_b_column="sentence2")
    question = "Is it good ?"
    passage = " ".join(sentences(data_dir)[:4])
    spans, inputs = task.windows({"text": tf.constant([question]),
                                  "text_b": tf.constant([passage])})
    q = task.preprocessor.tokenize(tf.constant([question])).merge_dims(1, 2)[0].numpy()
    ids, types = inputs["input_word_ids"].numpy(), inputs["input_type_ids"].numpy()
    assert int(spans["num_windows"][0]) > 2
    for w in range(ids.shape[0]):  # every window: [CLS] question [SEP] passage part [SEP]
        np.testing.assert_array_equal(ids[w, 1:1 + len(q)], q)
        assert types[w, 1 + len(q)] == 0 and types[w, 2 + len(q)] == 1
    # Prediction batches count a pair's windows with its first text in them:
    # at most batch_size windows a call, every pair once, in order.
    questions = [question, "Was the food bad ?", "Would you see it again ?"] * 4
    passages = [" ".join(sentences(data_dir)[i:i + 3]) for i in range(12)]
    texts = {"text": questions, "text_b": passages}
    counts = task.windows_per_text(texts)
    alone = task.windows({"text": tf.constant([""] * 12),
                          "text_b": tf.constant(passages)})[0]["num_windows"].numpy()
    assert (counts > alone).any() and counts.max() <= 10
    batches = task.window_text_batches(texts, 10)
    assert [p for b in batches for p in b["text_b"].numpy().astype(str)] == passages
    assert len(batches) < 12  # several pairs a call
    for batch in batches:
        assert int(tf.reduce_sum(task.windows(batch)[0]["num_windows"])) <= 10


def test_pooled_logits_equal_the_windows_logits(tiny_config, make_preprocessor, data_dir):
    text = [" ".join(sentences(data_dir)[:5]), "Awful food .", ""]
    for pooling in ("mean", "max", "first"):
        task = make_task(make_preprocessor, seq_length=16, window_pooling=pooling)
        if pooling == "mean":
            model = task.build_model(BertEncoder(tiny_config))
        spans, inputs = task.windows({"text": tf.constant(text)})
        per_window = model(inputs).numpy()
        rows = spans["row"].numpy()
        want = np.stack([{"mean": np.mean, "max": np.max, "first": lambda x, axis: x[0]}[pooling](
            per_window[rows == r], axis=0) for r in range(3)])
        got = task.predict(model, text)["logits"]
        np.testing.assert_allclose(got, want, atol=1e-5)
    # Truncation reads the first window only: the long text's logits differ.
    truncating = ClassificationTask(ClassificationConfig(
        label_list=["negative", "positive"], seq_length=16)).prepare(make_preprocessor(16))
    assert not np.allclose(truncating.predict(model, text[:1])["logits"],
                           make_task(make_preprocessor).predict(model, text[:1])["logits"])


def test_training_sees_every_window(make_preprocessor, data_dir):
    train = os.path.join(data_dir, "sentiment_dev.tsv")
    task = make_task(make_preprocessor, seq_length=8, train_file=train, doc_stride=3)
    texts = sentences(data_dir)
    lengths = task.preprocessor.tokenize(tf.constant(texts)).merge_dims(1, 2).row_lengths()
    want = int(tf.reduce_sum(window_spans(lengths, 6, doc_stride=3)["num_windows"]))
    assert task.num_examples(train) == want > len(texts)
    # One epoch of training batches: every window once, each with its text's label.
    batches = task.dataset(train, batch_size=16, training=True, seed=1)
    seen = []
    for x, y in batches.take(-(-want // 16)):
        seen += [(tuple(r[m > 0]), int(l)) for r, m, l in
                 zip(x["input_word_ids"].numpy(), x["input_mask"].numpy(), y.numpy())]
    expected = []
    for x, y in task.dataset(train, batch_size=64):
        expected += [(tuple(r[m > 0]), int(l)) for r, m, l in
                     zip(x["input_word_ids"].numpy(), x["input_mask"].numpy(), y.numpy())]
    assert sorted(seen) == sorted(expected) and len(seen) == want


def test_bad_and_extreme_texts(tiny_config, make_preprocessor):
    task = make_task(make_preprocessor, seq_length=16, max_windows=4)
    model = task.build_model(BertEncoder(tiny_config))
    huge = "word " * 100_000
    texts = ["", "   \t\n ", "\x00\x01\x7f", huge, "Great film ."]
    out = task.predict(model, texts, batch_size=2)
    assert out["logits"].shape == (5, 2) and np.isfinite(out["logits"]).all()
    # The cap: a 100,000-word text is read as its first max_windows windows.
    spans, _ = task.windows({"text": tf.constant([huge])})
    assert int(spans["num_windows"][0]) == 4
    # A bare string is not read as one text per character; None is not a text.
    with pytest.raises(TypeError, match=r"^text is one string; pass a list of texts"):
        task.predict(model, "Great film .")
    with pytest.raises(TypeError, match=r"^text\[0\] is NoneType \(None\), not str\.$"):
        task.predict(model, [None])
    with pytest.raises(ValueError, match="long_text"):
        ClassificationConfig(long_text="chunks")
    with pytest.raises(ValueError, match="window_pooling"):
        ClassificationConfig(window_pooling="sum")
    with pytest.raises(ValueError, match="max_windows"):
        ClassificationConfig(max_windows=0)


@pytest.mark.slow
def test_finetune_and_export_read_every_window(tiny_config, make_preprocessor, data_dir,
                                               tmp_path, run_python, uncased_vocab_file):
    from tfbert.tasks.runner import TrainConfig, finetune

    train = os.path.join(data_dir, "sentiment_train.tsv")
    dev = os.path.join(data_dir, "sentiment_dev.tsv")
    task = ClassificationTask(ClassificationConfig(train_file=train, dev_file=dev, seq_length=8,
                                                   long_text="windows", max_windows=8))
    result = finetune(task, TrainConfig(epochs=1, steps_per_epoch=4, batch_size=8,
                                        jit_compile=False, verbose=0), str(tmp_path / "run"),
                      encoder_config=tiny_config, vocab_file=uncased_vocab_file,
                      export_dir=str(tmp_path / "export"))
    assert result.summary["train_examples"] > 160  # windows, not texts
    assert "windows" in result.summary and 0 <= result.dev_scores[0]["accuracy"] <= 1
    texts = [" ".join(sentences(data_dir)[:12]), "Great film .", "", "word " * 5000]
    want = task.predict(result.model, texts)
    out = run_python(f"""
import json, tensorflow as tf
from tfbert.export.task_model import load_task_model
m = load_task_model({str(tmp_path / "export")!r})
out = m.signatures["serving_default"](text=tf.constant({texts!r}))
print(json.dumps({{"logits": out["logits"].numpy().tolist(),
                   "label": [s.decode() for s in out["label"].numpy()]}}))
""")
    served = json.loads(out.strip().splitlines()[-1])
    np.testing.assert_allclose(served["logits"], want["logits"], atol=1e-5)
    assert served["label"] == want["label"].tolist()
