"""`VectorIndex`: an approximate nearest-neighbour index of sentence embeddings (FAISS HNSW).

For corpora where the exact chunked search (`tfbert.retrieval.search.semantic_search`)
is too slow per query. Built on FAISS (`faiss-cpu`): `IndexHNSWFlat` over
L2-normalized vectors with the inner product (= cosine), `M` neighbours per
node, `ef_construction` / `ef_search` candidate lists. Why FAISS: of the
libraries that install here (FAISS, hnswlib, USearch; ScaNN 1.4.2's wheel is
built against TF 2.20 and fails to import next to TF 2.21), it answered the
most queries per second at the same recall@10 on 119,985 real passages (0.998:
1.7x hnswlib, 6.5x USearch; `benchmarks/bench_index.py`, figures in
`docs/sentence_embeddings.md`).

`semantic_search(queries, index, top_k)` searches it like an embeddings
array (the same call, the same `[{"corpus_id", "score"}]` results).
`add(embeddings, ids)` indexes more vectors (ids new, the same dim). Embeddings
with a NaN or infinite value are refused, naming the row, wherever they enter
(`build`, `add`, `search`).

The index file (`save`, written to a temporary file and renamed into place):
a magic line, a JSON header (library, dim, count, model, metric, sizes,
SHA-256 of the payload), then the FAISS index bytes and the corpus ids
(int64). `load` checks all of it before use and says in one line what is
wrong: not an index file, truncated, corrupted, another dimension or model.

Example:
>>> rng = np.random.default_rng(0)
>>> corpus = rng.normal(size=(500, 16)).astype("float32")
>>> index = VectorIndex.build(corpus, model="demo")
>>> hits = index.search(corpus[:3], top_k=2)
>>> [h[0]["corpus_id"] for h in hits], round(hits[0][0]["score"], 4)
([0, 1, 2], 1.0)
>>> import tempfile; path = tempfile.mkdtemp() + "/demo.index"
>>> VectorIndex.load(index.save(path), dim=16, model="demo").search(corpus[:1], 1)[0][0]["corpus_id"]
0
"""

import hashlib
import json
import os
import struct

import numpy as np

from tfbert.atomic import write_bytes
from tfbert.config_loader import check_int
from tfbert.retrieval.search import as_embeddings

MAGIC = b"TFBERT-VECTOR-INDEX 1\n"
LIBRARY = "faiss.IndexHNSWFlat"


def _faiss():
    try:
        import faiss
    except ImportError:
        raise ImportError("tfbert.retrieval.index needs FAISS: pip install faiss-cpu") from None
    return faiss


def _unit(x, what, dim=None):
    x = as_embeddings(x, what)  # NaN / inf refused with its row: FAISS would index it
    if dim is not None and x.shape[1] != dim:
        raise ValueError(f"{what} have dim {x.shape[1]}, the index {dim}.")
    return np.ascontiguousarray(x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12))


