"""FeatureExtractionTask: features from strings equal the encoder's layers."""

import numpy as np
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


def test_feature_extraction_trains_nothing(tiny_config, make_preprocessor):
    # `tools/finetune.py --task=feature_extraction` runs through the same
    # contract: `fit` returns the features model untouched and no scores.
    task = FeatureExtractionTask({"layers": [-1], "seq_length": 16}).prepare(make_preprocessor(16))
    encoder = BertEncoder(tiny_config)
    before = [w.numpy().copy() for w in encoder.weights]
    model, scores = task.fit(encoder, None, None, tf.distribute.get_strategy(), None)
    assert scores == [{}] and task.best_epoch(scores) == 0
    for w, b in zip(encoder.weights, before):
        np.testing.assert_array_equal(w.numpy(), b)
    assert model.output["sentence_features"].shape[-1] == 128
