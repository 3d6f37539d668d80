"""`TokenClassifier(long_text="windows")`: long documents (six CoNLL sentences of
the shipped NER data each) trained and tagged whole, window by window, as the
tagging task's `long_text: windows` does."""

import numpy as np
import pytest
import tensorflow as tf

from tfbert import TokenClassifier
from tfbert.data.readers import read_conll
from tfbert.tasks.tagging import TaggingConfig, TaggingTask

VOCAB = "tests/data/pretraining/vocab.txt"
NER = "tests/data/finetune/ner_train.conll"


@pytest.fixture(scope="module")
def documents():
    train = read_conll(NER, 0, -1)
    words = [sum(train.words[i:i + 6], []) for i in range(0, len(train.words), 6)]
    tags = [sum(train.tags[i:i + 6], []) for i in range(0, len(train.words), 6)]
    labels = sorted({t for row in tags for t in row}, key=lambda t: (t != "O", t))
    return words, tags, labels


@pytest.fixture(scope="module")
def tagger(documents):
    import keras

    words, tags, labels = documents
    keras.utils.set_random_seed(0)
    model = TokenClassifier.from_preset("tiny", vocab_file=VOCAB, label_list=labels,
                                        seq_length=24, long_text="windows")
    model.compile()
    history = model.fit(words, tags, epochs=3, verbose=0)
    return model, history


def test_fit_counts_and_learns_from_windows(tagger, documents, tmp_path):
    model, history = tagger
    words, tags, labels = documents
    # The same windows as the tagging task makes of the same documents.
    path = tmp_path / "docs.conll"
    path.write_text("\n\n".join("\n".join(f"{w}\t{t}" for w, t in zip(ws, ts))
                                for ws, ts in zip(words, tags)) + "\n")
    task = TaggingTask(TaggingConfig(train_file=str(path), seq_length=24, long_text="windows",
                                     label_list=labels)).prepare(model.preprocessor)
    windows = model.num_texts(words)
    assert windows == task.num_examples(str(path)) > 4 * len(words)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]


def test_every_word_is_tagged_and_the_first_window_is_the_truncated_model(tagger, documents):
    model, _ = tagger
    words, _, labels = documents
    text = " ".join(words[0])
    rows = model.predict([text, "Short one ."])
    assert [w["word"] for w in rows[0]] == text.split() and len(rows[1]) == 3
    assert all(text[w["start"]:w["end"]] == w["word"] for w in rows[0])
    truncated = TokenClassifier(model.encoder, model.preprocessor, label_list=labels)
    truncated.set_weights(model.get_weights())  # the windowed model's, head included
    first = truncated.predict([text], return_logits=True)[0]
    whole = model.predict([text], return_logits=True)[0]
    assert len(first) < len(whole) == len(words[0])
    # The first words have their most context in the first window: [CLS] + the
    # first 22 pieces, the truncated model's sequence.
    np.testing.assert_allclose(whole[:4], first[:4], atol=1e-5)
    # Word lists are tagged as the same words in a string.
    assert [w["tag"] for w in model.predict([words[0]])[0]] == [w["tag"] for w in rows[0]]


def test_export_config_and_checkpoint_keep_the_windows(tagger, documents, tmp_path):
    model, _ = tagger
    text = " ".join(documents[0][1])
    want = [w["tag"] for w in model.predict([text])[0]]
    serve = tf.saved_model.load(model.export(str(tmp_path / "export" / "1"))).signatures[
        "serving_default"]
    out = serve(text=tf.constant([text]))
    n = int(out["num_words"][0])
    assert [t.decode() for t in out["tags"][0].numpy()[:n]] == want
    again = TokenClassifier.from_config(model.get_config())
    assert (again.long_text, again.max_windows) == ("windows", 64)
    model.save_pretrained(str(tmp_path / "ckpt"))
    assert TokenClassifier.from_pretrained(str(tmp_path / "ckpt")).long_text == "windows"


@pytest.mark.parametrize("kwargs,message", [
    ({"long_text": "pages"}, "long_text must be one of"),
    ({"max_windows": 0}, "max_windows"),
    ({"doc_stride": 4, "doc_overlap": 2}, "not both"),
    ({"doc_overlap": 22}, "doc_overlap=22 must be < 22"),
])
def test_bad_window_settings_are_one_line(documents, kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        TokenClassifier.from_preset("tiny", vocab_file=VOCAB, label_list=documents[2],
                                    seq_length=24, **kwargs)


def test_a_dataset_of_word_lists_trains_in_windows():
    """(words, tag ids) batches: each batch of texts becomes batches of windows."""
    model = TokenClassifier.from_preset("tiny", vocab_file=VOCAB, label_list=["O", "B-X"],
                                        seq_length=8, long_text="windows")
    model.compile()
    words = tf.ragged.constant([list("abcdefghij"), ["k", "l"]])
    ds = tf.data.Dataset.from_tensor_slices((words, tf.ragged.constant(
        [[0, 1] * 5, [1, 0]]))).ragged_batch(2)
    assert np.isfinite(model.fit(ds, epochs=1, verbose=0).history["loss"][0])
    assert np.isfinite(model.evaluate(ds, verbose=0)[0])
    # Texts alone: windows of ids, every row at most seq_length wide.
    (ids,) = list(model.text_batches(ds, with_targets=False))
    assert ids["input_word_ids"].shape[0] > 2 and ids["input_word_ids"].shape[1] <= 8
