"""FeatureExtractionTask: features from strings equal the encoder's layers."""

import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertEncoder
from tfbert.tasks.feature_extraction import FeatureExtractionConfig, FeatureExtractionTask


def test_features_from_strings(tiny_config, make_preprocessor):
    task = FeatureExtractionTask(FeatureExtractionConfig(layers=(0, 1), combine="sum",
                                                         seq_length=16))
    pre = make_preprocessor(16)
    task.prepare(pre)
    encoder = BertEncoder(tiny_config)
    model = task.build_model(encoder)
    text = ["A cat sat on the mat.", "Dogs bark."]
    out = task.features(model, text)
    assert out["embedding"].shape == (2, 128)
    assert out["tokens"][1] == ["[CLS]", "dogs", "bark", ".", "[SEP]"]
    assert [f.shape for f in out["features"]] == [(9, 128), (5, 128)]
    layers = encoder(pre(tf.constant(text)))["encoder_outputs"]
    want = (layers[0] + layers[1]).numpy()
    np.testing.assert_allclose(out["features"][1], want[1, :5], atol=1e-5)
    np.testing.assert_allclose(out["embedding"][1], want[1, :5].mean(0), atol=1e-5)


def test_frozen_head_needs_classification(tiny_config):
    from tfbert.tasks.feature_extraction import train_frozen_head

    with pytest.raises(ValueError, match="classification and regression only"):
        train_frozen_head(FeatureExtractionTask(), None, None, None, None, None, None)
