"""GLUE metrics on NumPy arrays: accuracy, F1, Matthews correlation, Pearson, Spearman.

Written with NumPy instead of scikit-learn/scipy (not dependencies of tfbert);
the tests check them against scipy and hand-computed cases.

Example:
>>> accuracy([1, 0, 1, 1], [1, 0, 0, 1])
0.75
>>> round(matthews_corrcoef([1, 0, 1, 1], [1, 0, 0, 1]), 4)
0.5774
"""

import numpy as np


def _pair(y_true, y_pred, dtype=None):
    y_true, y_pred = np.asarray(y_true, dtype), np.asarray(y_pred, dtype)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true has shape {y_true.shape} but y_pred has {y_pred.shape}.")
    if y_true.size == 0:
        raise ValueError("Metrics need at least one example; got none.")
    return y_true.ravel(), y_pred.ravel()


def accuracy(y_true, y_pred):
    """Fraction of exact matches."""
    y_true, y_pred = _pair(y_true, y_pred)
    return float(np.mean(y_true == y_pred))


def _f1(tp, fp, fn):
    # F1 = 2TP / (2TP + FP + FN); 0 when the class never occurs in either (sklearn's zero_division=0).
    denom = 2 * tp + fp + fn
    return 2.0 * tp / denom if denom else 0.0


def binary_f1(y_true, y_pred, positive=1):
    """F1 of the positive class, as GLUE scores MRPC and QQP."""
    y_true, y_pred = _pair(y_true, y_pred)
    tp = np.sum((y_pred == positive) & (y_true == positive))
    fp = np.sum((y_pred == positive) & (y_true != positive))
    fn = np.sum((y_pred != positive) & (y_true == positive))
    return float(_f1(tp, fp, fn))


def macro_f1(y_true, y_pred, labels=None):
    """Unweighted mean of per-class F1 over `labels` (default: classes seen in either)."""
    y_true, y_pred = _pair(y_true, y_pred)
    if labels is None:
        labels = np.union1d(y_true, y_pred)
    return float(np.mean([binary_f1(y_true, y_pred, positive=c) for c in labels]))


def matthews_corrcoef(y_true, y_pred):
    """Matthews correlation (multi-class form, Gorodkin 2004), as GLUE scores CoLA.

    0 when either side predicts a single class (the correlation is undefined).
    """
    y_true, y_pred = _pair(y_true, y_pred)
    classes, encoded = np.unique(np.concatenate([y_true, y_pred]), return_inverse=True)
    t, p = encoded[: len(y_true)], encoded[len(y_true):]
    k = len(classes)
    confusion = np.zeros((k, k), np.float64)
    np.add.at(confusion, (t, p), 1)
    true_counts, pred_counts = confusion.sum(1), confusion.sum(0)
    correct, n = np.trace(confusion), confusion.sum()
    cov_tp = correct * n - true_counts @ pred_counts
    cov_pp = n * n - pred_counts @ pred_counts
    cov_tt = n * n - true_counts @ true_counts
    if cov_pp == 0 or cov_tt == 0:
        return 0.0
    return float(cov_tp / np.sqrt(cov_pp * cov_tt))


def pearson(x, y):
    """Pearson correlation; nan when either side is constant."""
    x, y = _pair(x, y, np.float64)
    x, y = x - x.mean(), y - y.mean()
    denom = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / denom) if denom > 0 else float("nan")


def rankdata(values):
    """Ranks from 1; tied values share the mean of their ranks (scipy's 'average')."""
    values = np.asarray(values, np.float64).ravel()
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    # Start index of each run of equal values, then average rank per run.
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], len(values)]
    run_rank = (starts + 1 + ends) / 2.0  # mean of ranks starts+1 .. ends
    ranks = np.empty(len(values), np.float64)
    ranks[order] = np.repeat(run_rank, ends - starts)
    return ranks


def spearman(x, y):
    """Spearman rank correlation with average ranks for ties, as GLUE scores STS-B."""
    x, y = _pair(x, y, np.float64)
    return pearson(rankdata(x), rankdata(y))


def classification_metrics(y_true, y_pred, num_classes):
    """The GLUE metric set for a classification task.

    Always `accuracy`, `mcc`; `f1` (positive class 1) for two classes,
    `macro_f1` for more.
    """
    scores = {"accuracy": accuracy(y_true, y_pred), "mcc": matthews_corrcoef(y_true, y_pred)}
    if num_classes == 2:
        scores["f1"] = binary_f1(y_true, y_pred, positive=1)
    else:
        scores["macro_f1"] = macro_f1(y_true, y_pred, labels=np.arange(num_classes))
    return scores


def regression_metrics(y_true, y_pred):
    """`pearson`, `spearman` and their mean `corr` (GLUE's STS-B score)."""
    p, s = pearson(y_true, y_pred), spearman(y_true, y_pred)
    return {"pearson": p, "spearman": s, "corr": (p + s) / 2.0}
