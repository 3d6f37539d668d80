"""tfbert.CrossEncoder: parity with a transformers/sentence-transformers cross-encoder
(randomly initialised, saved locally) after conversion, predict/rank shapes and order,
the strings-in export reloaded in a fresh process, and one-line errors; then the Keras
model: `compile()` + `fit` on hand-written (query, passage, label) rows learns to rank,
every input kind scores alike, the .keras file, the checkpoint and the export agree."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import tfbert
from tfbert import BertConfig, BertEncoder, BertPreprocessor, CrossEncoder
from tfbert.convert import from_huggingface
from tfbert.models.classifier import BertClassifier
from tfbert.train.optimizer import AdamW, WarmupPolynomialDecay

VOCAB = "tests/data/pretraining/vocab.txt"


def torch_and_transformers():
    return pytest.importorskip("torch"), pytest.importorskip("transformers")

QUERY = "How do I open a file for reading?"
PASSAGES = [
    "Open file and return a corresponding file object.",
    "Return a sorted list of the items in the iterable.",
    "The socket must be bound to an address and listening for connections.",
    "Join one or more path components intelligently.",
    "ok",
]


@pytest.fixture(scope="module")
def hf_cross_encoder(minilm_dir, tmp_path_factory):
    """A random BertForSequenceClassification (num_labels=1) with the real
    uncased tokenizer files, saved as sentence-transformers saves a cross-encoder."""
    torch, transformers = torch_and_transformers()
    out = tmp_path_factory.mktemp("hf_ce") / "ce"
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64,
                                     max_position_embeddings=64, num_labels=1)
    model = transformers.BertForSequenceClassification(config).eval()
    with torch.no_grad():  # larger than the init scale, so the score varies with the text
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(str(out), safe_serialization=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(minilm_dir))
    tokenizer.model_max_length = 64
    tokenizer.save_pretrained(str(out))
    return out


@pytest.fixture(scope="module")
def converted(hf_cross_encoder, tmp_path_factory):
    return from_huggingface(hf_cross_encoder, tmp_path_factory.mktemp("tf_ce") / "ce")


def test_converted_cross_encoder_matches_sentence_transformers(hf_cross_encoder, converted):
    from sentence_transformers import CrossEncoder as STCrossEncoder

    reference = STCrossEncoder(str(hf_cross_encoder), max_length=64, device="cpu")
    ours = CrossEncoder.from_pretrained(converted, seq_length=64)
    pairs = [(QUERY, p) for p in PASSAGES] + [(PASSAGES[1], PASSAGES[2] * 8)]  # one truncated
    want = reference.predict(pairs, batch_size=3)
    got = ours.predict(pairs, batch_size=3)
    assert np.abs(got - want).max() <= 1e-5, np.abs(got - want).max()
    assert np.std(want) > 1e-3  # the scores differ from pair to pair: the test can fail
    logits = ours.predict(pairs, activation=None)
    np.testing.assert_allclose(1 / (1 + np.exp(-logits)), got, atol=1e-6)
    # rank: the same order and scores as sentence-transformers'.
    ref_hits = reference.rank(QUERY, PASSAGES, top_k=3)
    hits = ours.rank(QUERY, PASSAGES, top_k=3, return_documents=True)
    assert [h["corpus_id"] for h in hits] == [h["corpus_id"] for h in ref_hits]
    np.testing.assert_allclose([h["score"] for h in hits], [h["score"] for h in ref_hits],
                               atol=1e-5)
    assert hits[0]["text"] == PASSAGES[hits[0]["corpus_id"]]
    assert len(ours.rank(QUERY, PASSAGES)) == len(PASSAGES)


def test_save_reload_and_export_in_fresh_process(converted, tmp_path, run_python):
    model = CrossEncoder.from_pretrained(converted, seq_length=48)
    saved = model.save_pretrained(str(tmp_path / "saved"))
    again = CrossEncoder.from_pretrained(saved)
    assert again.preprocessor.seq_length == 48
    pairs = [(QUERY, p) for p in PASSAGES]
    want = model.predict(pairs)
    np.testing.assert_allclose(again.predict(pairs), want, atol=1e-6)
    export = model.export(str(tmp_path / "export"))
    out = run_python(f"""
