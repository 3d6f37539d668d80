"""BertFeatureExtractor: chosen layers combined and pooled, checked against the encoder."""

import numpy as np
import pytest

from tfbert import BertEncoder
from tfbert.models.feature_extractor import BertFeatureExtractor


@pytest.fixture()
def setup(tiny_config):
    encoder = BertEncoder(tiny_config.replace(vocab_size=50, num_layers=3))
    ids = np.array([[2, 7, 9, 3, 0, 0], [2, 5, 3, 0, 0, 0]], "int32")
    x = {"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
         "input_type_ids": np.zeros_like(ids)}
    layers = [t.numpy() for t in encoder(x)["encoder_outputs"]]
    return encoder, x, layers


def test_concat_last_two_mean_pooled(setup):
    encoder, x, layers = setup
    out = BertFeatureExtractor(encoder, layers=(-2, -1), combine="concat")(x)
    want = np.concatenate([layers[1], layers[2]], axis=-1)
    np.testing.assert_allclose(out["token_features"], want, atol=1e-6)
    mask = x["input_mask"][..., None]
    np.testing.assert_allclose(out["sentence_features"],
                               (want * mask).sum(1) / mask.sum(1), atol=1e-5)
    # Padding does not change a sentence's features.
    short = {k: v[:1, :4] for k, v in x.items()}
    np.testing.assert_allclose(BertFeatureExtractor(encoder, layers=(-2, -1))(short)[
        "sentence_features"], out["sentence_features"][:1], atol=1e-5)


def test_sum_cls_and_round_trip(setup):
    encoder, x, layers = setup
    model = BertFeatureExtractor(encoder, layers=(0, 2), combine="sum", pooling="cls")
    out = model(x)
    np.testing.assert_allclose(out["token_features"], layers[0] + layers[2], atol=1e-5)
    np.testing.assert_allclose(out["sentence_features"], (layers[0] + layers[2])[:, 0], atol=1e-5)
    assert model.feature_size == 128
    clone = BertFeatureExtractor.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(x)["sentence_features"], out["sentence_features"], atol=1e-6)


def test_errors(setup):
    encoder = setup[0]
    with pytest.raises(ValueError, match=r"\[5\] are out of range .* 3 layers"):
        BertFeatureExtractor(encoder, layers=(5,))
    with pytest.raises(ValueError, match="combine"):
        BertFeatureExtractor(encoder, layers=(-1,), combine="max")
    with pytest.raises(ValueError, match="pooling"):
        BertFeatureExtractor(encoder, layers=(-1,), pooling="avg")
