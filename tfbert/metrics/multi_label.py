"""Multi-label metrics on NumPy 0/1 matrices `[examples, labels]`, and the
decision thresholds chosen on validation data.

`micro_f1` pools every (example, label) decision (the main metric: frequent
labels weigh more); `macro_f1` is the unweighted mean of the per-label F1
(a label that never occurs and is never predicted scores 0, as scikit-learn's
`zero_division=0`); `subset_accuracy` counts examples whose whole label set is
exactly right (an example with no gold label is right when none is predicted).
The tests check them against scikit-learn.

Example:
>>> y_true = [[1, 0, 1], [0, 1, 0], [0, 0, 0]]
>>> y_pred = [[1, 0, 0], [0, 1, 0], [0, 0, 0]]
>>> m = multi_label_metrics(y_true, y_pred, ["a", "b", "c"])
>>> round(m["micro_f1"], 4), round(m["macro_f1"], 4), round(m["subset_accuracy"], 4)
(0.8, 0.6667, 0.6667)
>>> m["per_label"]["c"]
{'precision': 0.0, 'recall': 0.0, 'f1': 0.0, 'support': 1}
>>> probabilities = [[0.9, 0.2, 0.4], [0.3, 0.7, 0.1], [0.1, 0.2, 0.3]]
>>> choose_thresholds(y_true, probabilities)  # any of 0.31..0.40 is perfect: nearest 0.5
array([0.4, 0.4, 0.4], dtype=float32)
>>> choose_thresholds(y_true, probabilities, per_label=True)
array([0.5, 0.5, 0.4], dtype=float32)
"""

import numpy as np

# Candidate thresholds: 0.01 .. 0.99 in steps of 0.01.
GRID = np.round(np.arange(1, 100) / 100.0, 2)


def probabilities_of(logits):
    """The sigmoid of `logits`, in float64 (a threshold compares it exactly)."""
    return 1.0 / (1.0 + np.exp(-np.asarray(logits, np.float64)))


def _counts(y_true, y_pred, axis=None):
    y_true, y_pred = np.asarray(y_true, bool), np.asarray(y_pred, bool)
    if y_true.shape != y_pred.shape or y_true.ndim != 2:
        raise ValueError(f"Expected two [examples, labels] matrices of one shape, got "
                         f"{y_true.shape} and {y_pred.shape}.")
    tp = np.sum(y_true & y_pred, axis=axis)
    fp = np.sum(~y_true & y_pred, axis=axis)
    fn = np.sum(y_true & ~y_pred, axis=axis)
    return tp, fp, fn


def _ratio(num, den):
    return np.where(den > 0, num / np.maximum(den, 1), 0.0)


def multi_label_metrics(y_true, y_pred, label_list):
    """`micro_f1`, `macro_f1`, `micro_precision`, `micro_recall`,
    `subset_accuracy` (floats) and `per_label` ({label: precision, recall,
    f1, support})."""
    tp, fp, fn = _counts(y_true, y_pred, axis=0)
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    f1 = _ratio(2 * tp, 2 * tp + fp + fn)
    TP, FP, FN = tp.sum(), fp.sum(), fn.sum()
    exact = np.all(np.asarray(y_true, bool) == np.asarray(y_pred, bool), axis=1)
    return {
        "micro_f1": float(_ratio(2 * TP, 2 * TP + FP + FN)),
        "macro_f1": float(f1.mean()),
        "micro_precision": float(_ratio(TP, TP + FP)),
        "micro_recall": float(_ratio(TP, TP + FN)),
        "subset_accuracy": float(exact.mean()),
        "per_label": {str(label): {"precision": float(precision[i]), "recall": float(recall[i]),
                                   "f1": float(f1[i]), "support": int(tp[i] + fn[i])}
                      for i, label in enumerate(label_list)},
    }


def choose_thresholds(y_true, probabilities, per_label=False):
    """Thresholds in `GRID` (a label is predicted when its probability is
    >= its threshold): one for all labels maximising micro-F1 (default), or
    one per label maximising that label's F1 (`per_label`; a label without
    a positive example keeps 0.5). Ties go to the threshold nearest 0.5."""
    y_true = np.asarray(y_true, bool)
    probabilities = np.asarray(probabilities, np.float32)
    order = np.argsort(np.abs(GRID - 0.5), kind="stable")  # nearest 0.5 first among ties
    grid = GRID[order]
    if not per_label:
        scores = []
        for t in grid:
            tp, fp, fn = _counts(y_true, probabilities >= t)
            scores.append(_ratio(2 * tp, 2 * tp + fp + fn))
        best = grid[int(np.argmax(scores))]
        return np.full(y_true.shape[1], best, np.float32)
    thresholds = np.full(y_true.shape[1], 0.5, np.float32)
    for j in range(y_true.shape[1]):
        if not y_true[:, j].any():
            continue
        scores = []
        for t in grid:
            tp, fp, fn = _counts(y_true[:, j:j + 1], probabilities[:, j:j + 1] >= t)
            scores.append(_ratio(2 * tp, 2 * tp + fp + fn))
        thresholds[j] = grid[int(np.argmax(scores))]
    return thresholds
