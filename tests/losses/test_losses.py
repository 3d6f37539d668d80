"""The four sentence losses against their formulas written out in NumPy, and
one training step each that lowers the loss (tiny random encoder)."""

import keras
import numpy as np
import pytest

from tfbert import BertConfig, BertEncoder, BertPreprocessor, SentenceEncoder
from tfbert.losses import (CosineSimilarityLoss, MultipleNegativesRankingLoss, SoftmaxLoss,
                           TripletLoss)

ANCHORS = ["Open the file.", "Return the length.", "Close the socket.", "Sort the list."]
POSITIVES = ["The file is opened for reading.", "The number of items is returned.",
             "The connection is closed.", "Items are sorted in place."]
NEGATIVES = ["Sort the list.", "Open the file.", "Return the length.", "Close the socket."]


@pytest.fixture(scope="module")
def setup():
    keras.utils.set_random_seed(0)
    config = BertConfig.from_preset("tiny", vocab_size=1931, num_layers=1, dropout_rate=0.0,
                                    attention_dropout_rate=0.0)
    pre = BertPreprocessor(vocab_file="tests/data/pretraining/vocab.txt", seq_length=16)
    model = SentenceEncoder(BertEncoder(config), preprocessor=pre)
    x = {"anchor": pre(np.array(ANCHORS)), "positive": pre(np.array(POSITIVES)),
         "negative": pre(np.array(NEGATIVES))}
    emb = {k: model(v).numpy() for k, v in x.items()}
    return model, x, emb


def log_softmax(z):
    z = z - z.max(1, keepdims=True)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


def test_ranking_loss_formula(setup):
    model, x, e = setup
    loss = MultipleNegativesRankingLoss(model, scale=20.0)
    pair = {"anchor": x["anchor"], "positive": x["positive"]}
    logits = 20.0 * e["anchor"] @ e["positive"].T  # embeddings are unit length
    want = -np.mean(np.diag(log_softmax(logits)))
    assert float(loss.compute_loss(y_pred=loss(pair))) == pytest.approx(want, rel=1e-4)
    # Hard negatives add columns.
    logits = 20.0 * e["anchor"] @ np.concatenate([e["positive"], e["negative"]]).T
    want = -np.mean(np.diag(log_softmax(logits)))
    assert float(loss.compute_loss(y_pred=loss(x))) == pytest.approx(want, rel=1e-4)


def test_cosine_loss_formula(setup):
    model, x, e = setup
    loss = CosineSimilarityLoss(model)
    scores = np.array([1.0, 0.5, 0.0, 0.2], np.float32)
    cos = (e["anchor"] * e["positive"]).sum(1)
    got = loss.compute_loss(y=scores, y_pred=loss({"anchor": x["anchor"], "positive": x["positive"]}))
    assert float(got) == pytest.approx(np.mean((cos - scores) ** 2), rel=1e-4)


def test_triplet_loss_formula(setup):
    model, x, e = setup
    loss = TripletLoss(model, margin=0.5)
    d_pos = np.linalg.norm(e["anchor"] - e["positive"], axis=1)
    d_neg = np.linalg.norm(e["anchor"] - e["negative"], axis=1)
    want = np.mean(np.maximum(d_pos - d_neg + 0.5, 0))
    assert float(loss.compute_loss(y_pred=loss(x))) == pytest.approx(want, rel=1e-4)
    with pytest.raises(ValueError, match="needs a negative column"):
        loss({"anchor": x["anchor"], "positive": x["positive"]})


def test_softmax_loss_formula(setup):
    model, x, e = setup
    loss = SoftmaxLoss(model, num_labels=3)
    pair = {"anchor": x["anchor"], "positive": x["positive"]}
    logits = loss(pair).numpy()
    kernel, bias = (w.numpy() for w in loss.classifier.weights)
    u, v = e["anchor"], e["positive"]
    np.testing.assert_allclose(logits, np.concatenate([u, v, abs(u - v)], 1) @ kernel + bias,
                               atol=1e-5)
    labels = np.array([0, 1, 2, 0])
    want = -np.mean(log_softmax(logits)[np.arange(4), labels])
    assert float(loss.compute_loss(y=labels, y_pred=loss(pair))) == pytest.approx(want, rel=1e-4)


@pytest.mark.parametrize("make, columns, y", [
    (lambda m: MultipleNegativesRankingLoss(m), ("anchor", "positive"), None),
    (lambda m: CosineSimilarityLoss(m), ("anchor", "positive"), [0.9, 0.8, 0.7, 0.9]),
    (lambda m: SoftmaxLoss(m, 2), ("anchor", "positive"), [1, 0, 1, 0]),
    (lambda m: TripletLoss(m, margin=1.0), ("anchor", "positive", "negative"), None),
])
def test_training_lowers_the_loss(setup, make, columns, y):
    base, x, _ = setup
    # A fresh copy, so the tests do not train the shared model.
    model = SentenceEncoder.from_config(base.get_config())
    model.set_weights(base.get_weights())
    loss = make(model)
    batch = {c: x[c] for c in columns}
    data = (batch,) if y is None else (batch, np.array(y))
    loss.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = loss.fit(*data, epochs=3, verbose=0).history["loss"]
    assert history[-1] < history[0]
    # The wrapper's weights include the encoder's (best weights / export follow).
    assert {id(w) for w in model.weights} <= {id(w) for w in loss.weights}