import json, tensorflow as tf, tensorflow_text
m = tf.saved_model.load({export!r})
sig = m.signatures["serving_default"]
r = sig(query=tf.constant({json.dumps([q for q, _ in pairs])}),
        passage=tf.constant({json.dumps([p for _, p in pairs])}))
print(json.dumps({{k: v.numpy().tolist() for k, v in r.items()}}))
""")
    served = json.loads(out.strip().splitlines()[-1])
    assert sorted(served) == ["logits", "score"]
    np.testing.assert_allclose(served["score"], want, atol=1e-5)


def test_mean_pooling_head_saves_reloads_and_exports(converted, tmp_path, run_python):
    base = CrossEncoder.from_pretrained(converted, seq_length=48)
    model = CrossEncoder.from_encoder(base.encoder, base.preprocessor, pooling="mean")
    pairs = [(QUERY, p) for p in PASSAGES]
    want = model.predict(pairs, activation=None)
    assert np.std(want) > 1e-3 and np.abs(want - base.predict(pairs, activation=None)).max() > 1e-3
    saved = model.save_pretrained(str(tmp_path / "saved"))
    assert json.loads((tmp_path / "saved" / "config.json").read_text())["cross_encoder"] == {
        "seq_length": 48, "pooling": "mean"}
    again = CrossEncoder.from_pretrained(saved)
    assert again.pooling == "mean"
    np.testing.assert_allclose(again.predict(pairs, activation=None), want, atol=1e-5)
    export = again.export(str(tmp_path / "export"))
    out = run_python(f"""
import json, tensorflow as tf, tensorflow_text
sig = tf.saved_model.load({export!r}).signatures["serving_default"]
r = sig(query=tf.constant({json.dumps([q for q, _ in pairs])}),
        passage=tf.constant({json.dumps([p for _, p in pairs])}))
print(json.dumps(r["logits"].numpy().tolist()))
""")
    np.testing.assert_allclose(json.loads(out.strip().splitlines()[-1]), want, atol=1e-5)
    # A config naming a pooling this version does not have: one line.
    config = json.loads((tmp_path / "saved" / "config.json").read_text())
    config["cross_encoder"]["pooling"] = "avg"
    (tmp_path / "saved" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"config.json:cross_encoder: pooling: must be one of "
                                         r"\['cls', 'mean', 'max'\], got 'avg'") as e:
        CrossEncoder.from_pretrained(saved)
    assert "\n" not in str(e.value)


def test_bad_input_is_one_clear_line(converted, tmp_path):
    model = CrossEncoder.from_pretrained(converted, seq_length=32)
    cases = [
        (lambda: model.predict([]), ValueError, "empty list of pairs"),
        (lambda: model.predict([("q", "")]), ValueError, "pair 0: empty passage"),
        (lambda: model.predict([("", "p")]), ValueError, "pair 0: empty query"),
        (lambda: model.predict(["q p"]), TypeError, r"pair 0 must be \(query, passage\)"),
        (lambda: model.predict("q"), TypeError, "list of"),
        (lambda: model.rank("", ["p"]), ValueError, "empty query"),
        (lambda: model.rank("q", "p"), TypeError, "one str"),
        (lambda: model.rank("q", ["p"], top_k=0), ValueError, "top_k must be >= 1"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message) as e:
            call()
        assert "\n" not in str(e.value)
    # A sentence encoder checkpoint has no classifier head.
    encoder_only = tfbert.SentenceEncoder.from_pretrained(converted).save_pretrained(
        str(tmp_path / "bi"))
    with pytest.raises(ValueError, match="no classifier head.*not a cross-encoder"):
        CrossEncoder.from_pretrained(encoder_only)
    with pytest.raises(FileNotFoundError, match="not found"):
        CrossEncoder.from_pretrained(str(tmp_path / "missing"))


def test_three_label_classifier_is_not_a_cross_encoder(tmp_path, minilm_dir):
    torch, transformers = torch_and_transformers()
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1,
                                     num_attention_heads=4, intermediate_size=64,
                                     max_position_embeddings=64, num_labels=3)
    transformers.BertForSequenceClassification(config).save_pretrained(str(tmp_path / "hf"))
    (tmp_path / "hf" / "vocab.txt").write_text((minilm_dir / "vocab.txt").read_text())
    out = from_huggingface(tmp_path / "hf", tmp_path / "out")
    with pytest.raises(ValueError, match="3 outputs; a cross-encoder scores with one"):
        CrossEncoder.from_pretrained(out)


# === The Keras model: fit on strings ===

RELEVANT = [  # (query, its relevant passage): what one searches for, and Python's docstring
    ("open a file for reading", "Open file and return a corresponding file object."),
    ("number of items in a list", "Return the number of items in a container."),
    ("remove all items from a dict", "Remove all items from the dictionary."),
    ("split a string into words", "Return a list of the words in the string, using sep as the "
                                  "delimiter."),
    ("close a network socket", "Close the socket. All future operations on the socket object "
                               "will fail."),
    ("sort a list in place", "Sort the list in ascending order and return None."),
    ("wait for a thread to finish", "Wait until the thread terminates."),
    ("encode text as bytes", "Encode the string using the codec registered for encoding."),
    ("join path components", "Join one or more path components intelligently."),
    ("current time in seconds", "Return the current time in seconds since the Epoch."),
    ("make a directory", "Create a directory named path with numeric mode mode."),
    ("copy a file", "Copy the contents of the file named src to a file named dst."),
]
NEGATIVE_SHIFTS = (1, 5)  # query i's negatives: the relevant passages of queries i+1 and i+5


def candidates(i):
    """Query i's training candidates, the relevant passage first."""
    return [RELEVANT[i][1]] + [RELEVANT[(i + k) % len(RELEVANT)][1] for k in NEGATIVE_SHIFTS]


