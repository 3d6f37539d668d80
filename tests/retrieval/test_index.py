"""VectorIndex (FAISS HNSW): built from real MiniLM embeddings it finds the exact
search's neighbours, behind `semantic_search` and `retrieve_and_rerank`; its file
reloads in a fresh process; every bad file or input is one clear line."""

import json

import numpy as np
import pytest

pytest.importorskip("faiss")

from tfbert.retrieval.index import VectorIndex
from tfbert.retrieval.search import semantic_search


@pytest.fixture(scope="module")
def embedded(minilm_bi_encoder, docstring_rows):
    corpus = minilm_bi_encoder.encode([p for _, p in docstring_rows])
    queries = minilm_bi_encoder.encode([q for q, _ in docstring_rows[:40]])
    return corpus, queries


def ids(hits):
    return [[h["corpus_id"] for h in row] for row in hits]


def test_finds_the_exact_neighbours_and_reloads_fresh(embedded, tmp_path, run_python):
    corpus, queries = embedded
    exact = semantic_search(queries, corpus, top_k=5)
    index = VectorIndex.build(corpus, ids=np.arange(len(corpus)) + 1000, model="minilm")
    hits = semantic_search(queries, index, top_k=5)  # the same call as the exact search
    assert ids(hits) == [[i + 1000 for i in row] for row in ids(exact)]
    np.testing.assert_allclose([h["score"] for r in hits for h in r],
                               [h["score"] for r in exact for h in r], atol=1e-5)
    assert len(semantic_search(queries[:1], index, top_k=10_000)[0]) == len(corpus)
    path = index.save(str(tmp_path / "passages.index"))
    assert [p.name for p in tmp_path.iterdir()] == ["passages.index"]
    np.save(tmp_path / "q.npy", queries)
    out = run_python(f"""
import json, numpy as np
from tfbert.retrieval.index import VectorIndex
index = VectorIndex.load({path!r}, dim=384, model="minilm")
hits = index.search(np.load({str(tmp_path / 'q.npy')!r}), top_k=5)
print(json.dumps([[h["corpus_id"] for h in r] for r in hits]))
""")
    assert json.loads(out.strip().splitlines()[-1]) == ids(hits)


def test_rerank_over_the_index(embedded, minilm_bi_encoder, docstring_rows):
    from tfbert import BertConfig, BertEncoder, CrossEncoder
    from tfbert.retrieval.rerank import retrieve_and_rerank

    corpus, _ = embedded
    ce = CrossEncoder.from_encoder(BertEncoder(BertConfig.from_preset("tiny", num_layers=1)),
                                   minilm_bi_encoder.preprocessor)
    passages = [p for _, p in docstring_rows]
    queries = [q for q, _ in docstring_rows[:3]]
    with_index = retrieve_and_rerank(queries, passages, minilm_bi_encoder, ce, top_k=3,
                                     retrieve_k=8, index=VectorIndex.build(corpus))
    exact = retrieve_and_rerank(queries, passages, minilm_bi_encoder, ce, top_k=3,
                                retrieve_k=8, corpus_embeddings=corpus)
    assert ids(with_index.hits) == ids(exact.hits)


def test_bad_files_and_inputs_are_one_clear_line(embedded, tmp_path):
    corpus, queries = embedded
    index = VectorIndex.build(corpus[:50], model="minilm")
    path = index.save(str(tmp_path / "ok.index"))
    data = open(path, "rb").read()
    (tmp_path / "cut.index").write_bytes(data[:len(data) // 2])
    (tmp_path / "cut_header.index").write_bytes(data[:30])
    flipped = bytearray(data)
    flipped[-100] ^= 0xFF
    (tmp_path / "flipped.index").write_bytes(bytes(flipped))
    (tmp_path / "other.index").write_bytes(b"\x93NUMPY not an index")
    cases = [
        (lambda: VectorIndex.load(tmp_path / "cut.index"), ValueError, "truncated index file"),
        (lambda: VectorIndex.load(tmp_path / "cut_header.index"), ValueError, "truncated"),
        (lambda: VectorIndex.load(tmp_path / "flipped.index"), ValueError, "corrupted index file"),
        (lambda: VectorIndex.load(tmp_path / "other.index"), ValueError,
         "not a tfbert vector index file"),
        (lambda: VectorIndex.load(tmp_path / "missing.index"), FileNotFoundError, "not found"),
        (lambda: VectorIndex.load(path, dim=128), ValueError,
         "holds dim-384 vectors, the embeddings are dim 128"),
        (lambda: VectorIndex.load(path, model="bert-base"), ValueError,
         "built from 'minilm' embeddings, not 'bert-base'"),
        (lambda: index.search(queries[:, :128]), ValueError, "have dim 128, the index 384"),
        (lambda: index.search(queries, top_k=51), ValueError, "top_k=51 but the index holds 50"),
        (lambda: index.search(np.zeros((0, 384))), ValueError, "non-empty"),
        (lambda: VectorIndex.build(corpus[:3], ids=[1, 1, 2]), ValueError, "distinct"),
        (lambda: VectorIndex.build(corpus[:3], ids=[1, 2]), ValueError, "3 integers"),
        (lambda: VectorIndex.build(np.full((2, 4), np.nan)), ValueError, "NaN"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message) as e:
            call()
        assert "\n" not in str(e.value)


def test_add_extends_the_index_like_one_build(embedded, tmp_path):
    corpus, queries = embedded
    whole = VectorIndex.build(corpus, ids=np.arange(len(corpus)) + 10)
    grown = VectorIndex.build(corpus[:100], ids=np.arange(100) + 10).add(corpus[100:])
    assert len(grown) == len(corpus)
    assert grown.ids.tolist() == whole.ids.tolist()  # default ids continue after the largest
    exact = [[i + 10 for i in row] for row in ids(semantic_search(queries, corpus, top_k=3))]
    assert ids(grown.search(queries, top_k=3)) == exact
    reloaded = VectorIndex.load(grown.save(str(tmp_path / "grown.index")))
    assert ids(reloaded.search(queries, top_k=3)) == exact
