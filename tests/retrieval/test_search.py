"""semantic_search and paraphrase_mining: exact against the full similarity
matrix, for any chunk sizes; errors for bad shapes."""

import numpy as np
import pytest

from tfbert.retrieval.search import paraphrase_mining, semantic_search


def unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture()
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(13, 6)).astype(np.float32), rng.normal(size=(97, 6)).astype(np.float32)


@pytest.mark.parametrize("q_chunk, c_chunk", [(100, 50000), (4, 10), (1, 1)])
def test_semantic_search_matches_full_matrix(data, q_chunk, c_chunk):
    q, c = data
    sims = unit(q) @ unit(c).T
    hits = semantic_search(q, c, top_k=5, query_chunk_size=q_chunk, corpus_chunk_size=c_chunk)
    for i, row in enumerate(hits):
        assert [h["corpus_id"] for h in row] == list(np.argsort(-sims[i])[:5])
        np.testing.assert_allclose([h["score"] for h in row], np.sort(sims[i])[::-1][:5],
                                   rtol=1e-5)


def test_top_k_larger_than_corpus(data):
    q, c = data
    assert len(semantic_search(q, c[:3], top_k=10)[0]) == 3


@pytest.mark.parametrize("chunk", [1000, 7])
def test_paraphrase_mining_matches_full_matrix(data, chunk):
    _, c = data
    sims = unit(c) @ unit(c).T
    got = paraphrase_mining(c, top_k=3, chunk_size=chunk)
    # Every pair in which one side is among the other's 3 nearest neighbours.
    want = {}
    for i in range(len(c)):
        order = [j for j in np.argsort(-sims[i]) if j != i][:3]
        for j in order:
            want[(min(i, j), max(i, j))] = sims[i, j]
    assert {(i, j) for _, i, j in got} == set(want)
    scores = [s for s, _, _ in got]
    assert scores == sorted(scores, reverse=True)
    for s, i, j in got:
        assert i < j and s == pytest.approx(want[(i, j)], rel=1e-5)


def test_paraphrase_mining_max_pairs_and_texts_need_encoder(data):
    _, c = data
    assert len(paraphrase_mining(c, top_k=3, max_pairs=5)) == 5
    with pytest.raises(ValueError, match="pass encoder="):
        paraphrase_mining(["a", "b"])


def test_bad_shapes():
    with pytest.raises(ValueError, match=r"query_embeddings must be a non-empty \[n, dim\]"):
        semantic_search(np.ones(3), np.ones((2, 3)))
    with pytest.raises(ValueError, match="dim 3 != corpus dim 2"):
        semantic_search(np.ones((1, 3)), np.ones((2, 2)))