PAIRS = [(q, p) for i, (q, _) in enumerate(RELEVANT) for p in candidates(i)]  # 36 rows
LABELS = [1, 0, 0] * len(RELEVANT)


def tiny_cross_encoder(**kwargs):
    encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931, num_layers=1))
    return CrossEncoder(encoder, BertPreprocessor(vocab_file=VOCAB, seq_length=32), **kwargs)


@pytest.fixture(scope="module")
def trained():
    """A 1-layer random cross-encoder fitted on the 36 rows with compile()'s recipe."""
    keras.utils.set_random_seed(0)
    model = tiny_cross_encoder()
    model.compile()
    history = model.fit(PAIRS, LABELS, batch_size=4, epochs=20, verbose=0)
    return model, history


def test_compile_defaults_learn_to_rank(trained):
    model, history = trained
    # The recipe: AdamW, warmup then linear decay over the 9 * 20 updates fit ran.
    schedule = model.optimizer._learning_rate
    assert isinstance(model.optimizer, AdamW) and isinstance(schedule, WarmupPolynomialDecay)
    assert schedule.decay_steps == 180 and int(model.optimizer.iterations) == 180
    assert isinstance(model.loss, keras.losses.BinaryCrossentropy) and model.loss.from_logits
    # From 0.71 (chance) to 0.29 when written; 3 candidates a query: chance ranks 4 of 12 first.
    assert history.history["loss"][-1] < 0.6 * history.history["loss"][0], history.history
    first = [model.rank(q, candidates(i))[0]["corpus_id"] for i, (q, _) in enumerate(RELEVANT)]
    assert first.count(0) >= 9, first  # 11 when written
    scores = model.evaluate(PAIRS, LABELS, verbose=0, return_dict=True)
    assert sorted(scores) == ["accuracy", "loss"]
    logits = model.predict(PAIRS, activation=None)
    assert scores["accuracy"] == pytest.approx(np.mean((logits > 0) == np.array(LABELS)), abs=1e-6)
    np.testing.assert_allclose(model.predict(PAIRS), 1 / (1 + np.exp(-logits)), atol=1e-6)


