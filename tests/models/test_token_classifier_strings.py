"""TokenClassifier: Keras `fit` / `evaluate` / `predict` on raw strings and on
CoNLL word lists, per-word predictions with character offsets, the recipe
behind `compile()`, the three ways out (.keras, export, checkpoint) and one
clear line for each bad input. Real data: the shipped CoNLL-2003-style NER set
(tests/data/finetune/ner_*.conll)."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfbert import TokenClassifier, checkpoint
from tfbert.data import readers
from tfbert.train.optimizer import AdamW, WarmupPolynomialDecay

VOCAB = "tests/data/pretraining/vocab.txt"
DATA = "tests/data/finetune"
LABELS = ["O", "B-LOC", "B-ORG", "B-PER", "I-LOC", "I-ORG", "I-PER"]
# Raw strings with the punctuation, casing and accents a user's text has.
TEXTS = ["Angela Merkel visited Paris last Sunday.", "Tom works for Siemens in London.",
         "On Monday, Emma Watson told Reuters about the plan.",
         "Café owners in Zürich met the United Nations (again)."]


def conll(split):
    sentences = readers.read_conll(f"{DATA}/ner_{split}.conll", 0, -1)
    return sentences.words, sentences.tags


def tiny(**kwargs):
    kwargs.setdefault("label_list", LABELS)
    kwargs.setdefault("seq_length", 64)
    return TokenClassifier.from_preset("tiny", vocab_file=VOCAB, **kwargs)


@pytest.fixture(scope="module")
def untrained():
    """A tiny random tagger (predictions, ways out and bad input need no training)."""
    keras.utils.set_random_seed(1)
    model = tiny()
    model.compile()
    return model


@pytest.fixture(scope="module")
def trained():
    """A tiny random tagger fitted on the NER training sentences with compile() defaults."""
    keras.utils.set_random_seed(0)
    words, tags = conll("train")
    model = tiny()
    model.compile()
    history = model.fit(words, tags, epochs=10, verbose=0)
    return model, history


def word_logits(model, x):
    return np.concatenate(model.predict(x, return_logits=True, verbose=0))


@pytest.mark.slow
def test_fit_with_compile_defaults_learns_the_tags(trained):
    model, history = trained
    words, tags = conll("train")
    # 120 sentences at the recipe's batch 16: 8 updates an epoch, 10 epochs.
    schedule = model.optimizer._learning_rate
    assert isinstance(model.optimizer, AdamW) and isinstance(schedule, WarmupPolynomialDecay)
    assert (schedule.decay_steps, schedule.warmup_steps) == (80, 8)
    assert history.history["loss"][-1] < 0.3 * history.history["loss"][0]
    predicted = model.predict(words, verbose=0)
    assert [[w["word"] for w in p] for p in predicted] == words
    flat_gold = [t for ts in tags for t in ts]
    flat_predicted = [w["tag"] for p in predicted for w in p]
    accuracy = np.mean(np.array(flat_gold) == np.array(flat_predicted))
    assert accuracy > 0.9
    # The compiled accuracy counts the words only (first pieces), as predict does.
    scores = model.evaluate(words, tags, verbose=0, return_dict=True)
    assert scores["accuracy"] == pytest.approx(accuracy, abs=1e-6)
    # Raw strings: tags on the words predict reads (`Madrid,` is two words).
    texts = ["Angela Merkel works for Real Madrid, in Paris.", "Tom visited Tokyo."]
    raw_tags = [["B-PER", "I-PER", "O", "O", "B-ORG", "I-ORG", "O", "O", "B-LOC", "O"],
                ["B-PER", "O", "B-LOC", "O"]]
    raw = model.evaluate(texts, raw_tags, verbose=0, return_dict=True)
    hits = [w["tag"] == t for p, ts in zip(model.predict(texts, verbose=0), raw_tags)
            for w, t in zip(p, ts)]
    assert raw["accuracy"] == pytest.approx(np.mean(hits), abs=1e-6)
    entities = [(w["word"], w["tag"]) for w in
                model.predict(["Angela Merkel works for Real Madrid in Paris ."], verbose=0)[0]]
    assert entities == [("Angela", "B-PER"), ("Merkel", "I-PER"), ("works", "O"), ("for", "O"),
                        ("Real", "B-ORG"), ("Madrid", "I-ORG"), ("in", "O"), ("Paris", "B-LOC"),
                        (".", "O")]


def test_predict_offsets_slice_the_input_back(untrained):
    model = untrained
    for text, words in zip(TEXTS, model.predict(TEXTS, verbose=0)):
        assert [text[w["start"]:w["end"]] for w in words] == [w["word"] for w in words]
        assert all(w["tag"] in LABELS and 0 < w["score"] <= 1 for w in words)
    last = [w["word"] for w in model.predict(TEXTS[-1:], verbose=0)[0]]
    assert last == ["Café", "owners", "in", "Zürich", "met", "the", "United", "Nations", "(",
                    "again", ")", "."]
    # Word lists: offsets into the words joined by single spaces.
    split = [["Café", "in", "Zürich"], ["U.S.", "office"]]
    for words, predicted in zip(split, model.predict(split, verbose=0)):
        joined = " ".join(words)
        assert [w["word"] for w in predicted] == words
        assert [joined[w["start"]:w["end"]] for w in predicted] == words
    # Words past seq_length wordpieces are not tagged (as in the export).
    long_text = " ".join(["word"] * 100)
    tagged = model.predict([long_text], verbose=0)[0]
    assert 0 < len(tagged) <= model.preprocessor.seq_length - 2
    assert [w["start"] for w in tagged] == [5 * i for i in range(len(tagged))]


def test_every_input_kind_gives_the_same_predictions(untrained):
    pd = pytest.importorskip("pandas")
    model = untrained
    reference = word_logits(model, TEXTS)
    for x in (pd.Series(TEXTS), tf.data.Dataset.from_tensor_slices(TEXTS).batch(3)):
        np.testing.assert_allclose(word_logits(model, x), reference, atol=1e-5)
    # The batch size changes the padding, never the result.
    np.testing.assert_allclose(np.concatenate(model.predict(TEXTS, batch_size=1,
                                                            return_logits=True, verbose=0)),
                               reference, atol=1e-5)
    words, _ = conll("dev")
    reference = word_logits(model, words[:6])
    ragged = tf.ragged.constant(words[:6])
    for x in (tf.data.Dataset.from_tensor_slices(ragged),):
        np.testing.assert_allclose(word_logits(model, x), reference, atol=1e-5)


@pytest.mark.slow
def test_evaluate_on_lists_and_datasets(trained):
    model, _ = trained
    words, tags = conll("dev")
    ids = [[LABELS.index(t) for t in row] for row in tags]
    scores = model.evaluate(words, tags, verbose=0, return_dict=True)
    assert sorted(scores) == ["accuracy", "loss"]
    ds = tf.data.Dataset.from_tensor_slices((tf.ragged.constant(words), tf.ragged.constant(ids)))
    from_ds = model.evaluate(ds, verbose=0, return_dict=True)
    assert from_ds["accuracy"] == pytest.approx(scores["accuracy"], abs=1e-6)
    assert from_ds["loss"] == pytest.approx(scores["loss"], rel=1e-4)
    # The accuracy is per word, whatever the batches (the loss: a mean of batch means).
    other_batches = model.evaluate(ds.batch(5), verbose=0, return_dict=True)
    assert other_batches["accuracy"] == pytest.approx(scores["accuracy"], abs=1e-6)
    assert model.evaluate(words, ids, verbose=0, return_dict=True)["loss"] == pytest.approx(
        scores["loss"], rel=1e-5)


def test_keras_file_round_trip_with_the_preprocessor_inside(untrained, tmp_path):
    model = untrained
    path = str(tmp_path / "ner.keras")
    model.save(path)
    again = keras.models.load_model(path)
    assert type(again) is TokenClassifier and again.label_list == LABELS
    np.testing.assert_allclose(word_logits(again, TEXTS), word_logits(model, TEXTS), atol=1e-6)
    assert type(again.optimizer).__name__ == "AdamW"


def test_save_pretrained_round_trip_and_head_check(untrained, tmp_path,
                                                   raises_one_line_from_tfbert):
    model = untrained
    out = model.save_pretrained(str(tmp_path / "ckpt"))
    again = TokenClassifier.from_pretrained(out)
    assert again.label_list == LABELS and again.preprocessor.seq_length == 64
    # An asked-for seq_length takes the saved one's place.
    assert TokenClassifier.from_pretrained(out, seq_length=32).preprocessor.seq_length == 32
    np.testing.assert_allclose(word_logits(again, TEXTS), word_logits(model, TEXTS), atol=1e-5)
    # Its encoder is a plain tfbert checkpoint's: TextClassifier starts from it.
    assert checkpoint.read_checkpoint(out).text_classifier is None
    plain = checkpoint.save_checkpoint(str(tmp_path / "plain"), model.encoder.config,
                                       model.encoder.get_named_weights(),
                                       model.preprocessor.vocab.tokens, True)
    fresh = TokenClassifier.from_pretrained(plain, label_list=["O", "B-MOD"])
    assert fresh.num_classes == 2
    name = "embeddings/word_embeddings/embeddings"
    np.testing.assert_array_equal(fresh.encoder.get_named_weights()[name],
                                  model.encoder.get_named_weights()[name])
    raises_one_line_from_tfbert(
        "head", lambda: TokenClassifier.from_pretrained(out, num_classes=3),
        r"the token classifier head has 7 outputs, but num_classes=3")


@pytest.mark.slow
def test_export_is_the_tagging_tasks_savedmodel_in_a_fresh_process(trained, tmp_path,
                                                                   run_python):
    model, _ = trained
    texts = TEXTS[:3]  # ASCII: the export's byte offsets are character offsets
    export_dir = model.export(str(tmp_path / "export" / "1"))
    out = run_python(f"""
