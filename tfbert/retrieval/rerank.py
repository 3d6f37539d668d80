"""Retrieve, then rerank: the bi-encoder's top candidates reordered by a cross-encoder.

    bi-encoder (`SentenceEncoder.encode`)  ->  search (`tfbert.retrieval.search.semantic_search`,
    exact, or an approximate `tfbert.retrieval.index.VectorIndex`)  ->  cross-encoder
    (`tfbert.CrossEncoder.predict` on every (query, candidate) pair, batched)

`retrieve_and_rerank` runs the three stages and reports each one's time, so
a user sees where the latency goes (the cross-encoder reads every candidate
with the query: `retrieve_k` trades recall for time). Corpus embeddings can
be given (computed once, or read from shards) and are then not re-encoded.

Example (tiny random models: the shapes, not the quality):
>>> pre = BertPreprocessor(vocab_file="tests/data/pretraining/vocab.txt", seq_length=16)
>>> enc = lambda: BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931))
>>> bi = tfbert.SentenceEncoder(enc(), preprocessor=pre)
>>> ce = tfbert.CrossEncoder.from_encoder(enc(), pre)
>>> corpus = ["Open the file.", "Sort the list.", "Join the paths.", "Close it."]
>>> result = retrieve_and_rerank(["open a file"], corpus, bi, ce, top_k=2, retrieve_k=3)
>>> [sorted(h) for h in result.hits[0]]
[['corpus_id', 'retrieval_rank', 'retrieval_score', 'score'], ['corpus_id', 'retrieval_rank', 'retrieval_score', 'score']]
>>> sorted(result.seconds)
['encode_corpus', 'encode_queries', 'rerank', 'search']
"""

import dataclasses
import time

import numpy as np

from tfbert.config_loader import check_int
from tfbert.models.sentence_encoder import check_texts
from tfbert.retrieval.search import as_embeddings, semantic_search


@dataclasses.dataclass
class RerankResult:
    """`hits[q]`: `[{"corpus_id", "score" (cross-encoder), "retrieval_score",
    "retrieval_rank" (0-based, in the bi-encoder's order)}]`, best first.
    `seconds`: time per stage (`encode_corpus` is 0 with given embeddings)."""

    hits: list
    seconds: dict


def retrieve_and_rerank(queries, corpus, bi_encoder, cross_encoder, top_k=10, retrieve_k=100,
                        corpus_embeddings=None, index=None, batch_size=32):
    """For each query, the bi-encoder's `retrieve_k` nearest passages of
    `corpus` reordered by `cross_encoder`; the `top_k` best are returned
    (a `RerankResult`). `retrieve_k` is capped at the corpus size; `top_k`
    above it is an error. `index` (a `tfbert.retrieval.index.VectorIndex` of the corpus
    embeddings) replaces the exact search."""
    # The models first: a bi-encoder and a cross-encoder passed the other way round
    # would otherwise fail deep inside, after the corpus was encoded.
    if isinstance(bi_encoder, (str, bytes)) or not callable(getattr(bi_encoder, "encode", None)):
        raise TypeError("bi_encoder must be a SentenceEncoder (it embeds with .encode), got "
                        f"{type(bi_encoder).__name__}.")
    if not callable(getattr(cross_encoder, "predict", None)) or callable(
            getattr(cross_encoder, "encode", None)):
        raise TypeError("cross_encoder must be a CrossEncoder (it scores pairs with .predict), "
                        f"got {type(cross_encoder).__name__}.")
    if index is not None and not (hasattr(index, "search") and hasattr(index, "ids")):
        raise TypeError(f"index must be a tfbert.retrieval.index.VectorIndex, got "
                        f"{type(index).__name__}.")
    queries = check_texts(queries, "queries")
    corpus = check_texts(corpus, "corpus")
    for what, texts in (("query", queries), ("passage", corpus)):
        empty = next((i for i, t in enumerate(texts) if not t.strip()), None)
        if empty is not None:
            raise ValueError(f"retrieve_and_rerank: {what} {empty} is empty.")
    top_k = check_int(top_k, "top_k", 1)
    retrieve_k = check_int(retrieve_k, "retrieve_k", 1)
    batch_size = check_int(batch_size, "batch_size", 1)
    if top_k > len(corpus):
        raise ValueError(f"top_k={top_k} but the corpus has {len(corpus)} passages; ask for at "
                         f"most {len(corpus)}.")
    retrieve_k = max(top_k, min(retrieve_k, len(corpus)))
    seconds = {}
    start = time.perf_counter()
    if corpus_embeddings is None and index is None:
        corpus_embeddings = bi_encoder.encode(corpus, batch_size=batch_size)
    elif corpus_embeddings is not None:
        corpus_embeddings = as_embeddings(corpus_embeddings, "corpus_embeddings")
        if len(corpus_embeddings) != len(corpus):
            raise ValueError(f"corpus_embeddings has {len(corpus_embeddings)} rows for "
                             f"{len(corpus)} passages.")
    seconds["encode_corpus"] = time.perf_counter() - start
    start = time.perf_counter()
    query_embeddings = bi_encoder.encode(queries, batch_size=batch_size)
    seconds["encode_queries"] = time.perf_counter() - start
    start = time.perf_counter()
    if index is not None:
        if len(index) != len(corpus):
            raise ValueError(f"The index holds {len(index)} vectors for {len(corpus)} passages.")
        retrieved = index.search(query_embeddings, top_k=retrieve_k)
    else:
        retrieved = semantic_search(query_embeddings, corpus_embeddings, top_k=retrieve_k)
    seconds["search"] = time.perf_counter() - start
    start = time.perf_counter()
    pairs = [(q, corpus[h["corpus_id"]]) for q, hits in zip(queries, retrieved) for h in hits]
    scores = cross_encoder.predict(pairs, batch_size=batch_size)
    seconds["rerank"] = time.perf_counter() - start
    out, at = [], 0
    for hits in retrieved:
        s = scores[at:at + len(hits)]
        at += len(hits)
        order = np.argsort(-s, kind="stable")[:top_k]
        out.append([{"corpus_id": hits[i]["corpus_id"], "score": float(s[i]),
                     "retrieval_score": hits[i]["score"], "retrieval_rank": int(i)}
                    for i in order])
    return RerankResult(hits=out, seconds=seconds)