def test_every_input_kind_gives_the_same_scores(trained):
    pd = pytest.importorskip("pandas")
    model, _ = trained
    queries, passages = [q for q, _ in PAIRS], [p for _, p in PAIRS]
    want = model.predict(PAIRS)
    assert want.shape == (len(PAIRS),) and np.std(want) > 1e-3
    frame = pd.DataFrame({"passage": passages, "query": queries})  # named: order does not matter
    for x in ((queries, passages), (np.array(queries), np.array(passages)),
              np.array(PAIRS), tf.constant(PAIRS), frame, frame[["query", "passage"]].to_numpy(),
              (frame["query"], frame["passage"]), [(q.encode(), p.encode()) for q, p in PAIRS],
              (q for q in PAIRS)):
        np.testing.assert_allclose(model.predict(x), want, atol=1e-5)
    # A dataset goes through Keras' predict: the same scores, in order.
    for ds in (tf.data.Dataset.from_tensor_slices((queries, passages)),
               tf.data.Dataset.from_tensor_slices((queries, passages)).batch(5)):
        np.testing.assert_allclose(model.predict(ds), want, atol=1e-5)
    np.testing.assert_allclose(model.predict(PAIRS, batch_size=3), want, atol=1e-5)
    # The three id tensors (what the model itself takes) give the same scores too.
    ids = model.preprocessor([tf.constant(queries), tf.constant(passages)])
    np.testing.assert_allclose(model.predict(ids), want, atol=1e-5)
    # evaluate: the same loss from pairs and from a dataset of ((query, passage), label).
    ds = tf.data.Dataset.from_tensor_slices(((queries, passages), LABELS)).batch(8)
    assert model.evaluate(ds, verbose=0, return_dict=True)["loss"] == pytest.approx(
        model.evaluate((queries, passages), LABELS, verbose=0, return_dict=True)["loss"],
        rel=1e-4)


def test_keras_file_checkpoint_and_export_give_the_same_scores(trained, tmp_path, run_python):
    model, _ = trained
    want = model.predict(PAIRS, activation=None)
    again = CrossEncoder.from_config(model.get_config())
    assert again.get_config() == model.get_config()
    # save_pretrained -> from_pretrained.
    checkpoint_dir = model.save_pretrained(str(tmp_path / "ckpt"))
    loaded = CrossEncoder.from_pretrained(checkpoint_dir)
    assert loaded.preprocessor.seq_length == 32 and loaded.pooling == "cls"
    np.testing.assert_allclose(loaded.predict(PAIRS, activation=None), want, atol=1e-5)
    # The .keras file and the export, both read in a fresh process.
    keras_file = str(tmp_path / "reranker.keras")
    model.save(keras_file)
    export_dir = model.export(str(tmp_path / "export"))
    out = run_python(f"""
import json, keras, tensorflow as tf
import tfbert  # registers the tfbert classes
pairs = {json.dumps(PAIRS)}
model = keras.models.load_model({keras_file!r})
sig = tf.saved_model.load({export_dir!r}).signatures["serving_default"]
served = sig(query=tf.constant([q for q, _ in pairs]), passage=tf.constant([p for _, p in pairs]))
print(json.dumps({{"keras": model.predict(pairs, activation=None).tolist(),
                   "optimizer": type(model.optimizer).__name__,
                   "outputs": sorted(served), "logits": served["logits"].numpy().tolist(),
                   "score": served["score"].numpy().tolist()}}))
""")
    result = json.loads(out.strip().splitlines()[-1])
    np.testing.assert_allclose(result["keras"], want, atol=1e-5)
    assert result["optimizer"] == "AdamW"
    assert result["outputs"] == ["logits", "score"]
    np.testing.assert_allclose(result["logits"], want, atol=1e-5)
    np.testing.assert_allclose(result["score"], model.predict(PAIRS), atol=1e-5)


def test_user_choices_replace_the_recipe():
    keras.utils.set_random_seed(1)
    model = tiny_cross_encoder(pooling="mean")
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss=keras.losses.MeanSquaredError(),
                  metrics=[keras.metrics.AUC(name="auc", from_logits=True)])
    stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=0)
    relevance = [1.0, 0.2, 0.0] * len(RELEVANT)  # graded relevance in [0, 1]
    history = model.fit(PAIRS, relevance, batch_size=12, epochs=3, callbacks=[stop],
                        validation_data=(PAIRS[:9], relevance[:9]), verbose=0)
    assert isinstance(model.optimizer, keras.optimizers.SGD)
    assert "auc" in history.history and "val_auc" in history.history
    assert int(model.optimizer.iterations) == 3 * len(history.history["loss"])


