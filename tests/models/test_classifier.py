"""BertClassifier: shapes, config round trip, errors."""

import keras
import numpy as np
import pytest

from tfbert import BertEncoder
from tfbert.models.classifier import BertClassifier


def inputs(ids):
    ids = np.asarray(ids, "int32")
    return {"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
            "input_type_ids": np.zeros_like(ids)}


def test_logits_on_pooled_output_and_round_trip(tiny_config):
    encoder = BertEncoder(tiny_config.replace(vocab_size=50))
    model = BertClassifier(encoder, num_classes=3, dropout=0.0)
    x = inputs([[2, 7, 9, 3, 0, 0], [2, 5, 3, 0, 0, 0]])
    logits = model(x)
    assert logits.shape == (2, 3) and logits.dtype == "float32"
    # The head is a dense layer over the pooled output.
    pooled = encoder(x)["pooled_output"]
    w, b = model.get_layer("logits").get_weights()
    np.testing.assert_allclose(logits, pooled.numpy() @ w + b, atol=1e-5)

    clone = BertClassifier.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(x), logits, atol=1e-6)
    assert clone.num_classes == 3


def test_mean_pooling_head_reads_the_real_tokens(tiny_config):
    encoder = BertEncoder(tiny_config.replace(vocab_size=50))
    model = BertClassifier(encoder, num_classes=1, dropout=0.0, pooling="mean")
    x = inputs([[2, 7, 9, 3, 0, 0], [2, 5, 3, 0, 0, 0]])
    tokens = encoder(x)["sequence_output"].numpy()
    mask = x["input_mask"][..., None]
    mean = (tokens * mask).sum(1) / mask.sum(1)  # padding left out
    w, b = model.get_layer("logits").get_weights()
    np.testing.assert_allclose(model(x), mean @ w + b, atol=1e-5)
    # Padding does not change a row's score.
    longer = inputs([[2, 7, 9, 3, 0, 0, 0, 0]])
    np.testing.assert_allclose(model(longer)[0], model(x)[0], atol=1e-5)
    assert not encoder.pooler.trainable  # no gradient reaches it
    clone = BertClassifier.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    assert clone.pooling == "mean"
    np.testing.assert_allclose(clone(x), model(x), atol=1e-6)


def test_max_pooling_head_reads_the_real_tokens(tiny_config):
    encoder = BertEncoder(tiny_config.replace(vocab_size=50))
    model = BertClassifier(encoder, num_classes=1, dropout=0.0, pooling="max")
    x = inputs([[2, 7, 9, 3, 0, 0], [2, 5, 3, 0, 0, 0]])
    tokens = encoder(x)["sequence_output"].numpy()
    pooled = np.where(x["input_mask"][..., None] > 0, tokens, -np.inf).max(1)
    w, b = model.get_layer("logits").get_weights()
    np.testing.assert_allclose(model(x), pooled @ w + b, atol=1e-5)
    assert not encoder.pooler.trainable


def test_regression_head_and_saving(tiny_config, tmp_path):
    model = BertClassifier(BertEncoder(tiny_config.replace(vocab_size=50)), num_classes=1)
    x = inputs([[2, 7, 3]])
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(loaded(x), model(x), atol=1e-6)
    assert loaded(x).shape == (1, 1)


def test_errors(tiny_config):
    with pytest.raises(TypeError, match="BertEncoder"):
        BertClassifier("encoder", num_classes=2)
    with pytest.raises(ValueError, match="num_classes"):
        BertClassifier(BertEncoder(tiny_config.replace(vocab_size=50)), num_classes=0)
    with pytest.raises(ValueError, match=r"pooling must be one of \['cls', 'mean', 'max'\], got 'avg'"):
        BertClassifier(BertEncoder(tiny_config.replace(vocab_size=50)), 2, pooling="avg")