import json
import tensorflow as tf, tensorflow_text  # the tokenizer ops
m = tf.saved_model.load({export_dir!r})
sig = m.signatures["serving_default"]
out = sig(text=tf.constant({texts!r}))
n = out["num_words"].numpy().tolist()
print(json.dumps({{"outputs": sorted(out), "signatures": sorted(m.signatures),
                   "tags": [[t.decode() for t in row[:k]] for row, k in zip(out["tags"].numpy(), n)],
                   "words": [[w.decode() for w in row[:k]] for row, k in zip(out["words"].numpy(), n)],
                   "start": [row[:k] for row, k in zip(out["start"].numpy().tolist(), n)],
                   "end": [row[:k] for row, k in zip(out["end"].numpy().tolist(), n)]}}))
""")
    served = json.loads(out.strip().splitlines()[-1])
    assert served["outputs"] == ["end", "logits", "num_words", "probabilities", "start",
                                 "tag_ids", "tags", "words"]
    assert "serving_ids" in served["signatures"]
    predicted = model.predict(texts, verbose=0)
    assert served["tags"] == [[w["tag"] for w in p] for p in predicted]
    assert served["words"] == [[w["word"] for w in p] for p in predicted]
    assert served["start"] == [[w["start"] for w in p] for p in predicted]
    assert served["end"] == [[w["end"] for w in p] for p in predicted]


@pytest.mark.slow
def test_user_choices_replace_the_recipe():
    keras.utils.set_random_seed(2)
    words, tags = conll("train")
    model = tiny()
    model.compile(optimizer=keras.optimizers.SGD(0.05),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="acc")])
    stop = keras.callbacks.EarlyStopping(monitor="loss", patience=0)
    history = model.fit(words[:40], tags[:40], batch_size=20, epochs=2, callbacks=[stop],
                        validation_data=(words[40:50], tags[40:50]), verbose=0)
    assert "val_acc" in history.history
    assert isinstance(model.optimizer, keras.optimizers.SGD)
    assert "acc" in history.history
    assert int(model.optimizer.iterations.numpy()) == 2 * len(history.history["loss"])


def test_get_config_round_trip():
    model = tiny(dropout=0.2)
    again = TokenClassifier.from_config(model.get_config())
    assert again.get_config() == model.get_config()
    assert again.preprocessor.seq_length == 64 and again.label_list == LABELS


BAD_INPUTS = [
    ("ids", lambda m: m.fit(np.array([[2, 7, 3]]), [[0, 0, 0]]),
     r"x holds int64 values, not strings"),
    ("int words", lambda m: m.fit([[2, 7, 3]], [[0, 0, 0]]), r"x\[0\]\[0\] is an int \(2\)"),
    ("ids to the model", lambda m: m(["a text"]),
     r"TokenClassifier takes the dict of the three int32 id tensors"),
    ("ids dataset", lambda m: m.fit(tf.data.Dataset.from_tensor_slices(([1, 2], [[0], [1]]))),
     r"the dataset yields .*int32.* texts, not strings"),
    ("one string", lambda m: m.predict("Angela Merkel"), r"x is one string; pass a list"),
    ("tag count", lambda m: m.fit([["Angela", "Merkel"]], [["B-PER"]]),
     r"y\[0\] has 1 tags for the 2 words of x\[0\]: \['Angela', 'Merkel'\]"),
    ("tag count of a string", lambda m: m.fit(["Paris, France."], [["B-LOC", "B-LOC"]]),
     r"y\[0\] has 2 tags for the 4 words of x\[0\]: \['Paris', ',', 'France', '.'\]"),
    ("unknown tag", lambda m: m.fit([["Paris"]], [["B-CITY"]]),
     r"tags \['B-CITY'\] are not in label_list"),
    ("tag id range", lambda m: m.fit([["a", "b"], ["c"]], [[0, 1], [7]]),
     r"y\[1\]\[0\] is 7: tag ids must be in \[0, 7\)"),
    ("negative id", lambda m: m.fit([["a", "b"]], [[0, -1]]), r"y\[0\]\[1\] is -1"),
    ("rows", lambda m: m.fit([["a"], ["b"]], [["O"]]), r"y has 1 rows for 2 texts"),
    ("no y", lambda m: m.fit([["a"]], None), r"fit and evaluate need y"),
    ("flat y", lambda m: m.fit([["a"]], ["O"]), r"y\[0\] is str \('O'\): give one list"),
    ("empty", lambda m: m.fit([], []), r"x is empty"),
    ("empty predict", lambda m: m.predict([]), r"x is empty"),
    ("empty word", lambda m: m.fit([["a", " "]], [["O", "O"]]), r"x\[0\]\[1\] is an empty word"),
    ("mixed", lambda m: m.fit([["a"], "b c"], [["O"], ["O", "O"]]),
     r"x\[1\] is str, but x\[0\] is a list of words"),
    ("dataset tag id range", lambda m: m.fit(tf.data.Dataset.from_tensor_slices(
        (tf.ragged.constant([["a", "b"], ["c"]]), tf.ragged.constant([[0, 1], [7]]))), verbose=0),
     r"x: the dataset holds a tag id outside \[0, 7\)"),
    ("dataset negative tag id", lambda m: m.evaluate(tf.data.Dataset.from_tensor_slices(
        (tf.ragged.constant([["a", "b"]]), tf.ragged.constant([[0, -1]]))), verbose=0),
     r"x: the dataset holds a tag id outside \[0, 7\)"),
    ("texts only dataset", lambda m: m.fit(tf.data.Dataset.from_tensor_slices(["a b"])),
     r"dataset of texts only: fit and evaluate need"),
    ("validation_split", lambda m: m.fit([["a"]], [["O"]], validation_split=0.5),
     r"validation_split is not supported"),
    ("return_logits a string", lambda m: m.predict(["a b"], return_logits="no"),
     r"^return_logits must be True or False, got 'no'\.$"),  # issue 66: "no" read as True
    ("label_list not a list", lambda m: TokenClassifier(m.encoder, m.preprocessor, label_list=3),
     r"^label_list must be a list of tag names \(in class-id order\), got int\.$"),
    ("no classes", lambda m: TokenClassifier(m.encoder, m.preprocessor),
     r"needs num_classes or label_list"),
    ("label count", lambda m: tiny(num_classes=3, label_list=["O", "B"]),
     r"label_list has 2 names for num_classes=3"),
]


@pytest.mark.parametrize("name, call, match", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_one_line(name, call, match, raises_one_line_from_tfbert, untrained):
    raises_one_line_from_tfbert(name, lambda: call(untrained), match)


def test_fit_under_a_two_replica_strategy(run_python):
    """`fit` inside `MirroredStrategy.scope()` on two CPU replicas: the recipe
    counts the global batches, the loss falls; `predict` of one text (one
    replica gets none) gives its words and tags."""
    out = run_python(f"""
