"""retrieve_and_rerank: the real MiniLM retrieves, a cross-encoder reorders exactly its
candidates by its own scores, each stage is timed, and bad input is one line."""

import numpy as np
import pytest

from tfbert import BertConfig, BertEncoder, CrossEncoder
from tfbert.retrieval.rerank import retrieve_and_rerank
from tfbert.retrieval.search import semantic_search


@pytest.fixture(scope="module")
def cross_encoder(minilm_bi_encoder):
    config = BertConfig.from_preset("tiny", num_layers=1)
    return CrossEncoder.from_encoder(BertEncoder(config), minilm_bi_encoder.preprocessor)


def test_rerank_reorders_the_retrieved_candidates(minilm_bi_encoder, cross_encoder,
                                                 docstring_rows):
    corpus = [p for _, p in docstring_rows[:80]]
    queries = [q for q, _ in docstring_rows[:6]]
    result = retrieve_and_rerank(queries, corpus, minilm_bi_encoder, cross_encoder, top_k=5,
                                 retrieve_k=12, batch_size=16)
    assert set(result.seconds) == {"encode_corpus", "encode_queries", "search", "rerank"}
    assert all(s > 0 for s in result.seconds.values())
    exact = semantic_search(minilm_bi_encoder.encode(queries), minilm_bi_encoder.encode(corpus),
                            top_k=12)
    for q, hits, retrieved in zip(queries, result.hits, exact):
        ids = [h["corpus_id"] for h in retrieved]
        assert len(hits) == 5 and {h["corpus_id"] for h in hits} <= set(ids)
        want = cross_encoder.predict([(q, corpus[i]) for i in ids])
        np.testing.assert_allclose([h["score"] for h in hits], np.sort(want)[::-1][:5], atol=1e-5)
        for h in hits:
            assert ids[h["retrieval_rank"]] == h["corpus_id"]
            assert abs(h["retrieval_score"] - retrieved[h["retrieval_rank"]]["score"]) < 1e-5
    # Given corpus embeddings: nothing re-encoded, the same hits.
    again = retrieve_and_rerank(queries, corpus, minilm_bi_encoder, cross_encoder, top_k=5,
                                retrieve_k=12, corpus_embeddings=minilm_bi_encoder.encode(corpus))
    assert again.seconds["encode_corpus"] < 0.01
    assert [[h["corpus_id"] for h in r] for r in again.hits] == \
        [[h["corpus_id"] for h in r] for r in result.hits]
    # retrieve_k above the corpus size is capped: every passage is reranked.
    small = retrieve_and_rerank(queries[:1], corpus[:4], minilm_bi_encoder, cross_encoder,
                                top_k=4, retrieve_k=100)
    assert sorted(h["corpus_id"] for h in small.hits[0]) == [0, 1, 2, 3]


def test_bad_input_is_one_clear_line(minilm_bi_encoder, cross_encoder):
    corpus = ["Open the file.", "Sort the list."]
    run = lambda **kw: retrieve_and_rerank(**{"queries": ["open"], "corpus": corpus,
                                              "bi_encoder": minilm_bi_encoder,
                                              "cross_encoder": cross_encoder, **kw})
    cases = [
        (dict(queries=[" "]), ValueError, "query 0 is empty"),
        (dict(corpus=["a", ""]), ValueError, "passage 1 is empty"),
        (dict(corpus=[]), ValueError, "corpus is empty: no texts"),
        (dict(top_k=3), ValueError, "top_k=3 but the corpus has 2 passages"),
        (dict(top_k=1, corpus_embeddings=np.zeros((3, 384))), ValueError,
         "corpus_embeddings has 3 rows for 2 passages"),
        (dict(top_k=1, corpus_embeddings=np.zeros((2, 100))), ValueError,
         "Query dim 384 != corpus dim 100"),
        (dict(queries="open"), TypeError, "one str"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message) as e:
            run(**kwargs)
        assert "\n" not in str(e.value)
