"""The numbers the probes report, in NumPy: rank correlation, spanning trees,
the layer summaries of Tenney, Das & Pavlick (2019) and seed statistics.

Example: a chain 0-1-2 and its own distances give every edge back.
>>> gold = np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]])
>>> sorted(spanning_tree_edges(gold)), spearman([1, 2, 3], [10, 20, 40])
([(0, 1), (1, 2)], 1.0)
>>> round(center_of_gravity([0.5, 0.7, 0.8]), 4), expected_layer([0.25, 0.25, 0.5])
(1.3333, 1.25)
"""

import numpy as np


def ranks(values):
    """Ranks 1..n, ties sharing their average rank (as `scipy.stats.rankdata`)."""
    values = np.asarray(values, np.float64)
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], len(values)]
    average = (starts + ends + 1) / 2.0  # mean of ranks start+1 .. end
    result = np.empty(len(values))
    result[order] = np.repeat(average, ends - starts)
    return result


def spearman(a, b):
    """Spearman's rank correlation of two sequences (NaN when one is constant)."""
    ra, rb = ranks(a), ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denominator = np.sqrt((ra * ra).sum() * (rb * rb).sum())
    return float((ra * rb).sum() / denominator) if denominator > 0 else float("nan")


def spanning_tree_edges(distances, keep=None):
    """Edges `(i, j)`, i < j, of a minimum spanning tree (Prim) of the words
    `keep` (default all) under the symmetric `distances` `[n, n]`."""
    distances = np.asarray(distances, np.float64)
    nodes = list(range(len(distances))) if keep is None else list(keep)
    if len(nodes) < 2:
        return set()
    sub = distances[np.ix_(nodes, nodes)]
    inside = np.zeros(len(nodes), bool)
    inside[0] = True
    best, parent = sub[0].copy(), np.zeros(len(nodes), int)
    edges = set()
    for _ in range(len(nodes) - 1):
        candidate = np.where(inside, np.inf, best)
        j = int(np.argmin(candidate))
        i = parent[j]
        edges.add((min(nodes[i], nodes[j]), max(nodes[i], nodes[j])))
        inside[j] = True
        closer = sub[j] < best
        best = np.where(closer, sub[j], best)
        parent = np.where(closer, j, parent)
    return edges


def center_of_gravity(cumulative_scores):
    """Tenney et al. (2019), eq. (2): with P(l) the score of a probe on a scalar
    mix of layers 0..l and Delta(l) = P(l) - P(l - 1), the center of gravity is
    sum_l l * Delta(l) / sum_l Delta(l), l = 1..L: the layer where the score,
    on average, is gained. NaN when nothing is gained."""
    scores = np.asarray(cumulative_scores, np.float64)
    delta = np.diff(scores)
    layers = np.arange(1, len(scores))
    total = delta.sum()
    return float((layers * delta).sum() / total) if total != 0 else float("nan")


def expected_layer(mix_weights):
    """Tenney et al. (2019), eq. (1): E_s[l] = sum_l l * s_l, the mean layer
    under the softmax-normalized scalar-mix weights s of layers 0..L."""
    weights = np.asarray(mix_weights, np.float64)
    return float((np.arange(len(weights)) * weights).sum() / weights.sum())


def over_seeds(per_seed):
    """`{"mean", "spread", "worst"}` over seeds of per-layer scores `[seeds,
    layers]` (spread: the standard deviation; worst: the lowest)."""
    values = np.asarray(per_seed, np.float64)
    return {"mean": values.mean(0).tolist(), "spread": values.std(0).tolist(),
            "worst": values.min(0).tolist()}