import json
import tensorflow as tf
tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0],
    [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
from tfbert import TokenClassifier
from tfbert.data import readers
sentences = readers.read_conll("{DATA}/ner_train.conll", 0, -1)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
keras.utils.set_random_seed(0)
with strategy.scope():
    model = TokenClassifier.from_preset("tiny", vocab_file="{VOCAB}", seq_length=64,
                                        label_list={LABELS!r})
    model.compile()
history = model.fit(sentences.words, sentences.tags, batch_size=16, epochs=3, verbose=0)
tagged = model.predict(["Tom works for Siemens in London."], verbose=0)[0]
# Texts of different word counts split over the replicas: the same per-word
# logits as the same weights on one device.
plain = TokenClassifier.from_config(model.get_config())
plain.set_weights(model.get_weights())
split = model.predict({TEXTS!r}, batch_size=3, return_logits=True, verbose=0)
one = plain.predict({TEXTS!r}, batch_size=3, return_logits=True, verbose=0)
print(json.dumps({{"replicas": strategy.num_replicas_in_sync, "texts": len(sentences.words),
                   "max_difference": max(float(abs(a - b).max()) for a, b in zip(split, one)),
                   "word_counts": [[len(a), len(b)] for a, b in zip(split, one)],
                   "steps": int(model.optimizer.iterations.numpy()),
                   "decay_steps": model.optimizer._learning_rate.decay_steps,
                   "loss": history.history["loss"],
                   "words": [w["word"] for w in tagged],
                   "tags": [w["tag"] for w in tagged]}}))
""")
    result = json.loads(out.strip().splitlines()[-1])
    assert result["replicas"] == 2
    # Global batches of 16, 3 epochs; several replicas take whole batches only.
    steps = 3 * (result["texts"] // 16)
    assert result["steps"] == result["decay_steps"] == steps
    assert np.isfinite(result["loss"]).all() and result["loss"][-1] < result["loss"][0]
    assert result["words"] == ["Tom", "works", "for", "Siemens", "in", "London", "."]
    assert set(result["tags"]) <= set(LABELS)
    assert result["word_counts"] == [[7, 7], [7, 7], [11, 11], [12, 12]]
    assert result["max_difference"] < 1e-5
