"""Multi-label metrics against scikit-learn (installed with sentence-transformers),
and the thresholds chosen on validation data."""

import numpy as np
import pytest
from sklearn import metrics as skm

from tfbert.metrics.multi_label import choose_thresholds, multi_label_metrics


def test_metrics_equal_scikit_learn_on_random_label_sets():
    rng = np.random.default_rng(0)
    y_true = rng.random((200, 7)) < 0.3
    y_true[:, 6] = False  # a label that never occurs
    y_pred = rng.random((200, 7)) < 0.35
    y_pred[:20] = y_true[:20]  # some exact rows
    labels = list("abcdefg")
    m = multi_label_metrics(y_true, y_pred, labels)
    kw = dict(zero_division=0)
    assert m["micro_f1"] == pytest.approx(skm.f1_score(y_true, y_pred, average="micro", **kw))
    assert m["macro_f1"] == pytest.approx(skm.f1_score(y_true, y_pred, average="macro", **kw))
    assert m["micro_precision"] == pytest.approx(
        skm.precision_score(y_true, y_pred, average="micro", **kw))
    assert m["micro_recall"] == pytest.approx(
        skm.recall_score(y_true, y_pred, average="micro", **kw))
    assert m["subset_accuracy"] == pytest.approx(skm.accuracy_score(y_true, y_pred))
    p, r, f, s = skm.precision_recall_fscore_support(y_true, y_pred, **kw)
    for i, label in enumerate(labels):
        got = m["per_label"][label]
        assert (got["precision"], got["recall"], got["f1"]) == pytest.approx((p[i], r[i], f[i]))
        assert got["support"] == s[i]
    assert m["per_label"]["g"]["support"] == 0


def test_thresholds_maximise_f1_on_the_grid():
    rng = np.random.default_rng(1)
    y_true = rng.random((300, 4)) < 0.25
    # Label j's scores separate best around threshold 0.2 * (j + 1).
    probabilities = np.clip(y_true * (0.2 * np.arange(1, 5)) + rng.normal(0.1, 0.05, (300, 4)),
                            0, 1)
    (t,) = set(choose_thresholds(y_true, probabilities).tolist())
    best = max(skm.f1_score(y_true, probabilities >= g, average="micro")
               for g in np.arange(1, 100) / 100)
    assert skm.f1_score(y_true, probabilities >= t, average="micro") == pytest.approx(best)
    per_label = choose_thresholds(y_true, probabilities, per_label=True)
    assert per_label[0] < per_label[1] <= per_label[2]  # one per label
    for j in range(4):
        f = skm.f1_score(y_true[:, j], probabilities[:, j] >= per_label[j])
        assert f >= skm.f1_score(y_true[:, j], probabilities[:, j] >= t) - 1e-9
    assert choose_thresholds(np.zeros((3, 2)), np.ones((3, 2)) * 0.7, per_label=True).tolist() \
        == [0.5, 0.5]
