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

from tfbert.config_loader import check_int


def as_embeddings(x, what):
    """`x` as float32 `[n, dim]`, or one line naming `what` and the problem: None,
    not numbers, rows of different sizes, not 2-D or empty, a NaN or infinite
    value (its row named). Every place embeddings enter retrieval (search, the
    index, quantization, mining) reads them through here: one NaN row would
    otherwise turn every score or calibration range it touches into NaN."""
    if x is None:
        raise TypeError(f"{what} is None; pass a [n, dim] array of floats.")
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{what} must be a [n, dim] array of floats, got a {type(x).__name__}.")
    if isinstance(x, (list, tuple)) and x and all(hasattr(row, "__len__") for row in x):
        sizes = [len(row) for row in x]
        odd = next((i for i, size in enumerate(sizes) if size != sizes[0]), None)
        if odd is not None:
            raise ValueError(f"{what}: row {odd} has {sizes[odd]} values, row 0 has {sizes[0]}; "
                             "every embedding must have the same dim.")
    try:
        x = np.asarray(x, np.float32)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a [n, dim] array of numbers, got "
                        f"{type(x).__name__} {str(x)[:40]!r}.") from None
    if x.ndim != 2 or len(x) == 0 or x.shape[1] == 0:
        raise ValueError(f"{what} must be a non-empty [n, dim] array, got shape {x.shape}.")
    finite = np.isfinite(x).all(axis=1)
    if not finite.all():
        rows = np.flatnonzero(~finite)
        raise ValueError(f"{what}: row {rows[0]} holds NaN or inf ({len(rows)} row(s) in all); "
                         "embeddings must be finite.")
    return x


def _unit(x, what):
    x = as_embeddings(x, what)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _top_k(scores, k):
    """Column indices of the k largest per row, best first."""
    k = min(k, scores.shape[1])
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, part, 1), axis=1, kind="stable")
    return np.take_along_axis(part, order, 1)


def merge_top_k(best_ids, best_scores, scores, offset, k, block_k=None):
    """The running top `k` per row after one more block of `scores` whose
    columns start at corpus index `offset`: `(ids, scores)`, best first.
    `block_k`: how many of the block's best to merge (default `k`). Chunked
    search keeps `[queries, k]` in memory, never `[queries, corpus]`."""
    top = _top_k(scores, block_k or k)
    ids = np.concatenate([best_ids, top + offset], axis=1)
    both = np.concatenate([best_scores, np.take_along_axis(scores, top, 1)], axis=1)
    keep = _top_k(both, k)
    return np.take_along_axis(ids, keep, 1), np.take_along_axis(both, keep, 1)


def semantic_search(query_embeddings, corpus_embeddings, top_k=10, query_chunk_size=100,
                    corpus_chunk_size=50000):
    """For each query, the `top_k` corpus entries by cosine similarity:
    a list (per query) of `{"corpus_id": int, "score": float}`, best first.
    `corpus_embeddings` may be a `tfbert.retrieval.index.VectorIndex` (approximate,
    for large corpora): it is searched instead, with the same results shape."""
    top_k = check_int(top_k, "top_k", 1)
    query_chunk_size = check_int(query_chunk_size, "query_chunk_size", 1)
    corpus_chunk_size = check_int(corpus_chunk_size, "corpus_chunk_size", 1)
    if hasattr(corpus_embeddings, "search") and hasattr(corpus_embeddings, "ids"):
        return corpus_embeddings.search(query_embeddings,
                                        top_k=min(top_k, len(corpus_embeddings)))
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
            best_ids, best_scores = merge_top_k(best_ids, best_scores, scores, c0, top_k)
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
    top_k = check_int(top_k, "top_k", 1)
    chunk_size = check_int(chunk_size, "chunk_size", 1)
    max_pairs = check_int(max_pairs, "max_pairs", 1)
    data = texts_or_embeddings
    if data is None:
        raise TypeError("paraphrase_mining takes a list of texts or [n, dim] embeddings, got None.")
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
            best_ids, best_scores = merge_top_k(best_ids, best_scores, scores, c0, top_k,
                                                top_k + 1)
        for r, (ids_, sc) in enumerate(zip(best_ids, best_scores)):
            for j, s in zip(ids_, sc):
                if np.isfinite(s):
                    pairs[(min(q0 + r, int(j)), max(q0 + r, int(j)))] = float(s)
    best = heapq.nlargest(max_pairs, pairs.items(), key=lambda kv: kv[1])
    return [(s, i, j) for (i, j), s in best]