class VectorIndex:
    """An HNSW index of `count` unit vectors of size `dim` (see module doc).

    `ids`: the corpus id of each vector (default `0..count-1`), returned as
    `corpus_id`. `model`: a free string naming the model that made the
    embeddings (checked by `load(..., model=)`, so an index is not queried
    with another model's embeddings).
    """

    def __init__(self, index, ids, model="", ef_search=128):
        self.index = index
        self.ids = np.asarray(ids, np.int64)
        self.model = str(model)
        self.ef_search = check_int(ef_search, "ef_search", 1)

    @property
    def dim(self):
        return int(self.index.d)

    def __len__(self):
        return int(self.index.ntotal)

    @classmethod
    def build(cls, embeddings, ids=None, model="", m=32, ef_construction=200, ef_search=128):
        """Indexes float `[n, dim]` embeddings (normalized here)."""
        # FAISS aborts the whole process on m < 2 (an assertion in C++), so check first.
        m = check_int(m, "m", 2)
        ef_construction = check_int(ef_construction, "ef_construction", 1)
        ef_search = check_int(ef_search, "ef_search", 1)
        faiss = _faiss()
        vectors = _unit(embeddings, "embeddings")
        ids = _check_ids(ids, len(vectors), np.arange(len(vectors)))
        index = faiss.IndexHNSWFlat(vectors.shape[1], m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
        index.add(vectors)
        return cls(index, ids, model, ef_search)

    def add(self, embeddings, ids=None):
        """Adds float `[n, dim]` embeddings (normalized here); `ids` default to
        the next integers after the largest id held. Ids must be new."""
        vectors = _unit(embeddings, "embeddings", self.dim)
        start = int(self.ids.max()) + 1 if len(self.ids) else 0
        ids = _check_ids(ids, len(vectors), np.arange(start, start + len(vectors)))
        held = np.intersect1d(ids, self.ids)
        if len(held):
            raise ValueError(f"ids must be new: the index already holds id {int(held[0])} "
                             f"({len(held)} repeated).")
        self.index.add(vectors)
        self.ids = np.concatenate([self.ids, ids])
        return self

    @classmethod
    def from_shards(cls, directory, model="", **kwargs):
        """Indexes the embedding shards that `tfbert.retrieval.corpus_encoding.encode_corpus`
        wrote (their ids become the `corpus_id`s)."""
        from tfbert.retrieval.corpus_encoding import read_embedding_shards

        ids, embeddings = read_embedding_shards(directory)
        return cls.build(embeddings, ids=ids, model=model, **kwargs)

    def search(self, query_embeddings, top_k=10, ef_search=None):
        """`[[{"corpus_id", "score"}]]` per query, best first (cosine)."""
        queries = _unit(query_embeddings, "query embeddings", self.dim)
        top_k = check_int(top_k, "top_k", 1)
        ef_search = check_int(ef_search, "ef_search", 1, allow_none=True)
        if not 1 <= top_k <= len(self):
            raise ValueError(f"top_k={top_k} but the index holds {len(self)} vectors; ask for "
                             f"1 to {len(self)}.")
        self.index.hnsw.efSearch = max(int(ef_search or self.ef_search), top_k)
        scores, positions = self.index.search(queries, top_k)
        return [[{"corpus_id": int(self.ids[p]), "score": float(s)}
                 for p, s in zip(row_p, row_s) if p >= 0]
                for row_p, row_s in zip(positions, scores)]

    # === Files ===

    def save(self, path):
        """Writes the index file (see module doc), atomically; returns `path`."""
        path = _check_path(path)
        if os.path.isdir(path):
            raise ValueError(f"{path} is a directory; save takes a file path (e.g. "
                             f"{os.path.join(path, 'corpus.index')}).")
        payload = _faiss().serialize_index(self.index).tobytes()
        ids = self.ids.astype("<i8").tobytes()
        header = {"library": LIBRARY, "dim": self.dim, "count": len(self), "model": self.model,
                  "metric": "cosine", "ef_search": self.ef_search,
                  "index_bytes": len(payload), "ids_bytes": len(ids),
                  "sha256": hashlib.sha256(payload + ids).hexdigest()}
        head = json.dumps(header, sort_keys=True).encode("utf-8")
        write_bytes(path, MAGIC + struct.pack("<Q", len(head)) + head + payload + ids)
        return path

    @classmethod
    def load(cls, path, dim=None, model=None):
        """Reads an index file; `dim` / `model`: what the caller's embeddings
        are, checked against the file's (one-line errors, see module doc)."""
        path = _check_path(path)
        dim = check_int(dim, "dim", 1, allow_none=True)
        if model is not None and not isinstance(model, str):
            raise TypeError(f"model must be a string (the name given to build) or None, got "
                            f"{type(model).__name__}.")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"Index file not found: {path}")
        with open(path, "rb") as f:
            data = f.read()
        if not data.startswith(MAGIC):
            raise ValueError(f"{path}: not a tfbert vector index file (no {MAGIC[:-1].decode()!r} "
                             "header).")
        start = len(MAGIC) + 8
        if len(data) < start:
            raise ValueError(f"{path}: truncated index file ({len(data)} bytes, the header is cut).")
        (head_len,) = struct.unpack("<Q", data[len(MAGIC):start])
        try:
            header = json.loads(data[start:start + head_len])
            sizes = int(header["index_bytes"]), int(header["ids_bytes"])
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"{path}: truncated or corrupted index file (unreadable header).") \
                from None
        body = data[start + head_len:]
        if len(body) != sum(sizes):
            raise ValueError(f"{path}: truncated index file: {len(body)} bytes after the header, "
                             f"expected {sum(sizes)}.")
        if header.get("library") != LIBRARY:
            raise ValueError(f"{path}: made with {header.get('library')!r}, this tfbert reads "
                             f"{LIBRARY!r}.")
        if hashlib.sha256(body).hexdigest() != header.get("sha256"):
            raise ValueError(f"{path}: corrupted index file (SHA-256 of the payload differs).")
        if dim is not None and int(dim) != header["dim"]:
            raise ValueError(f"{path}: the index holds dim-{header['dim']} vectors, the "
                             f"embeddings are dim {dim} (another model or truncate_dim?).")
        if model is not None and str(model) != header.get("model"):
            raise ValueError(f"{path}: built from {header.get('model')!r} embeddings, not "
                             f"{model!r}; rebuild the index for this model.")
        faiss = _faiss()
        index = faiss.deserialize_index(np.frombuffer(body[:sizes[0]], np.uint8))
        ids = np.frombuffer(body[sizes[0]:], "<i8").astype(np.int64)
        if index.d != header["dim"] or index.ntotal != header["count"] or len(ids) != index.ntotal:
            raise ValueError(f"{path}: corrupted index file (header and payload disagree).")
        return cls(index, ids, header.get("model", ""), header.get("ef_search", 128))


def _check_ids(ids, count, default):
    """`ids` (default `default`) as int64 `[count]`, distinct, or one line saying why not."""
    if ids is None:
        return default
    ids = np.asarray(ids)
    if ids.shape != (count,) or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"ids must be {count} integers (one per embedding), got "
                         f"shape {ids.shape} of {ids.dtype}.")
    if len(np.unique(ids)) != len(ids):
        raise ValueError("ids must be distinct.")
    return ids.astype(np.int64)


def _check_path(path):
    if not isinstance(path, (str, os.PathLike)) or not str(os.fspath(path)).strip():
        raise TypeError(f"path must be a file path (str or os.PathLike), got {path!r:.40}.")
    return os.fspath(path)

