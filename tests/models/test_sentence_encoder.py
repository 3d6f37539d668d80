"""SentenceEncoder: pooling math, normalization, encode order/padding, config
round trip, save/load, and clear errors for bad inputs (tiny random encoder)."""

import numpy as np
import pytest

from tfbert import BertConfig, BertEncoder, BertPreprocessor, SentenceEncoder

VOCAB = "tests/data/pretraining/vocab.txt"
TEXTS = ["The file is opened for reading and writing.", "Read it.",
         "Return the number of items in the container.", "Close the stream."]


@pytest.fixture(scope="module")
def model():
    config = BertConfig.from_preset("tiny", vocab_size=1931, dropout_rate=0.0,
                                    attention_dropout_rate=0.0)
    pre = BertPreprocessor(vocab_file=VOCAB, seq_length=32)
    return SentenceEncoder(BertEncoder(config), pooling="mean", preprocessor=pre)


def reference(model, texts, pooling):
    """Pooling written out in NumPy over the encoder's token outputs."""
    inputs = {k: v.numpy() for k, v in model.preprocessor(np.array(texts)).items()}
    tokens = model.encoder(inputs)["sequence_output"].numpy()
    mask = inputs["input_mask"][..., None].astype(np.float32)
    if pooling == "mean":
        pooled = (tokens * mask).sum(1) / mask.sum(1)
    elif pooling == "cls":
        pooled = tokens[:, 0]
    else:
        pooled = np.where(mask > 0, tokens, -np.inf).max(1)
    return pooled


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_pooling_matches_numpy(model, pooling):
    m = SentenceEncoder(model.encoder, pooling=pooling, normalize=False,
                        preprocessor=model.preprocessor)
    np.testing.assert_allclose(m.encode(TEXTS), reference(model, TEXTS, pooling), atol=1e-5)


def test_encode_normalized_in_input_order_any_batch_size(model):
    full = model.encode(TEXTS, batch_size=4)
    np.testing.assert_allclose(np.linalg.norm(full, axis=1), 1.0, atol=1e-5)
    want = reference(model, TEXTS, "mean")
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    np.testing.assert_allclose(full, want, atol=1e-5)
    # Sorted by length inside; batch padding to the longest changes nothing.
    np.testing.assert_allclose(model.encode(TEXTS, batch_size=1), full, atol=1e-5)
    np.testing.assert_allclose(model.encode(TEXTS[::-1], batch_size=3), full[::-1], atol=1e-5)


def test_dense_layer_and_dim(model):
    m = SentenceEncoder(model.encoder, dense_units=16, preprocessor=model.preprocessor)
    assert m.dim == 16 and m.encode(TEXTS[:2]).shape == (2, 16)


def test_config_round_trip(model):
    m = SentenceEncoder(model.encoder, pooling="max", dense_units=8, dense_activation="linear",
                        normalize=False, preprocessor=model.preprocessor)
    config = m.get_config()
    again = SentenceEncoder.from_config(config)
    assert again.get_config()["pooling"] == "max" and again.dense_units == 8
    assert again.preprocessor.seq_length == 32 and not again.normalize


def test_save_and_from_pretrained(model, tmp_path):
    m = SentenceEncoder(model.encoder, pooling="cls", dense_units=8, preprocessor=model.preprocessor)
    m.save_pretrained(str(tmp_path / "ckpt"))
    again = SentenceEncoder.from_pretrained(str(tmp_path / "ckpt"))
    assert (again.pooling, again.dense_units, again.preprocessor.seq_length) == ("cls", 8, 32)
    np.testing.assert_allclose(again.encode(TEXTS), m.encode(TEXTS), atol=1e-6)


def test_progress_bar(model, capsys):
    model.encode(TEXTS, show_progress=True)
    assert "4/4" in capsys.readouterr().out


@pytest.mark.parametrize("texts, error, match", [
    ([], ValueError, r"texts is empty: no texts"),
    (["ok", 3], TypeError, r"texts\[1\] is an int \(3\)"),
    (["ok", None], TypeError, r"texts\[1\] is NoneType \(None\)"),
    ({"b", "a"}, TypeError, r"texts is a set, whose order is arbitrary"),
    ([b"\xff"], ValueError, r"texts\[0\] is bytes that are not UTF-8 text"),
    ("one string", TypeError, r"texts is one string; pass a list of texts"),
])
def test_bad_inputs(model, texts, error, match):
    with pytest.raises(error, match=match):
        model.encode(texts)


def test_bad_settings(model):
    with pytest.raises(ValueError, match="pooling must be one of"):
        SentenceEncoder(model.encoder, pooling="sum")
    with pytest.raises(ValueError, match="needs a preprocessor"):
        SentenceEncoder(model.encoder).encode(["x"])
    with pytest.raises(ValueError, match=r"save: m\.h5 does not end in \.keras"):
        model.save("m.h5")  # Keras' own message names model.export, not the path
    # Issue 66: each of these was Keras' answer from inside, or silently taken.
    with pytest.raises(TypeError, match=r"^SentenceEncoder\.predict takes the dict of the "
                                        r"three int32 id tensors; embed texts with encode"):
        model.predict(["a text"])  # Keras: "Unrecognized data type"
    with pytest.raises(TypeError, match=r"^show_progress must be True or False or None, got "
                                        r"'no'\.$"):
        model.encode(["x"], show_progress="no")  # "no" showed a bar
    with pytest.raises(TypeError, match=r"^SentenceEncoder got unexpected keyword argument\(s\) "
                                        r"\['normalise'\]\.$"):
        SentenceEncoder(model.encoder, normalise=False)  # Keras dropped it: normalized
    with pytest.raises(TypeError, match=r"^save_pretrained must be a path \(a string\), got "
                                        r"None\.$"):
        model.save_pretrained(None)  # once "The output directory is empty"


def test_long_text_windows_pool_by_wordpieces(model):
    from tfbert.text.windows import pack_windows

    long_text = " ".join(TEXTS * 6)  # several windows of seq_length 32
    texts = [long_text, "Read it.", ""]
    windows = model.encode(texts, long_text="windows", doc_stride=10)
    truncated = model.encode(texts)
    # A text that fits one window: the same embedding as truncation.
    np.testing.assert_allclose(windows[1:], truncated[1:], atol=1e-6)
    # A long one: the windows' embeddings averaged by wordpieces, normalized again.
    pieces = model.preprocessor.tokenize(np.array([long_text])).merge_dims(1, 2)
    spans, inputs = pack_windows(model.preprocessor, pieces, 32, doc_stride=10)
    per_window = model(inputs).numpy()
    weights = spans["window_length"].numpy()[:, None]
    assert len(weights) > 3
    want = (per_window * weights).sum(0) / weights.sum()
    np.testing.assert_allclose(windows[0], want / np.linalg.norm(want), atol=1e-5)
    assert not np.allclose(windows[0], truncated[0], atol=1e-3)
    # batch_size counts windows: any value gives the same vectors.
    for batch_size in (1, 5, 64):
        np.testing.assert_allclose(model.encode(texts, batch_size=batch_size, long_text="windows",
                                                doc_stride=10), windows, atol=1e-6)
    # The cap: only the first max_windows windows of a text are read.
    huge = "word " * 100_000
    capped = model.encode([huge, " ".join(["word"] * 60)], long_text="windows", max_windows=2,
                          doc_stride=30)
    np.testing.assert_allclose(capped[0], capped[1], atol=1e-6)
    with pytest.raises(ValueError, match="long_text must be one of"):
        model.encode(texts, long_text="chunks")