@pytest.fixture(scope="module")
def untrained():
    model = tiny_cross_encoder()
    model.compile()
    return model


TWO = [("open a file", "Open the file."), ("sort a list", "Sort the list.")]


@pytest.mark.parametrize("name, call, match", [
    ("windows", lambda m: tiny_cross_encoder(long_text="windows"),
     r"CrossEncoder reads a pair as one window"),
    ("labels of another count", lambda m: m.fit(TWO, [1]), r"y has 1 labels for 2 pairs"),
    ("no labels", lambda m: m.fit(TWO, None), r"fit and evaluate need y: one label per pair"),
    ("a label not a number", lambda m: m.fit(TWO, [1, "yes"]), r"y\[1\] is 'yes': labels are"),
    ("a label None", lambda m: m.fit(TWO, [1, None]), r"y\[1\] is None"),
    ("a label out of range", lambda m: m.fit(TWO, [1, 3]), r"y\[1\] is 3: labels are "
                                                           r"relevances in \[0, 1\]"),
    ("a label NaN", lambda m: m.fit(TWO, [np.nan, 1]), r"y\[0\] is nan"),
    ("labels a matrix", lambda m: m.fit(TWO, [[1, 0], [0, 1]]), r"one label per pair"),
    ("columns of unequal length", lambda m: m.fit((["q1", "q2"], ["p1"]), [1, 0]),
     r"the two text columns differ in length \(2 and 1\)"),
    ("a pair of three", lambda m: m.fit([("q", "p", "x")], [1]), r"pair 0 must be \(query, "
                                                                  r"passage\)"),
    ("ids as an array", lambda m: m.fit(np.array([[2, 7, 3]]), [1]),
     r"x holds int64 values, not strings"),
    ("ids as lists", lambda m: m.predict([[2, 7]]), r"pair 0: the query is an int \(2\), not "
                                                    r"a string: this model takes raw text"),
    # Issue 66: the pairs' texts are checked as every strings model checks its texts.
    ("bytes not UTF-8", lambda m: m.predict([(b"caf\xe9", "p")]),
     r"^pair 0: the query is bytes that are not UTF-8 text"),  # a bare UnicodeDecodeError
    ("return_documents a string", lambda m: m.rank("q", ["p"], return_documents="no"),
     r"^return_documents must be True or False, got 'no'\.$"),  # "no" read as True
    ("ids to evaluate", lambda m: m.evaluate(tf.constant([[2, 7]]), [1]), r"holds int32"),
    ("empty list", lambda m: m.fit([], []), r"x is an empty list of pairs"),
    ("empty columns", lambda m: m.predict(([], [])), r"x\[0\] is empty"),
    ("an empty passage", lambda m: m.predict((["q"], [" "])), r"pair 0: empty passage"),
    ("one column of texts", lambda m: m.predict(np.array(["q p", "r s"])),
     r"x is one column of texts: a cross-encoder reads pairs"),
    ("an array of three columns", lambda m: m.predict(np.array([["q", "p", "x"]])),
     r"an array of pairs has shape \(n, 2\), got \(1, 3\)"),
    ("a dataset of one column", lambda m: m.predict(tf.data.Dataset.from_tensor_slices(["q"])),
     r"This model reads pairs; got 1 text column"),
    ("a dataset without labels to fit", lambda m: m.fit(tf.data.Dataset.from_tensor_slices(
        (["q"], ["p"]))), r"dataset of texts only"),
    ("validation_split", lambda m: m.fit(TWO, [1, 0], validation_split=0.5),
     r"validation_split is not supported"),
    ("strings to the model call", lambda m: m(["open a file"]),
     r"CrossEncoder takes the dict of the three int32 id tensors"),
    ("the old constructor", lambda m: CrossEncoder(BertClassifier(m.encoder, 1), m.preprocessor),
     r"CrossEncoder takes a BertEncoder, not a BertClassifier"),
    ("an unknown activation", lambda m: tiny_cross_encoder(activation="relu"),
     r"activation must be 'sigmoid' or None"),
])
def test_bad_input_is_one_line(name, call, match, untrained, raises_one_line_from_tfbert):
    raises_one_line_from_tfbert(name, lambda: call(untrained), match)


