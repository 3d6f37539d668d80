"""BertTokenClassifier: per-token logits on the sequence output."""

import numpy as np
import pytest

from tfbert import BertEncoder
from tfbert.models.token_classifier import BertTokenClassifier


def test_per_token_logits_and_round_trip(tiny_config):
    encoder = BertEncoder(tiny_config.replace(vocab_size=50))
    model = BertTokenClassifier(encoder, num_classes=5, dropout=0.0)
    ids = np.array([[2, 7, 9, 3, 0], [2, 5, 3, 0, 0]], "int32")
    x = {"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
         "input_type_ids": np.zeros_like(ids)}
    logits = model(x)
    assert logits.shape == (2, 5, 5)
    w, b = model.get_layer("logits").get_weights()
    np.testing.assert_allclose(logits, encoder(x)["sequence_output"].numpy() @ w + b, atol=1e-5)
    clone = BertTokenClassifier.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(x), logits, atol=1e-6)
    # The unused pooler is frozen; everything else trains.
    assert not any("pooler" in v.path for v in model.trainable_weights)
    assert len(model.trainable_weights) == len(model.weights) - 2
    with pytest.raises(ValueError, match="num_classes"):
        BertTokenClassifier(encoder, num_classes=0)
