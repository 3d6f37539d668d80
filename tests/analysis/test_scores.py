"""tfbert.analysis.scores against SciPy (a test dependency) and the paper's formulas."""

import numpy as np
import pytest
from scipy import sparse, stats

from tfbert.analysis import scores


def test_spearman_and_ranks_equal_scipy():
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = rng.integers(0, 5, size=12).astype(float)  # ties
        b = rng.normal(size=12)
        np.testing.assert_allclose(scores.ranks(a), stats.rankdata(a))
        assert scores.spearman(a, b) == pytest.approx(stats.spearmanr(a, b).statistic)


def test_spanning_tree_has_scipys_weight():
    rng = np.random.default_rng(1)
    for _ in range(10):
        points = rng.normal(size=(9, 3))
        d = ((points[:, None] - points[None]) ** 2).sum(-1)
        edges = scores.spanning_tree_edges(d)
        assert len(edges) == 8
        expected = sparse.csgraph.minimum_spanning_tree(d).sum()
        assert sum(d[i, j] for i, j in edges) == pytest.approx(expected)
    kept = scores.spanning_tree_edges(d, keep=[0, 2, 5])
    assert len(kept) == 2 and all(i in (0, 2, 5) and j in (0, 2, 5) for i, j in kept)


def test_center_of_gravity_and_expected_layer():
    # All gain at layer 3: the center of gravity is 3.
    assert scores.center_of_gravity([0.2, 0.2, 0.2, 0.9, 0.9]) == pytest.approx(3.0)
    assert scores.expected_layer([0, 0, 1.0]) == 2.0
    assert np.isnan(scores.center_of_gravity([0.5, 0.5]))
    summary = scores.over_seeds([[0.5, 0.7], [0.7, 0.9]])
    assert summary["mean"] == pytest.approx([0.6, 0.8]) and summary["worst"] == [0.5, 0.7]
    assert summary["spread"] == pytest.approx([0.1, 0.1])