def test_a_checkpoint_head_of_three_outputs_is_one_line(untrained, tmp_path,
                                                        raises_one_line_from_tfbert):
    three = tfbert.TextClassifier(untrained.encoder, untrained.preprocessor, num_classes=3)
    saved = three.save_pretrained(str(tmp_path / "three"))
    raises_one_line_from_tfbert("a head of three outputs", lambda: CrossEncoder.from_pretrained(
        saved), r"classifier head has 3 outputs; a cross-encoder scores with one")


@pytest.mark.slow
def test_fit_and_the_runner_train_the_same_model(tmp_path):
    """One training path: `tfbert.tasks.runner.finetune` on pointwise rows (what
    tools/finetune.py --task=cross_encoder runs) and a user's `compile(); fit(...)` with
    the same seed and settings train the same class to the same weights."""
    from tfbert.tasks.cross_encoder import CrossEncoderTask
    from tfbert.tasks.runner import TrainConfig, finetune

    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"query": q, "passage": p, "label": y}) + "\n"
                            for (q, p), y in zip(PAIRS, LABELS)))
    task = CrossEncoderTask({"train_file": str(rows), "dev_file": str(rows), "seq_length": 32})
    train = TrainConfig(epochs=20, batch_size=4, seed=7, jit_compile=False, verbose=0,
                        tensorboard=False)
    result = finetune(task, train, str(tmp_path / "run"), vocab_file=VOCAB,
                      encoder_config=BertConfig.from_preset("tiny", vocab_size=1931,
                                                            num_layers=1))
    assert type(result.model) is CrossEncoder and result.best_epoch == 20

    keras.utils.set_random_seed(7)
    model = tiny_cross_encoder()
    model.compile()
    model.fit(PAIRS, LABELS, batch_size=4, epochs=20, seed=7, verbose=0)
    want = result.model.predict(PAIRS, activation=None)
    assert np.std(want) > 1e-2  # trained: the scores differ from pair to pair
    np.testing.assert_allclose(model.predict(PAIRS, activation=None), want, atol=1e-4)


def test_fit_under_a_two_replica_strategy(run_python):
    """`fit` inside `MirroredStrategy.scope()` on two CPU replicas: the recipe
    counts the global batches, the loss falls, and the scores over the
    replicas are the scores of the same weights on one device."""
    out = run_python(f"""
import json
import tensorflow as tf
tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0],
    [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
from tfbert import BertConfig, BertEncoder, BertPreprocessor, CrossEncoder
pairs = {PAIRS!r}
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
keras.utils.set_random_seed(0)
with strategy.scope():
    encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931, num_layers=1))
    model = CrossEncoder(encoder, BertPreprocessor(vocab_file="{VOCAB}", seq_length=32))
    model.compile()
history = model.fit(pairs, {LABELS!r}, batch_size=8, epochs=4, verbose=0)
plain = CrossEncoder.from_config(model.get_config())
plain.set_weights(model.get_weights())
print(json.dumps({{"replicas": strategy.num_replicas_in_sync,
                   "steps": int(model.optimizer.iterations.numpy()),
                   "decay_steps": model.optimizer._learning_rate.decay_steps,
                   "loss": history.history["loss"],
                   "split": model.predict(pairs[:5], batch_size=3).tolist(),
                   "one": plain.predict(pairs[:5], batch_size=3).tolist()}}))
""")
    result = json.loads(out.strip().splitlines()[-1])
    assert result["replicas"] == 2
    # 36 pairs in global batches of 8, 4 epochs; several replicas take whole batches only.
    assert result["steps"] == result["decay_steps"] == 4 * (36 // 8)
    assert np.isfinite(result["loss"]).all() and result["loss"][-1] < result["loss"][0]
    np.testing.assert_allclose(result["split"], result["one"], atol=1e-5)
