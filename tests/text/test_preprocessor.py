"""BertPreprocessor: the TF Hub preprocessor API on the real uncased vocab."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfbert.text import BertPreprocessor


@pytest.fixture(scope="module")
def preprocessor(uncased_vocab_file):
    return BertPreprocessor(uncased_vocab_file, lower_case=True, seq_length=16)


def test_single_text(preprocessor):
    out = preprocessor(tf.constant(["Hello world!", ""]))
    assert sorted(out) == ["input_mask", "input_type_ids", "input_word_ids"]
    ids = out["input_word_ids"].numpy()
    assert ids.dtype == np.int32 and ids.shape == (2, 16)
    assert ids[0, :5].tolist() == [101, 7592, 2088, 999, 102]
    assert ids[1, :3].tolist() == [101, 102, 0]
    assert out["input_mask"].numpy()[0].tolist() == [1] * 5 + [0] * 11
    assert out["input_type_ids"].numpy().sum() == 0


def test_pair_and_type_ids(preprocessor):
    out = preprocessor((tf.constant(["hello"]), tf.constant(["world again"])))
    assert out["input_word_ids"].numpy()[0, :7].tolist() == [101, 7592, 102, 2088, 2153, 102, 0]
    assert out["input_type_ids"].numpy()[0, :7].tolist() == [0, 0, 0, 1, 1, 1, 0]


def test_tokenize_is_words_by_wordpieces(preprocessor):
    ids = preprocessor.tokenize(tf.constant(["unbelievable, isn't it"]))
    assert isinstance(ids, tf.RaggedTensor) and ids.ragged_rank == 2 and ids.dtype == tf.int32
    words = preprocessor.wordpieces(tf.constant(["unbelievable, isn't it"])).to_list()[0]
    assert [[p.decode() for p in w] for w in words] == [
        ["unbelievable"], [","], ["isn"], ["'"], ["t"], ["it"]
    ]


def test_bert_pack_inputs_explicit_length(preprocessor):
    a = preprocessor.tokenize(tf.constant(["one two three four five"]))
    b = preprocessor.tokenize(tf.constant(["six seven eight"]))
    out = preprocessor.bert_pack_inputs([a, b], seq_length=7)
    # budget 4, round robin: two words from each.
    assert out["input_word_ids"].numpy()[0].tolist() == [101, 2028, 2048, 102, 2416, 2698, 102]


def test_special_tokens(preprocessor):
    special = {k: int(v) for k, v in preprocessor.get_special_tokens_dict().items()}
    assert special == {
        "vocab_size": 30522,
        "start_of_sequence_id": 101,
        "end_of_segment_id": 102,
        "padding_id": 0,
        "mask_id": 103,
    }


def test_in_tf_data(preprocessor):
    ds = tf.data.Dataset.from_tensor_slices(["a b", "hello"]).batch(2).map(preprocessor)
    batch = next(iter(ds))
    assert batch["input_word_ids"].shape == (2, 16)
    assert batch["input_word_ids"].numpy()[1, :3].tolist() == [101, 7592, 102]


def test_get_config_round_trip(preprocessor):
    clone = BertPreprocessor.from_config(preprocessor.get_config())
    texts = tf.constant(["Round trip, Ünïcödé!"])
    for key, value in preprocessor(texts).items():
        np.testing.assert_array_equal(clone(texts)[key], value)


def test_keras_save_reload(preprocessor, tmp_path):
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, preprocessor(inputs))
    path = str(tmp_path / "pre.keras")
    model.save(path)
    reloaded = keras.models.load_model(path)
    texts = tf.constant(["Saved and loaded.", "x"])
    for key, value in model(texts).items():
        np.testing.assert_array_equal(reloaded(texts)[key], value)


def test_from_pretrained(uncased_vocab_file, tmp_path):
    (tmp_path / "vocab.txt").write_bytes(open(uncased_vocab_file, "rb").read())
    (tmp_path / "config.json").write_text(
        json.dumps({"format": "tfbert-checkpoint", "lower_case": False,
                    "encoder": {"max_position_embeddings": 64}})
    )
    pre = BertPreprocessor.from_pretrained(str(tmp_path), seq_length=8)
    assert pre.lower_case is False and pre.max_seq_length == 64
    with pytest.raises(FileNotFoundError, match="config.json"):
        BertPreprocessor.from_pretrained(str(tmp_path / "missing"))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))  # a HF dir
    with pytest.raises(ValueError, match="not a tfbert checkpoint"):
        BertPreprocessor.from_pretrained(str(tmp_path))


def test_bad_seq_length(uncased_vocab_file):
    with pytest.raises(ValueError, match="max_position_embeddings"):
        BertPreprocessor(uncased_vocab_file, seq_length=513)
    pre = BertPreprocessor(uncased_vocab_file, seq_length=8)
    a = pre.tokenize(tf.constant(["a"]))
    with pytest.raises(ValueError, match="at least 4"):
        pre.bert_pack_inputs([a, a, a], seq_length=3)


def test_non_string_input_is_clear_error(preprocessor):
    with pytest.raises(TypeError, match="tf.string"):
        preprocessor(tf.constant([1, 2]))


def test_user_model_strings_to_logits_fits_and_reloads(tmp_path):
    """strings -> BertPreprocessor -> BertEncoder -> Dense: compile, fit on a
    tf.data of strings, save as .keras with the preprocessor inside, reload."""
    from tfbert import BertConfig, BertEncoder

    words = ["good", "great", "fine", "bad", "awful", "poor", "movie", "film", "a", "very"]
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words + ["!", "."]
    preprocessor = BertPreprocessor(vocabulary=vocabulary, seq_length=8, name="preprocessor")
    config = BertConfig.from_preset("tiny", vocab_size=len(vocabulary), num_layers=1,
                                    dropout_rate=0.0, attention_dropout_rate=0.0)
    encoder = BertEncoder(config)

    text = keras.Input(shape=(), dtype="string", name="text")
    pooled = encoder(preprocessor(text))["pooled_output"]
    logits = keras.layers.Dense(2, name="logits")(pooled)
    model = keras.Model(text, logits)
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])

    rng = np.random.default_rng(0)
    texts, labels = [], []
    for _ in range(64):
        label = int(rng.integers(2))
        adjective = rng.choice(words[:3] if label else words[3:6])
        texts.append(f"A {'very ' * int(rng.integers(2))}{adjective} {rng.choice(['movie', 'film'])}!")
        labels.append(label)
    ds = tf.data.Dataset.from_tensor_slices((texts, labels)).shuffle(64, seed=0).batch(16)
    history = model.fit(ds, epochs=8, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert history.history["accuracy"][-1] == 1.0

    path = str(tmp_path / "classifier.keras")
    model.save(path)
    reloaded = keras.models.load_model(path)
    probe = tf.constant(["a very good film!", "an awful movie."])
    np.testing.assert_allclose(reloaded(probe), model(probe), atol=1e-6)
    assert reloaded.get_layer("preprocessor").vocab.tokens == vocabulary


# === What users pass: lists, NumPy arrays, bad items, segment mismatches ===


@pytest.fixture()
def pre(uncased_vocab_file):
    return BertPreprocessor(vocab_file=uncased_vocab_file, seq_length=8, max_segments=2)


def test_python_lists_and_numpy_arrays_are_accepted(pre):
    want = pre(tf.constant(["Hello world", "Café"]))["input_word_ids"].numpy()
    for given in (["Hello world", "Café"], ("Hello world", "Café"), [b"Hello world", "Café".encode()],
                  np.array(["Hello world", "Café"]), np.array(["Hello world", "Café"], object)):
        np.testing.assert_array_equal(pre(given)["input_word_ids"], want)
    pairs = pre([["Hello world"], ["Café"]])["input_type_ids"].numpy()
    assert pairs.tolist() == [[0, 0, 0, 0, 1, 1, 0, 0]]
    assert pre([])["input_word_ids"].shape == (0, 8)


@pytest.mark.parametrize("given, message", [
    (["ok", None], r"^BertPreprocessor: text 1 is None; expected str or bytes\.$"),
    (["ok", "fine", 3], r"^BertPreprocessor: text 2 is int 3; expected str or bytes\.$"),
    (np.array([1.5, 2.5]), r"^BertPreprocessor: text 0 is float 1\.5; expected str or bytes\.$"),
    ([["a"], "b"], r"text 0 is list"),
])
def test_bad_items_are_named(pre, given, message):
    with pytest.raises(TypeError, match=message):
        pre(given)


def test_float_tensor_names_its_dtype(pre):
    with pytest.raises(TypeError, match=r"^BertPreprocessor takes tf\.string texts, got a tensor of dtype float32 and shape \(2,\)\.$"):
        pre(tf.constant([1.0, 2.0]))


def test_ragged_strings_are_rejected_with_the_shape(pre):
    with pytest.raises(ValueError, match=r"1-D batch of strings"):
        pre(tf.ragged.constant([["a", "b"], ["c"]]))


def test_rank_2_strings_are_one_line_error(pre):
    # [batch, 1] (keras.Input(shape=(1,))) is accepted; other rank 2 is not.
    assert pre(tf.constant([["hi"], ["there"]]))["input_word_ids"].shape[0] == 2
    with pytest.raises(ValueError, match=r"^BertPreprocessor takes a 1-D batch of strings \[batch\], "
                                         r"got shape \(2, 2\); pass pairs as a list of batches"):
        pre(tf.constant([["a", "b"], ["c", "d"]]))


def test_segments_of_different_batch_sizes(pre):
    with pytest.raises(ValueError, match=r"different batch sizes \[2, 1\]"):
        pre([["one", "two"], ["three"]])


def test_more_segments_than_type_vocab_size(pre, tmp_path, uncased_vocab_file):
    with pytest.raises(ValueError, match=r"3 segments, but the encoder has type_vocab_size=2"):
        pre([["a"], ["b"], ["c"]])
    # from_pretrained reads type_vocab_size from the checkpoint's config.
    (tmp_path / "vocab.txt").write_bytes(open(uncased_vocab_file, "rb").read())
    (tmp_path / "config.json").write_text(json.dumps(
        {"format": "tfbert-checkpoint", "encoder": {"type_vocab_size": 3}}))
    three = BertPreprocessor.from_pretrained(str(tmp_path), seq_length=8)
    assert three.max_segments == 3
    assert three([["a"], ["b"], ["c"]])["input_type_ids"].numpy().max() == 2
