"""TaggingTask with `long_text="windows"`: every word of a long text tagged,
each from the window where it has the most context, in training, evaluation,
`predict` and the export."""

import os

import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertEncoder
from tfbert.export.task_model import load_task_model
from tfbert.tasks.tagging import IGNORE, TaggingConfig, TaggingTask
from tfbert.text.windows import window_spans


def make_task(make_preprocessor, data_dir, seq_length=12, **kwargs):
    train = os.path.join(data_dir, "ner_train.conll")
    task = TaggingTask(TaggingConfig(train_file=train, dev_file=train, seq_length=seq_length,
                                     **kwargs))
    return task.prepare(make_preprocessor(seq_length))


def long_document(data_dir):
    """The shipped dev sentences as one text (a real document of several sentences)."""
    words = []
    with open(os.path.join(data_dir, "ner_dev.conll"), encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("-DOCSTART-"):
                words.append(line.split()[0])
    return " ".join(words[:80])


def test_window_labels_on_first_pieces(make_preprocessor, data_dir):
    task = make_task(make_preprocessor, data_dir, long_text="windows", doc_stride=4)
    words = tf.ragged.constant([["Angela", "Merkel", "visited", "unbelievably", "low", "Paris",
                                 "yesterday", "with", "Reuters", "reporters", "."]])
    labels = tf.ragged.constant([[3, 6, 0, 0, 0, 1, 0, 0, 2, 0, 0]], tf.int32)
    pieces = task.word_pieces(words)
    spans, inputs, window_labels = task.pack_windows(pieces, labels)
    flat = pieces.merge_dims(1, 2)[0].numpy()
    lengths = pieces.row_lengths(axis=2).flat_values.numpy()
    first = np.zeros(len(flat), bool)
    first[np.concatenate([[0], np.cumsum(lengths)[:-1]])] = True
    piece_label = np.full(len(flat), IGNORE)
    piece_label[first] = labels.flat_values.numpy()
    ids, wl = inputs["input_word_ids"].numpy(), window_labels.numpy()
    assert int(spans["num_windows"][0]) == 1 + -(-(len(flat) - 10) // 4) > 2
    for w, (start, length) in enumerate(zip(spans["window_start"].numpy(),
                                            spans["window_length"].numpy())):
        np.testing.assert_array_equal(ids[w, 1:1 + length], flat[start:start + length])
        np.testing.assert_array_equal(wl[w, 1:1 + length], piece_label[start:start + length])
        assert wl[w, 0] == IGNORE and (wl[w, 1 + length:] == IGNORE).all()


def test_every_word_tagged_from_its_best_window(tiny_config, make_preprocessor, data_dir):
    windows = make_task(make_preprocessor, data_dir, long_text="windows", doc_stride=5)
    truncate = make_task(make_preprocessor, data_dir)
    model = windows.build_model(BertEncoder(tiny_config))
    text = long_document(data_dir)
    words = text.split(" ")
    tagged = windows.predict(model, [text, "Angela Merkel visited Paris ."])
    assert [w for w, _, _, _ in tagged[0]] == words  # every word, in order
    assert all(text[s:e] == w for w, _, s, e in tagged[0])
    assert len(truncate.predict(model, [text])[0]) < len(words)  # the first window only
    # A sentence that fits one window: the same tags as truncation.
    assert tagged[1] == truncate.predict(model, ["Angela Merkel visited Paris ."])[0]
    # Each word's logits are its first piece's in the window with the most context.
    word_pieces = windows.text_words(tf.constant([text]))[0]
    logits, covered = windows.word_logits(model, word_pieces)
    spans, inputs = windows.pack_windows(word_pieces)
    per_window = model(inputs).numpy()
    lengths = word_pieces.row_lengths(axis=2).flat_values.numpy()
    first_piece = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    starts, sizes = spans["window_start"].numpy(), spans["window_length"].numpy()
    assert covered.numpy().all()
    for word, piece in enumerate(first_piece):
        score = [min(piece - s, s + n - 1 - piece) + 0.01 * n if s <= piece < s + n else -1
                 for s, n in zip(starts, sizes)]
        best = int(np.argmax(score))  # ties: the first window
        np.testing.assert_allclose(logits[word], per_window[best, 1 + piece - starts[best]],
                                   atol=1e-5)


def test_training_windows_and_whole_document_scores(tiny_config, make_preprocessor, data_dir,
                                                    tmp_path):
    windows = make_task(make_preprocessor, data_dir, long_text="windows", max_windows=3)
    train = windows.config.train_file
    sentences = windows.read(train)
    pieces = windows.word_pieces(tf.ragged.constant(sentences.words))
    want = int(tf.reduce_sum(window_spans(pieces.merge_dims(1, 2).row_lengths(), 10,
                                          max_windows_per_text=3)["num_windows"]))
    assert windows.num_examples(train) == want > len(sentences)
    x, y, weights = next(iter(windows.dataset(train, batch_size=8, training=True)))
    assert x["input_word_ids"].shape[0] == 8 and (weights.numpy() > 0).any()
    model = windows.build_model(BertEncoder(tiny_config))
    scores = windows.evaluate(model, windows.eval_data(train, 16))
    assert 0 <= scores["f1"] <= 1 and 0 <= scores["accuracy"] <= 1
    # Wide enough windows hold every sentence: the same scores as truncation.
    wide = [make_task(make_preprocessor, data_dir, seq_length=64, long_text=mode)
            for mode in ("windows", "truncate")]
    assert (wide[0].evaluate(model, wide[0].eval_data(train, 16))
            == wide[1].evaluate(model, wide[1].eval_data(train, 16)))
    # The export serves the same tags as predict, one row per text however long.
    texts = [long_document(data_dir), "", "Reuters reported low ."]
    want = windows.predict(model, texts)
    served = load_task_model(windows.export(model, str(tmp_path / "export"))).signatures[
        "serving_default"](text=tf.constant(texts))
    for i, row in enumerate(want):
        n = int(served["num_words"][i])
        assert n == len(row)
        assert [t.decode() for t in served["tags"][i, :n].numpy()] == [t for _, t, _, _ in row]
    assert served["word_probabilities"].shape[:2] == served["tags"].shape


def test_config_errors():
    with pytest.raises(ValueError, match="long_text"):
        TaggingConfig(long_text="all")
    with pytest.raises(ValueError, match="doc_stride"):
        TaggingConfig(doc_stride=0)
