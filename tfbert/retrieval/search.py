"""Semantic search and paraphrase mining over sentence embeddings, chunked.

Both work chunk by chunk (a `query_chunk x corpus_chunk` block of cosine
similarities at a time) and keep only the running top k, so memory stays
flat as the corpus grows: no `N x N` matrix is ever built. For corpora in
the millions, put the embeddings in an approximate index
(`tfbert.retrieval.index.VectorIndex`, FAISS HNSW) and pass it as the corpus; these
exact helpers are the reference to check its recall against.

Example:
>>> corpus = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]])
>>> hits = semantic_search(np.array([[1.0, 0.1]]), corpus, top_k=2)
>>> [(h["corpus_id"], round(h["score"], 3)) for h in hits[0]]
[(0, 0.995), (2, 0.774)]
>>> [(round(s, 3), i, j) for s, i, j in paraphrase_mining(corpus, top_k=1)]
[(0.707, 0, 2), (0.707, 1, 2)]
"""

import heapq

import numpy as np


def _unit(x, what):
    x = np.asarray(x, np.float32)
    if x.ndim != 2 or len(x) == 0:
        raise ValueError(f"{what} must be a non-empty [n, dim] array, got shape {x.shape}.")
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _top_k(scores, k):
    """Column indices of the k largest per row, best first."""
    k = min(k, scores.shape[1])
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, part, 1), axis=1, kind="stable")
    return np.take_along_axis(part, order, 1)


def semantic_search(query_embeddings, corpus_embeddings, top_k=10, query_chunk_size=100,
                    corpus_chunk_size=50000):
    """For each query, the `top_k` corpus entries by cosine similarity:
    a list (per query) of `{"corpus_id": int, "score": float}`, best first.
    `corpus_embeddings` may be a `tfbert.retrieval.index.VectorIndex` (approximate,
    for large corpora): it is searched instead, with the same results shape."""
    if hasattr(corpus_embeddings, "search") and hasattr(corpus_embeddings, "ids"):
        return corpus_embeddings.search(query_embeddings,
                                        top_k=min(int(top_k), len(corpus_embeddings)))
    queries = _unit(query_embeddings, "query_embeddings")
    corpus = _unit(corpus_embeddings, "corpus_embeddings")
    if queries.shape[1] != corpus.shape[1]:
        raise ValueError(f"Query dim {queries.shape[1]} != corpus dim {corpus.shape[1]}.")
    results = []
    for q0 in range(0, len(queries), query_chunk_size):
        q = queries[q0:q0 + query_chunk_size]
        best_ids = np.zeros((len(q), 0), np.int64)
        best_scores = np.zeros((len(q), 0), np.float32)
        for c0 in range(0, len(corpus), corpus_chunk_size):
            scores = q @ corpus[c0:c0 + corpus_chunk_size].T
            top = _top_k(scores, top_k)
            # Merge this chunk's top k with the running top k.
            ids = np.concatenate([best_ids, top + c0], axis=1)
            both = np.concatenate([best_scores, np.take_along_axis(scores, top, 1)], axis=1)
            keep = _top_k(both, top_k)
            best_ids = np.take_along_axis(ids, keep, 1)
            best_scores = np.take_along_axis(both, keep, 1)
        results.extend([{"corpus_id": int(i), "score": float(s)} for i, s in zip(ids_, sc)]
                       for ids_, sc in zip(best_ids, best_scores))
    return results


def paraphrase_mining(texts_or_embeddings, encoder=None, top_k=10, chunk_size=1000,
                      max_pairs=500000, batch_size=32, **encode_args):
    """The most similar pairs among the inputs: a list of `(score, i, j)` with
    `i < j`, best first. Each text is compared with every other in chunks and
    keeps its `top_k` neighbours, so memory is `chunk_size x chunk_size`
    plus `n x top_k`. Texts need `encoder` (a `tfbert.SentenceEncoder`);
    `encode_args` go to its `encode` (e.g. `long_text="windows"`)."""
    data = texts_or_embeddings
    if len(data) and isinstance(data[0], str):
        if encoder is None:
            raise ValueError("paraphrase_mining got texts: pass encoder= (a SentenceEncoder), "
                             "or pass embeddings.")
        data = encoder.encode(list(data), batch_size=batch_size, **encode_args)
    emb = _unit(data, "embeddings")
    n = len(emb)
    pairs = {}
    for q0 in range(0, n, chunk_size):
        q = emb[q0:q0 + chunk_size]
        best_ids = np.zeros((len(q), 0), np.int64)
        best_scores = np.zeros((len(q), 0), np.float32)
        for c0 in range(0, n, chunk_size):
            scores = q @ emb[c0:c0 + chunk_size].T
            rows = np.arange(len(q))[:, None]
            scores[(q0 + rows) == (c0 + np.arange(scores.shape[1]))[None, :]] = -np.inf  # self
            top = _top_k(scores, top_k + 1)
            ids = np.concatenate([best_ids, top + c0], axis=1)
            both = np.concatenate([best_scores, np.take_along_axis(scores, top, 1)], axis=1)
            keep = _top_k(both, top_k)
            best_ids = np.take_along_axis(ids, keep, 1)
            best_scores = np.take_along_axis(both, keep, 1)
        for r, (ids_, sc) in enumerate(zip(best_ids, best_scores)):
            for j, s in zip(ids_, sc):
                if np.isfinite(s):
                    pairs[(min(q0 + r, int(j)), max(q0 + r, int(j)))] = float(s)
    best = heapq.nlargest(max_pairs, pairs.items(), key=lambda kv: kv[1])
    return [(s, i, j) for (i, j), s in best]
