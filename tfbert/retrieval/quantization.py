"""Embedding quantization (int8, binary) with float rescoring of the top candidates.

As sentence-transformers' `quantize_embeddings` and `semantic_search_*`
with `rescore`:

- `int8`: each dimension's `[min, max]` (from `ranges`, else from
  calibration embeddings, else the embeddings themselves) is cut into 256
  steps: 4x smaller than float32. Searched by the int32 dot product.
- `binary`: one bit per dimension (`> 0`), packed 8 to a byte: 32x smaller.
  Searched by Hamming distance (as the +-1 dot product, `dim - 2 * Hamming`).

`quantized_search` ranks the corpus in the quantized space, keeps
`rescore_multiplier * top_k` candidates, and reorders those by the float
query's dot product with the candidates (the float corpus embeddings when
given, else the quantized ones read back: int8 steps, or +-1 bits), as
sentence-transformers' rescoring does.

Example:
>>> rng = np.random.default_rng(0)
>>> corpus = rng.normal(size=(100, 32)).astype("float32")
>>> q = quantize_embeddings(corpus, "int8")
>>> q.embeddings.dtype, q.embeddings.shape, quantize_embeddings(corpus, "binary").embeddings.shape
(dtype('int8'), (100, 32), (100, 4))
>>> hits = quantized_search(corpus[:2], q, top_k=1)
>>> [h[0]["corpus_id"] for h in hits]
[0, 1]
"""

import dataclasses

import numpy as np

from tfbert.config_loader import check_int
from tfbert.retrieval.search import _top_k, as_embeddings, merge_top_k

PRECISIONS = ("int8", "binary")


@dataclasses.dataclass
class QuantizedEmbeddings:
    """Quantized `[n, ...]` embeddings, their precision, float dim and int8 ranges."""

    embeddings: np.ndarray
    precision: str
    dim: int
    ranges: np.ndarray = None  # int8: [2, dim] (min, max per dimension)

    def __len__(self):
        return len(self.embeddings)

    def dequantize(self):
        """float32 `[n, dim]`: int8 step centres, or +-1 per bit."""
        if self.precision == "binary":
            return signs(self.embeddings, self.dim)
        low, high = self.ranges
        steps = (high - low) / 255.0
        return low + (self.embeddings.astype(np.float32) + 128.0 + 0.5) * steps


def signs(packed, dim):
    """+-1 float32 `[n, dim]` from packed bits `[n, ceil(dim / 8)]`."""
    return np.unpackbits(packed, axis=1)[:, :dim].astype(np.float32) * 2.0 - 1.0


def quantize_embeddings(embeddings, precision="int8", ranges=None, calibration_embeddings=None):
    """`QuantizedEmbeddings` of float `[n, dim]` embeddings (see module doc)."""
    # A NaN row would make every calibration range, and so every score, NaN: refused here.
    emb = as_embeddings(embeddings, "embeddings")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {list(PRECISIONS)}, got {precision!r}.")
    dim = emb.shape[1]
    if precision == "binary":
        return QuantizedEmbeddings(np.packbits(emb > 0, axis=1), "binary", dim)
    if ranges is None:
        calib = emb if calibration_embeddings is None else as_embeddings(
            calibration_embeddings, "calibration_embeddings")
        if calib.shape[1] != dim:
            raise ValueError(f"calibration embeddings have dim {calib.shape[1]}, embeddings {dim}.")
        ranges = np.stack([calib.min(0), calib.max(0)])
    try:
        ranges = np.asarray(ranges, np.float32)
    except (TypeError, ValueError):
        raise TypeError(f"ranges must be a [2, {dim}] array of numbers (min and max per "
                        "dimension).") from None
    if ranges.shape != (2, dim):
        raise ValueError(f"ranges must be [2, {dim}] (min and max per dimension), got "
                         f"{ranges.shape}.")
    if not np.isfinite(ranges).all() or (ranges[0] > ranges[1]).any():
        bad = int(np.flatnonzero(~np.isfinite(ranges).all(0) | (ranges[0] > ranges[1]))[0])
        raise ValueError(f"ranges: dimension {bad} has min {ranges[0, bad]} and max "
                         f"{ranges[1, bad]}; each must be finite with min <= max.")
    low, high = ranges
    steps = np.maximum(high - low, 1e-12) / 255.0
    q = np.clip(np.floor((emb - low) / steps), 0, 255) - 128
    return QuantizedEmbeddings(q.astype(np.int8), "int8", dim, ranges)


def quantized_search(query_embeddings, corpus, top_k=10, rescore_multiplier=4,
                     corpus_embeddings=None, chunk_size=20000):
    """For each float query, the `top_k` entries of the quantized `corpus`:
    `[{"corpus_id", "score"}]` best first (scores: float rescoring; without
    rescoring, `rescore_multiplier=0`: int8 dot products or +-1 bit dot
    products)."""
    if not isinstance(corpus, QuantizedEmbeddings):
        raise TypeError("quantized_search takes the corpus as quantize_embeddings(...) "
                        f"returns it, got {type(corpus).__name__}.")
    queries = as_embeddings(query_embeddings, "query_embeddings")
    if queries.shape[1] != corpus.dim:
        raise ValueError(f"Query dim {queries.shape[1]} != corpus dim {corpus.dim}.")
    top_k = check_int(top_k, "top_k", 1)
    rescore_multiplier = check_int(rescore_multiplier, "rescore_multiplier", 0)
    chunk_size = check_int(chunk_size, "chunk_size", 1)
    if not 1 <= top_k <= len(corpus):
        raise ValueError(f"top_k={top_k} but the corpus has {len(corpus)} entries; ask for "
                         f"1 to {len(corpus)}.")
    if corpus_embeddings is not None:
        corpus_embeddings = as_embeddings(corpus_embeddings, "corpus_embeddings")
        if corpus_embeddings.shape != (len(corpus), corpus.dim):
            raise ValueError(f"corpus_embeddings has shape {corpus_embeddings.shape}; the "
                             f"quantized corpus is {len(corpus)} x {corpus.dim}.")
    k = min(len(corpus), top_k * max(1, rescore_multiplier))
    q = quantize_embeddings(queries, corpus.precision, ranges=corpus.ranges).embeddings
    ids = np.zeros((len(q), 0), np.int64)
    best = np.zeros((len(q), 0), np.float32)
    for start in range(0, len(corpus), chunk_size):
        block = corpus.embeddings[start:start + chunk_size]
        if corpus.precision == "int8":
            scores = (q.astype(np.int32) @ block.astype(np.int32).T).astype(np.float32)
        else:  # +-1 dot product = dim - 2 * Hamming distance: larger is closer
            scores = signs(q, corpus.dim) @ signs(block, corpus.dim).T
        ids, best = merge_top_k(ids, best, scores, start, k)
    if rescore_multiplier:
        candidates = (corpus_embeddings[ids] if corpus_embeddings
                      is not None else QuantizedEmbeddings(
                          corpus.embeddings[ids.reshape(-1)], corpus.precision, corpus.dim,
                          corpus.ranges).dequantize().reshape(*ids.shape, corpus.dim))
        best = np.einsum("qd,qkd->qk", queries, candidates)
    keep = _top_k(best, top_k)
    ids, best = np.take_along_axis(ids, keep, 1), np.take_along_axis(best, keep, 1)
    return [[{"corpus_id": int(i), "score": float(s)} for i, s in zip(row_ids, row_scores)]
            for row_ids, row_scores in zip(ids, best)]
