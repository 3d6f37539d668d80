"""BertSpanLabeler: start/end logits masked to context tokens and [CLS]."""

import keras
import numpy as np
import pytest

from tfbert import BertEncoder
from tfbert.models.span_labeler import MASKED_LOGIT, BertSpanLabeler


def test_logits_mask_and_round_trip(tiny_config):
    encoder = BertEncoder(tiny_config.replace(vocab_size=50))
    model = BertSpanLabeler(encoder)
    # [CLS] q q [SEP] c c c [SEP] pad / [CLS] q [SEP] c [SEP] pad pad pad pad
    ids = np.array([[2, 7, 8, 3, 9, 10, 11, 3, 0], [2, 7, 3, 9, 3, 0, 0, 0, 0]], "int32")
    types = np.array([[0, 0, 0, 0, 1, 1, 1, 1, 0], [0, 0, 0, 1, 1, 0, 0, 0, 0]], "int32")
    x = {"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"), "input_type_ids": types}
    out = model(x)
    allowed = out["start_logits"].numpy() > MASKED_LOGIT
    assert allowed.tolist() == [[True, False, False, False, True, True, True, False, False],
                                [True, False, False, True, False, False, False, False, False]]
    assert ((out["end_logits"].numpy() > MASKED_LOGIT) == allowed).all()
    w, b = model.get_layer("span_logits").get_weights()
    raw = encoder(x)["sequence_output"].numpy() @ w + b
    np.testing.assert_allclose(out["start_logits"].numpy()[allowed], raw[..., 0][allowed], atol=1e-5)
    clone = BertSpanLabeler.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(x)["end_logits"], out["end_logits"], atol=1e-6)
    assert clone.get_config()["dropout"] == 0.0
    assert not any("pooler" in v.path for v in model.trainable_weights)
    with pytest.raises(TypeError, match="BertEncoder"):
        BertSpanLabeler(keras.layers.Dense(2))
