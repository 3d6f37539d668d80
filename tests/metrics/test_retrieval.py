"""recall@k, MRR@10 and Spearman of cosine, against brute force / scipy."""

import numpy as np
import pytest
import scipy.stats

from tfbert.metrics.retrieval import (mrr_at_k, ranks_of_relevant, recall_at_k,
                                      retrieval_metrics, similarity_spearman)


def brute_ranks(q, p):
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    p = p / np.linalg.norm(p, axis=1, keepdims=True)
    sims = q @ p.T
    return np.array([1 + sum(sims[i, j] >= sims[i, i] for j in range(len(p)) if j != i)
                     for i in range(len(q))])


def test_ranks_match_brute_force_across_chunks():
    rng = np.random.default_rng(0)
    q, p = rng.normal(size=(50, 8)), rng.normal(size=(50, 8))
    np.testing.assert_array_equal(ranks_of_relevant(q, p, chunk_size=7), brute_ranks(q, p))


def test_metrics_values():
    ranks = np.array([1, 2, 11, 5])
    assert recall_at_k(ranks, 1) == 0.25 and recall_at_k(ranks, 5) == 0.75
    assert mrr_at_k(ranks, 10) == pytest.approx((1 + 0.5 + 0 + 0.2) / 4)


def test_perfect_and_constant_embeddings():
    e = np.eye(6)
    assert retrieval_metrics(e, e) == {"recall_at_1": 1.0, "recall_at_5": 1.0, "mrr_at_10": 1.0}
    # Constant embeddings tie everywhere: they must not look perfect.
    const = np.ones((6, 3))
    assert retrieval_metrics(const, const)["recall_at_1"] == 0.0


def test_spearman_matches_scipy():
    rng = np.random.default_rng(1)
    u, v, gold = rng.normal(size=(40, 5)), rng.normal(size=(40, 5)), rng.uniform(0, 5, 40)
    cos = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    assert similarity_spearman(u, v, gold) == pytest.approx(scipy.stats.spearmanr(cos, gold)[0])


def test_misaligned_pairs():
    with pytest.raises(ValueError, match="3 queries but 2 passages"):
        retrieval_metrics(np.ones((3, 2)), np.ones((2, 2)))
