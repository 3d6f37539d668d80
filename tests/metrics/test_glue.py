"""GLUE metrics against hand-computed cases and scipy."""

import numpy as np
import pytest
import scipy.stats

from tfbert.metrics import glue


def test_accuracy_and_binary_f1_by_hand():
    y_true = [1, 1, 1, 0, 0, 0]
    y_pred = [1, 1, 0, 1, 0, 0]
    assert glue.accuracy(y_true, y_pred) == pytest.approx(4 / 6)
    # TP=2, FP=1, FN=1 -> F1 = 4 / 6.
    assert glue.binary_f1(y_true, y_pred) == pytest.approx(2 / 3)
    # Positive class 0: TP=2, FP=1, FN=1 too.
    assert glue.binary_f1(y_true, y_pred, positive=0) == pytest.approx(2 / 3)
    assert glue.binary_f1([0, 0], [0, 0]) == 0.0


def test_macro_f1_by_hand():
    y_true = [0, 0, 1, 1, 2, 2]
    y_pred = [0, 1, 1, 1, 2, 0]
    # class 0: TP1 FP1 FN1 -> .5; class 1: TP2 FP1 FN0 -> .8; class 2: TP1 FP0 FN1 -> 2/3
    assert glue.macro_f1(y_true, y_pred) == pytest.approx((0.5 + 0.8 + 2 / 3) / 3)
    # A class that never occurs counts as F1 0 when listed.
    assert glue.macro_f1(y_true, y_pred, labels=[0, 1, 2, 3]) == pytest.approx(
        (0.5 + 0.8 + 2 / 3) / 4)


def test_mcc_by_hand():
    # TP=3 TN=2 FP=1 FN=2: (3*2 - 1*2) / sqrt(4*5*3*4) = 4 / sqrt(240)
    y_true = [1, 1, 1, 1, 1, 0, 0, 0]
    y_pred = [1, 1, 1, 0, 0, 0, 0, 1]
    assert glue.matthews_corrcoef(y_true, y_pred) == pytest.approx(4 / np.sqrt(240))
    assert glue.matthews_corrcoef(y_true, y_true) == pytest.approx(1.0)
    assert glue.matthews_corrcoef(y_true, [1 - y for y in y_true]) == pytest.approx(-1.0)
    # Constant predictions: undefined, reported as 0 (like sklearn).
    assert glue.matthews_corrcoef(y_true, [1] * 8) == 0.0


def test_mcc_multiclass_matches_formula():
    rng = np.random.default_rng(0)
    y_true, y_pred = rng.integers(0, 3, 200), rng.integers(0, 3, 200)
    y_pred[:120] = y_true[:120]
    c = np.zeros((3, 3))
    np.add.at(c, (y_true, y_pred), 1)
    t, p, s, n = c.sum(1), c.sum(0), np.trace(c), c.sum()
    expected = (s * n - t @ p) / np.sqrt((n * n - p @ p) * (n * n - t @ t))
    assert glue.matthews_corrcoef(y_true, y_pred) == pytest.approx(expected)


def test_spearman_with_ties_by_hand():
    x = [1, 2, 2, 3]  # ranks 1, 2.5, 2.5, 4
    y = [1, 3, 2, 4]  # ranks 1, 3, 2, 4
    rx, ry = np.array([1, 2.5, 2.5, 4]), np.array([1, 3, 2, 4.0])
    np.testing.assert_allclose(glue.rankdata(x), rx)
    expected = np.corrcoef(rx, ry)[0, 1]
    assert glue.spearman(x, y) == pytest.approx(expected)
    assert glue.spearman(x, y) == pytest.approx(scipy.stats.spearmanr(x, y).statistic)


def test_pearson_spearman_match_scipy():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 6, 300).astype(float)  # many ties
    y = x + rng.normal(0, 2, 300)
    assert glue.pearson(x, y) == pytest.approx(scipy.stats.pearsonr(x, y).statistic)
    assert glue.spearman(x, y) == pytest.approx(scipy.stats.spearmanr(x, y).statistic)
    np.testing.assert_allclose(glue.rankdata(x), scipy.stats.rankdata(x))
    assert np.isnan(glue.pearson([1, 1, 1], [1, 2, 3]))


def test_bad_shapes_are_clear_errors():
    with pytest.raises(ValueError, match="shape"):
        glue.accuracy([1, 0], [1])
    with pytest.raises(ValueError, match="at least one"):
        glue.accuracy([], [])


def test_metric_sets():
    s = glue.classification_metrics([0, 1, 1], [0, 1, 0], num_classes=2)
    assert set(s) == {"accuracy", "mcc", "f1"}
    s = glue.classification_metrics([0, 1, 2], [0, 1, 2], num_classes=3)
    assert s["macro_f1"] == 1.0
    r = glue.regression_metrics([1, 2, 3], [1, 2, 4])
    assert r["corr"] == pytest.approx((r["pearson"] + r["spearman"]) / 2)
