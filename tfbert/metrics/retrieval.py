"""Retrieval and similarity metrics for sentence embeddings.

`retrieval_metrics(queries, passages)`: query i's relevant passage is
passage i (a dev file of (query, passage) pairs); every query is ranked
against all passages by cosine. recall@k: share of queries whose passage is
in the top k; MRR@10: mean of 1/rank, 0 beyond rank 10. Ties count against
the query (a tied wrong passage ranks first), so constant embeddings score
no better than chance. `similarity_spearman`: Spearman of cosine(u, v) against
gold scores (STS).

Example:
>>> q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
>>> p = np.array([[1.0, 0.1], [1.0, 0.0], [0.9, 1.0]])
>>> retrieval_metrics(q, p)  # ranks of the right passage: 2, 3, 1
{'recall_at_1': 0.3333333333333333, 'recall_at_5': 1.0, 'mrr_at_10': 0.611111111111111}
>>> similarity_spearman(q, p, [0.8, 0.1, 0.9])
1.0
"""

import numpy as np

from tfbert.metrics.glue import spearman


def _unit(x):
    x = np.asarray(x, np.float64)
    if x.ndim != 2:
        raise ValueError(f"Embeddings must be [n, dim], got shape {x.shape}.")
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def ranks_of_relevant(queries, passages, chunk_size=1024):
    """1-based rank of passage i for query i among all passages (cosine), in
    query chunks so memory is `chunk_size x n`, never `n x n` at once."""
    q, p = _unit(queries), _unit(passages)
    if len(q) != len(p):
        raise ValueError(f"{len(q)} queries but {len(p)} passages: pairs must align.")
    ranks = np.empty(len(q), np.int64)
    for start in range(0, len(q), chunk_size):
        sims = q[start:start + chunk_size] @ p.T
        rows = np.arange(len(sims))
        gold = sims[rows, start + rows][:, None]
        # >= counts the gold passage itself plus every passage scoring at least
        # as high: a tied wrong passage ranks ahead of the right one.
        ranks[start:start + len(sims)] = (sims >= gold).sum(1)
    return ranks


def recall_at_k(ranks, k):
    return float(np.mean(np.asarray(ranks) <= k))


def mrr_at_k(ranks, k=10):
    ranks = np.asarray(ranks, np.float64)
    return float(np.mean(np.where(ranks <= k, 1.0 / ranks, 0.0)))


def retrieval_metrics(queries, passages):
    """`recall_at_1`, `recall_at_5`, `mrr_at_10` of aligned (query, passage) embeddings."""
    ranks = ranks_of_relevant(queries, passages)
    return {"recall_at_1": recall_at_k(ranks, 1), "recall_at_5": recall_at_k(ranks, 5),
            "mrr_at_10": mrr_at_k(ranks, 10)}


def similarity_spearman(u, v, scores):
    """Spearman of row-wise cosine(u, v) against gold `scores`."""
    cos = (_unit(u) * _unit(v)).sum(1)
    return spearman(cos, np.asarray(scores, np.float64))
