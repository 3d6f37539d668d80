"""Bad input to the retrieval surfaces and the cross-encoder (issue 52): every public call,
every argument class (None, empty, wrong type, wrong rank or dim, out of range, non-finite,
duplicates, truncated files or files of another model) gets an error that tfbert raises
itself, before NumPy, TensorFlow or FAISS meet the value, of a type a user catches, on
one line that names the argument (or the file and key) and what was expected.

Each case is `(call: argument class, action on the fixtures, pattern the message matches)`;
tests/test_bad_inputs.py holds the rest of the API, tests/tools/ the scripts.
"""

import json
import os
import pathlib
import shutil

import numpy as np
import pytest

from tfbert import BertConfig, BertEncoder, BertPreprocessor
from tfbert.models.cross_encoder import CrossEncoder
from tfbert.models.sentence_encoder import SentenceEncoder
from tfbert.retrieval.corpus_encoding import encode_corpus, read_embedding_shards
from tfbert.retrieval.mining import mine_hard_negatives, training_rows, write_rows
from tfbert.retrieval.quantization import quantize_embeddings, quantized_search
from tfbert.retrieval.rerank import retrieve_and_rerank
from tfbert.retrieval.search import semantic_search
from tfbert.tasks.sentence_embedding import SentenceEmbeddingTask

VOCAB = "tests/data/pretraining/vocab.txt"
TEXTS = ["Open the file.", "Sort the list.", "Join the paths.", "Close it."]


def tiny_encoder():
    return BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931))


@pytest.fixture(scope="module")
def w(tmp_path_factory):
    """What the cases act on: tiny random models, their files, embeddings."""
    tmp = tmp_path_factory.mktemp("retrieval_bad")
    pre = BertPreprocessor(vocab_file=VOCAB, seq_length=16)
    bi = SentenceEncoder(tiny_encoder(), preprocessor=pre)
    ce = CrossEncoder.from_encoder(tiny_encoder(), pre)
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(20, 8)).astype("float32")
    world = {"tmp": tmp, "pre": pre, "bi": bi, "ce": ce, "emb": emb,
             "nan": np.where(np.arange(20)[:, None] == 3, np.nan, emb),
             "inf": np.where(np.arange(20)[:, None] == 5, np.inf, emb),
             "ce_dir": ce.save_pretrained(str(tmp / "ce")),
             "bi_dir": bi.save_pretrained(str(tmp / "bi")),
             "q8": quantize_embeddings(emb, "int8")}
    world["ce_export"] = ce.export(str(tmp / "ce_export"))
    task = SentenceEmbeddingTask({"seq_length": 16}).prepare(pre)
    world["bi_export"] = str(tmp / "bi_export")
    task.export(task.build_model(tiny_encoder()), world["bi_export"])
    rows = tmp / "rows.jsonl"
    rows.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    world["rows"] = str(rows)
    return world


def changed_copy(w, name, src, edit):
    """A copy of directory `src` under `name`, then `edit(copy)`; returns its path."""
    out = w["tmp"] / name
    if not out.exists():
        shutil.copytree(src, out)
        edit(out)
    return str(out)


def with_section(w, name, src, section, values):
    """A copy of checkpoint `w[src]` whose config.json `section` has `values` too."""
    def edit(d):
        config = json.loads((d / "config.json").read_text())
        config[section].update(values)
        (d / "config.json").write_text(json.dumps(config))
    return changed_copy(w, name, w[src], edit)


def cross_encoder_config(w, name, **values):
    return CrossEncoder.from_pretrained(with_section(w, name, "ce_dir", "cross_encoder", values))


def sentence_config(w, name, **values):
    return SentenceEncoder.from_pretrained(with_section(w, name, "bi_dir", "sentence", values))


def truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def index(w):
    pytest.importorskip("faiss")
    from tfbert.retrieval.index import VectorIndex

    if "index" not in w:
        w["index"] = VectorIndex.build(w["emb"], model="tiny")
        w["index_file"] = w["index"].save(str(w["tmp"] / "tiny.index"))
    return w["index"]


def vector_index():
    pytest.importorskip("faiss")
    from tfbert.retrieval.index import VectorIndex

    return VectorIndex


def index_file(w, name, edit):
    index(w)
    path = w["tmp"] / name
    shutil.copy(w["index_file"], path)
    edit(path)
    return str(path)


def in_scratch_dir(w, call):
    """`call()` with an empty scratch directory as the current one: an export to ""
    once replaced the current directory (then the repository) with a SavedModel."""
    scratch = w["tmp"] / "scratch"
    scratch.mkdir(exist_ok=True)
    here = os.getcwd()
    os.chdir(scratch)
    try:
        return call()
    finally:
        os.chdir(here)


def rerank(w, **kwargs):
    args = {"queries": ["open a file"], "corpus": TEXTS, "bi_encoder": w["bi"],
            "cross_encoder": w["ce"], "top_k": 2, **kwargs}
    return retrieve_and_rerank(**args)


def embed_fn(values=None):
    """`embed` for mining: 4-dim embeddings of the texts, or `values(texts)`."""
    return values or (lambda texts: np.array([[len(t), 1.0, t.count("e"), 0.5] for t in texts],
                                             np.float32))


def mine(pairs=(("open a file", "Open the file."),), **kwargs):
    kwargs.setdefault("embed", embed_fn())
    return mine_hard_negatives(list(pairs) if isinstance(pairs, tuple) else pairs, **kwargs)


def rows_file(w, name, text):
    path = w["tmp"] / name
    path.write_text(text)
    return str(path)


def shards(w, name, edit):
    def write(d):
        d.mkdir()
        (d / "manifest.json").write_text(json.dumps({"num_shards": 2, "count": 4, "dim": 3}))
        for k in range(2):
            np.savez(d / f"embeddings-0000{k}-of-00002.npz", ids=np.array([2 * k, 2 * k + 1]),
                     embeddings=np.ones((2, 3), np.float32))
        edit(d)
    out = w["tmp"] / name
    if not out.exists():
        write(out)
    return read_embedding_shards(str(out))


CASES = [
    # --- CrossEncoder.from_pretrained ---
    ("from_pretrained: None", lambda w: CrossEncoder.from_pretrained(None),
     r"takes a checkpoint directory, got NoneType"),
    ("from_pretrained: missing directory", lambda w: CrossEncoder.from_pretrained(
        str(w["tmp"] / "nowhere")), r"nowhere"),
    ("from_pretrained: seq_length fractional", lambda w: CrossEncoder.from_pretrained(
        w["ce_dir"], seq_length=2.5), r"seq_length must be >= 2 \(an integer or None\), got 2\.5"),
    ("from_pretrained: seq_length out of range", lambda w: CrossEncoder.from_pretrained(
        w["ce_dir"], seq_length=1), r"seq_length must be >= 2.*got 1"),
    ("from_pretrained: config seq_length a string", lambda w: cross_encoder_config(
        w, "ce_abc", seq_length="abc"),
     r"config\.json:cross_encoder: seq_length: expected an integer, got 'abc'"),
    ("from_pretrained: config seq_length negative", lambda w: cross_encoder_config(
        w, "ce_neg", seq_length=-3), r"config\.json:cross_encoder: seq_length: must be >= 2, got -3"),
    ("from_pretrained: config seq_length under both names", lambda w: cross_encoder_config(
        w, "ce_both", max_seq_length=64),
     r"config\.json:cross_encoder: max_seq_length and seq_length are one setting"),
    ("from_pretrained: config pooling unknown", lambda w: cross_encoder_config(
        w, "ce_pool", pooling="max2"),
     r"config\.json:cross_encoder: pooling: must be one of \['cls', 'mean', 'max'\], got 'max2'"),
    ("from_pretrained: config key unknown", lambda w: cross_encoder_config(
        w, "ce_key", polling="cls"), r"config\.json:cross_encoder: unknown key\(s\) \['polling'\]"),
    ("from_pretrained: truncated weights", lambda w: CrossEncoder.from_pretrained(changed_copy(
        w, "ce_cut", w["ce_dir"], lambda d: truncate(d / "model.safetensors"))),
     r"model\.safetensors: cannot read"),
    ("from_pretrained: truncated config.json", lambda w: CrossEncoder.from_pretrained(
        changed_copy(w, "ce_cut_json", w["ce_dir"], lambda d: truncate(d / "config.json"))),
     r"config\.json: not valid JSON"),
    ("from_pretrained: another model's checkpoint (no head)",
     lambda w: CrossEncoder.from_pretrained(w["bi_dir"]), r"no classifier head"),
    # --- CrossEncoder.predict ---
    ("predict: None", lambda w: w["ce"].predict(None), r"list of \(query, passage\) pairs"),
    ("predict: empty", lambda w: w["ce"].predict([]), r"empty list of pairs"),
    ("predict: one str", lambda w: w["ce"].predict("q"), r"list of"),
    ("predict: wrong type in a pair", lambda w: w["ce"].predict([("q", 3)]),
     r"pair 0: the passage is an int \(3\), not a string"),
    ("predict: pair of three", lambda w: w["ce"].predict([("q", "p", "x")]),
     r"pair 0 must be \(query, passage\)"),
    ("predict: empty text", lambda w: w["ce"].predict([("q", " ")]), r"pair 0: empty passage"),
    ("predict: batch_size 0", lambda w: w["ce"].predict([("q", "p")], batch_size=0),
     r"batch_size must be >= 1"),
    ("predict: batch_size fractional", lambda w: w["ce"].predict([("q", "p")], batch_size=2.5),
     r"batch_size must be >= 1 \(an integer\), got 2\.5"),
    ("predict: batch_size a string", lambda w: w["ce"].predict([("q", "p")], batch_size="8"),
     r"batch_size must be >= 1 \(an integer\), got '8'"),
    ("predict: activation unknown", lambda w: w["ce"].predict([("q", "p")], activation="relu"),
     r"activation must be 'sigmoid' or None"),
    # --- CrossEncoder.rank ---
    ("rank: query None", lambda w: w["ce"].rank(None, TEXTS), r"one query string, got NoneType"),
    ("rank: passages None", lambda w: w["ce"].rank("q", None),
     r"rank takes a list of passages, got NoneType"),
    ("rank: passages not a list", lambda w: w["ce"].rank("q", 5), r"list of passages, got int"),
    ("rank: passages one str", lambda w: w["ce"].rank("q", "p"), r"one str"),
    ("rank: passages empty", lambda w: w["ce"].rank("q", []), r"empty list of pairs"),
    ("rank: a passage None", lambda w: w["ce"].rank("q", ["p", None]),
     r"pair 1: the passage is NoneType"),
    ("rank: empty query", lambda w: w["ce"].rank(" ", ["p"]), r"empty query"),
    ("rank: top_k fractional", lambda w: w["ce"].rank("q", TEXTS, top_k=2.5),
     r"top_k must be >= 1 \(an integer or None\), got 2\.5"),
    ("rank: top_k 0", lambda w: w["ce"].rank("q", TEXTS, top_k=0), r"top_k must be >= 1"),
    ("rank: top_k negative", lambda w: w["ce"].rank("q", TEXTS, top_k=-2), r"got -2"),
    ("rank: top_k a bool", lambda w: w["ce"].rank("q", TEXTS, top_k=True), r"got True"),
    ("rank: top_k a string", lambda w: w["ce"].rank("q", TEXTS, top_k="2"), r"got '2'"),
    # --- CrossEncoder.export ---
    ("export: None", lambda w: w["ce"].export(None), r"export takes a directory path"),
    ("export: empty path", lambda w: in_scratch_dir(w, lambda: w["ce"].export("")),
     r"output directory is empty"),
    ("export: an existing file", lambda w: w["ce"].export(
        str(pathlib.Path(w["ce_dir"]) / "config.json")), r"config\.json is a file, not a directory"),
    ("export: jit_compile a string", lambda w: w["ce"].export(str(w["tmp"] / "x"),
                                                               jit_compile="yes"),
     r"jit_compile must be True or False"),
    # --- retrieve_and_rerank ---
    ("rerank: queries None", lambda w: rerank(w, queries=None), r"queries is None, not a list of texts"),
    ("rerank: queries one str", lambda w: rerank(w, queries="open"), r"queries is one string"),
    ("rerank: corpus empty", lambda w: rerank(w, corpus=[]), r"corpus is empty: no texts"),
    ("rerank: a passage empty", lambda w: rerank(w, corpus=["a", " "]), r"passage 1 is empty"),
    ("rerank: bi_encoder None", lambda w: rerank(w, bi_encoder=None),
     r"bi_encoder must be a SentenceEncoder.*got NoneType"),
    ("rerank: cross_encoder None", lambda w: rerank(w, cross_encoder=None),
     r"cross_encoder must be a CrossEncoder.*got NoneType"),
    ("rerank: the two models swapped", lambda w: rerank(w, bi_encoder=w["ce"],
                                                        cross_encoder=w["bi"]),
     r"bi_encoder must be a SentenceEncoder.*got CrossEncoder"),
    ("rerank: top_k fractional", lambda w: rerank(w, top_k=1.5), r"top_k must be >= 1.*got 1\.5"),
    ("rerank: top_k above the corpus", lambda w: rerank(w, top_k=5),
     r"top_k=5 but the corpus has 4"),
    ("rerank: retrieve_k 0", lambda w: rerank(w, retrieve_k=0), r"retrieve_k must be >= 1"),
    ("rerank: retrieve_k a string", lambda w: rerank(w, retrieve_k="all"),
     r"retrieve_k must be >= 1 \(an integer\), got 'all'"),
    ("rerank: batch_size 0", lambda w: rerank(w, batch_size=0), r"batch_size must be >= 1"),
    ("rerank: corpus_embeddings with NaN", lambda w: rerank(
        w, corpus_embeddings=np.where(np.arange(4)[:, None] == 2, np.nan, np.ones((4, 128)))),
     r"corpus_embeddings: row 2 holds NaN or inf"),
    ("rerank: corpus_embeddings of another dim", lambda w: rerank(
        w, corpus_embeddings=np.ones((4, 7))), r"Query dim 128 != corpus dim 7"),
    ("rerank: corpus_embeddings rows", lambda w: rerank(w, corpus_embeddings=np.ones((3, 128))),
     r"corpus_embeddings has 3 rows for 4 passages"),
    ("rerank: corpus_embeddings 1-D", lambda w: rerank(w, corpus_embeddings=np.ones(4)),
     r"non-empty \[n, dim\] array, got shape \(4,\)"),
    ("rerank: index not an index", lambda w: rerank(w, index="corpus.index"),
     r"index must be a tfbert\.retrieval\.index\.VectorIndex, got str"),
    ("rerank: index of another size", lambda w: rerank(w, index=index(w)),
     r"The index holds 20 vectors for 4 passages"),
    # --- mine_hard_negatives ---
    ("mine: pairs None", lambda w: mine(None), r"takes a list of \(query, positive\) pairs"),
    ("mine: pairs one str", lambda w: mine("q p"), r"pairs, got str"),
    ("mine: pairs empty", lambda w: mine([]), r"no \(query, positive\) pairs"),
    ("mine: a pair of one", lambda w: mine([("q",)]), r"pair 0 must be two non-empty strings"),
    ("mine: a pair with a number", lambda w: mine([("q", 3)]), r"pair 0 must be two"),
    ("mine: corpus one str", lambda w: mine(corpus="passages"),
     r"corpus must be a list of passages, got str"),
    ("mine: corpus empty", lambda w: mine(corpus=[]), r"corpus must be a non-empty list"),
    ("mine: a corpus passage None", lambda w: mine(corpus=["a", None]), r"non-empty strings"),
    ("mine: no encoder", lambda w: mine(embed=None), r"needs encoder="),
    ("mine: encoder not a model", lambda w: mine(embed=None, encoder="minilm"),
     r"encoder must be a SentenceEncoder.*got str"),
    ("mine: embed not a function", lambda w: mine(embed=np.ones((2, 4))),
     r"embed must be a function"),
    ("mine: num_negatives 0", lambda w: mine(num_negatives=0), r"num_negatives must be >= 1"),
    ("mine: num_negatives fractional", lambda w: mine(num_negatives=2.5),
     r"num_negatives must be >= 1 \(an integer\), got 2\.5"),
    ("mine: num_negatives a string", lambda w: mine(num_negatives="3"), r"got '3'"),
    ("mine: range_min negative", lambda w: mine(range_min=-1), r"range_min must be >= 0"),
    ("mine: range_max not above range_min", lambda w: mine(range_min=5, range_max=5),
     r"range_min < range_max"),
    ("mine: absolute_margin NaN", lambda w: mine(absolute_margin=float("nan")),
     r"absolute_margin must be a finite number or None, got nan"),
    ("mine: absolute_margin a string", lambda w: mine(absolute_margin="0.1"),
     r"absolute_margin must be a finite number"),
    ("mine: relative_margin 1", lambda w: mine(relative_margin=1.0),
     r"relative_margin must be in \[0, 1\)"),
    ("mine: max_score infinite", lambda w: mine(max_score=float("inf")),
     r"max_score must be a finite number"),
    ("mine: an embedding NaN", lambda w: mine(embed=lambda t: np.where(
        np.arange(len(t))[:, None] == 0, np.nan, np.ones((len(t), 4)))),
     r"embeddings of the corpus passages: row 0 holds NaN or inf"),
    ("mine: embed returns too few", lambda w: mine(embed=lambda t: np.ones((1, 4)),
                                                   corpus=["a", "b"]),
     r"embed returned 1 embeddings for 2 corpus passages"),
    ("mine: embed returns 1-D", lambda w: mine(embed=lambda t: np.ones(len(t))),
     r"non-empty \[n, dim\] array"),
    ("mine: embed dims differ", lambda w: mine(corpus=["a"], embed=lambda t: np.ones(
        (len(t), 3 if t == ["a"] else 4))), r"dim"),
    ("training_rows: None", lambda w: training_rows(None), r"takes the rows mine_hard_negatives"),
    ("training_rows: dicts, not MinedRows", lambda w: training_rows([{"query": "q"}]),
     r"row 0 is a dict, not a MinedRow"),
    ("training_rows: format unknown", lambda w: training_rows([], "csv"),
     r"format must be one of"),
    ("write_rows: nothing to write", lambda w: write_rows([], str(w["tmp"] / "r.jsonl")),
     r"No triplet rows"),
    # --- quantize_embeddings ---
    ("quantize: None", lambda w: quantize_embeddings(None), r"embeddings is None"),
    ("quantize: empty", lambda w: quantize_embeddings([]), r"non-empty \[n, dim\]"),
    ("quantize: 1-D", lambda w: quantize_embeddings(np.ones(4)), r"got shape \(4,\)"),
    ("quantize: 3-D", lambda w: quantize_embeddings(np.ones((2, 2, 2))), r"got shape \(2, 2, 2\)"),
    ("quantize: rows of mixed dims", lambda w: quantize_embeddings([[1.0, 2.0], [3.0]]),
     r"embeddings: row 1 has 1 values, row 0 has 2"),
    ("quantize: strings", lambda w: quantize_embeddings([["a", "b"]]), r"array of numbers"),
    ("quantize: a NaN row", lambda w: quantize_embeddings(w["nan"]),
     r"embeddings: row 3 holds NaN or inf \(1 row"),
    ("quantize: an infinite row", lambda w: quantize_embeddings(w["inf"], "binary"),
     r"embeddings: row 5 holds NaN or inf"),
    ("quantize: precision unknown", lambda w: quantize_embeddings(w["emb"], "int4"), r"precision"),
    ("quantize: ranges of another dim", lambda w: quantize_embeddings(
        w["emb"], ranges=np.zeros((2, 3))), r"ranges must be \[2, 8\]"),
    ("quantize: ranges NaN", lambda w: quantize_embeddings(w["emb"], ranges=np.full((2, 8), np.nan)),
     r"ranges: dimension 0 has min nan"),
    ("quantize: ranges min above max", lambda w: quantize_embeddings(
        w["emb"], ranges=np.stack([np.ones(8), np.zeros(8)])), r"min <= max"),
    ("quantize: calibration NaN", lambda w: quantize_embeddings(
        w["emb"], calibration_embeddings=w["nan"]), r"calibration_embeddings: row 3 holds NaN"),
    ("quantize: calibration of another dim", lambda w: quantize_embeddings(
        w["emb"], calibration_embeddings=np.ones((4, 3))), r"calibration embeddings have dim 3"),
    # --- quantized_search ---
    ("quantized_search: queries None", lambda w: quantized_search(None, w["q8"]),
     r"query_embeddings is None"),
    ("quantized_search: queries NaN", lambda w: quantized_search(w["nan"], w["q8"]),
     r"query_embeddings: row 3 holds NaN"),
    ("quantized_search: queries of another dim", lambda w: quantized_search(
        np.ones((1, 4)), w["q8"]), r"Query dim 4 != corpus dim 8"),
    ("quantized_search: corpus not quantized", lambda w: quantized_search(w["emb"], w["emb"]),
     r"quantize_embeddings"),
    ("quantized_search: top_k 0", lambda w: quantized_search(w["emb"], w["q8"], top_k=0),
     r"top_k must be >= 1"),
    ("quantized_search: top_k fractional", lambda w: quantized_search(w["emb"], w["q8"],
                                                                      top_k=2.5), r"got 2\.5"),
    ("quantized_search: top_k above the corpus", lambda w: quantized_search(
        w["emb"], w["q8"], top_k=21), r"top_k=21 but the corpus has 20"),
    ("quantized_search: rescore_multiplier negative", lambda w: quantized_search(
        w["emb"], w["q8"], rescore_multiplier=-1), r"rescore_multiplier must be >= 0"),
    ("quantized_search: rescore_multiplier fractional", lambda w: quantized_search(
        w["emb"], w["q8"], rescore_multiplier=1.5), r"got 1\.5"),
    ("quantized_search: corpus_embeddings NaN", lambda w: quantized_search(
        w["emb"], w["q8"], corpus_embeddings=w["nan"]), r"corpus_embeddings: row 3 holds NaN"),
    ("quantized_search: corpus_embeddings shape", lambda w: quantized_search(
        w["emb"], w["q8"], corpus_embeddings=np.ones((5, 8))), r"corpus_embeddings has shape"),
    ("quantized_search: chunk_size 0", lambda w: quantized_search(w["emb"], w["q8"],
                                                                  chunk_size=0),
     r"chunk_size must be >= 1"),
    # --- VectorIndex ---
    ("index build: None", lambda w: vector_index().build(None), r"embeddings is None"),
    ("index build: empty", lambda w: vector_index().build(np.zeros((0, 8))), r"non-empty"),
    ("index build: rows of mixed dims", lambda w: vector_index().build(
        [np.ones(3), np.ones(4)]), r"row 1 has 4 values, row 0 has 3"),
    ("index build: a NaN row", lambda w: vector_index().build(w["nan"]),
     r"embeddings: row 3 holds NaN or inf"),
    ("index build: strings", lambda w: vector_index().build([["a", "b"]]), r"array of numbers"),
    ("index build: ids fractional", lambda w: vector_index().build(
        w["emb"], ids=np.arange(20) + 0.5), r"ids must be 20 integers"),
    ("index build: ids repeated", lambda w: vector_index().build(w["emb"][:3], ids=[1, 1, 2]),
     r"distinct"),
    ("index build: m 1 (FAISS would abort the process)", lambda w: vector_index().build(
        w["emb"], m=1), r"m must be >= 2"),
    ("index build: m fractional", lambda w: vector_index().build(w["emb"], m=2.5), r"got 2\.5"),
    ("index build: ef_construction 0", lambda w: vector_index().build(w["emb"], ef_construction=0),
     r"ef_construction must be >= 1"),
    ("index build: ef_search negative", lambda w: vector_index().build(w["emb"], ef_search=-1),
     r"ef_search must be >= 1"),
    ("index add: a NaN row", lambda w: index(w).add(w["nan"][:5]),
     r"embeddings: row 3 holds NaN"),
    ("index add: another dim", lambda w: index(w).add(np.ones((2, 4))), r"have dim 4, the index 8"),
    ("index add: an id it holds", lambda w: index(w).add(w["emb"][:2], ids=[100, 7]),
     r"ids must be new: the index already holds id 7"),
    ("index add: ids count", lambda w: index(w).add(w["emb"][:2], ids=[100]),
     r"ids must be 2 integers"),
    ("index search: None", lambda w: index(w).search(None), r"query embeddings is None"),
    ("index search: a NaN row", lambda w: index(w).search(w["nan"]),
     r"query embeddings: row 3 holds NaN"),
    ("index search: another dim", lambda w: index(w).search(np.ones((1, 4))),
     r"have dim 4, the index 8"),
    ("index search: 1-D", lambda w: index(w).search(np.ones(8)), r"got shape \(8,\)"),
    ("index search: top_k fractional", lambda w: index(w).search(w["emb"], top_k=2.5),
     r"top_k must be >= 1 \(an integer\), got 2\.5"),
    ("index search: top_k above the index", lambda w: index(w).search(w["emb"], top_k=21),
     r"top_k=21 but the index holds 20"),
    ("index search: ef_search 0", lambda w: index(w).search(w["emb"], ef_search=0),
     r"ef_search must be >= 1"),
    ("index save: None", lambda w: index(w).save(None), r"path must be a file path"),
    ("index save: a directory", lambda w: index(w).save(str(w["tmp"])), r"is a directory"),
    ("index load: None", lambda w: vector_index().load(None), r"path must be a file path"),
    ("index load: missing", lambda w: vector_index().load(str(w["tmp"] / "none.index")),
     r"not found"),
    ("index load: truncated", lambda w: vector_index().load(index_file(
        w, "cut.index", truncate)), r"truncated index file"),
    ("index load: empty file", lambda w: vector_index().load(index_file(
        w, "empty.index", lambda p: p.write_bytes(b""))), r"not a tfbert vector index file"),
    ("index load: another model", lambda w: vector_index().load(index_file(
        w, "same.index", lambda p: None), model="minilm"), r"built from 'tiny' embeddings"),
    ("index load: another dim", lambda w: vector_index().load(index_file(
        w, "same2.index", lambda p: None), dim=384), r"holds dim-8 vectors"),
    ("index load: dim a string", lambda w: vector_index().load(index_file(
        w, "same3.index", lambda p: None), dim="8"), r"dim must be >= 1"),
    # --- semantic_search ---
    ("semantic_search: queries NaN", lambda w: semantic_search(w["nan"], w["emb"]),
     r"query_embeddings: row 3 holds NaN"),
    ("semantic_search: corpus infinite", lambda w: semantic_search(w["emb"], w["inf"]),
     r"corpus_embeddings: row 5 holds NaN or inf"),
    ("semantic_search: rows of mixed dims", lambda w: semantic_search([[1.0, 2.0], [3.0]],
                                                                      w["emb"]),
     r"query_embeddings: row 1 has 1 values"),
    ("semantic_search: top_k 0", lambda w: semantic_search(w["emb"], w["emb"], top_k=0),
     r"top_k must be >= 1"),
    ("semantic_search: top_k fractional", lambda w: semantic_search(w["emb"], w["emb"], top_k=2.5),
     r"got 2\.5"),
    ("semantic_search: chunk size 0", lambda w: semantic_search(w["emb"], w["emb"],
                                                                corpus_chunk_size=0),
     r"corpus_chunk_size must be >= 1"),
    # --- SentenceEncoder.from_pretrained: the bi-encoder's checkpoint, as the cross-encoder's ---
    ("sentence from_pretrained: None", lambda w: SentenceEncoder.from_pretrained(None),
     r"takes a checkpoint directory, got NoneType"),
    ("sentence from_pretrained: seq_length a string", lambda w: SentenceEncoder.from_pretrained(
        w["bi_dir"], seq_length="abc"), r"seq_length must be >= 2 \(an integer or None\)"),
    ("sentence from_pretrained: seq_length 0", lambda w: SentenceEncoder.from_pretrained(
        w["bi_dir"], seq_length=0), r"seq_length must be >= 2.*got 0"),
    ("sentence from_pretrained: config seq_length a string", lambda w: sentence_config(
        w, "se_abc", seq_length="abc"),
     r"config\.json:sentence: seq_length: expected an integer, got 'abc'"),
    ("sentence from_pretrained: config normalize a string", lambda w: sentence_config(
        w, "se_norm", normalize="yes"),
     r"config\.json:sentence: normalize: expected true or false, got 'yes'"),
    ("sentence from_pretrained: config pooling unknown", lambda w: sentence_config(
        w, "se_pool", pooling="max2"), r"config\.json:sentence: pooling: must be one of"),
    ("sentence from_pretrained: config dense_units fractional", lambda w: sentence_config(
        w, "se_dense", dense_units=2.5),
     r"config\.json:sentence: dense_units: expected an integer, got 2\.5"),
    ("sentence from_pretrained: config dense_activation unknown", lambda w: sentence_config(
        w, "se_act", dense_activation="relu"),
     r"config\.json:sentence: dense_activation: must be one of \['tanh', 'linear'\]"),
    # --- encode(..., long_text="windows", truncate_dim=...) ---
    ("encode: texts None", lambda w: w["bi"].encode(None), r"texts is None, not a list"),
    ("encode: truncate_dim 0", lambda w: w["bi"].encode(["a b"], truncate_dim=0),
     r"truncate_dim must be in \[1, 128\]"),
    ("encode: truncate_dim above the dim", lambda w: w["bi"].encode(["a b"], truncate_dim=129),
     r"truncate_dim must be in \[1, 128\].*got 129"),
    ("encode: truncate_dim fractional", lambda w: w["bi"].encode(["a b"], truncate_dim=2.5),
     r"got 2\.5"),
    ("encode: truncate_dim a string", lambda w: w["bi"].encode(["a b"], truncate_dim="64"),
     r"got '64'"),
    ("encode: windows, doc_stride 0", lambda w: w["bi"].encode(
        ["a b"], long_text="windows", doc_stride=0), r"doc_stride must be >= 1"),
    ("encode: windows, doc_overlap a whole window", lambda w: w["bi"].encode(
        ["a b"], long_text="windows", doc_overlap=14), r"doc_overlap must be in \[0, 13\]"),
    ("encode: windows, max_windows 0", lambda w: w["bi"].encode(
        ["a b"], long_text="windows", max_windows=0), r"max_windows must be >= 1"),
    ("encode: windows, max_windows fractional", lambda w: w["bi"].encode(
        ["a b"], long_text="windows", max_windows=2.5), r"got 2\.5"),
    ("encode: long_text unknown", lambda w: w["bi"].encode(["a b"], long_text="chunks"),
     r"long_text must be one of"),
    ("encode: batch_size fractional", lambda w: w["bi"].encode(["a b"], batch_size=2.5),
     r"batch_size must be >= 1 \(an integer\)"),
    # --- encode_corpus (checked before Beam is needed) and its shards ---
    ("encode_corpus: input_file None", lambda w: encode_corpus(
        None, w["ce_export"], str(w["tmp"] / "o")), r"input_file must be a path"),
    ("encode_corpus: output_dir empty", lambda w: encode_corpus(
        w["rows"], w["ce_export"], ""), r"output_dir must be a path"),
    ("encode_corpus: num_shards 0", lambda w: encode_corpus(
        w["rows"], w["ce_export"], str(w["tmp"] / "o"), num_shards=0), r"num_shards must be >= 1"),
    ("encode_corpus: batch_size fractional", lambda w: encode_corpus(
        w["rows"], w["ce_export"], str(w["tmp"] / "o"), batch_size=0.5), r"got 0\.5"),
    ("encode_corpus: an id twice", lambda w: encode_corpus(
        rows_file(w, "dup.jsonl", '{"id": 1, "text": "a"}\n{"id": 1, "text": "b"}\n'),
        w["bi_export"], str(w["tmp"] / "o")), r"dup\.jsonl, line 2: id 1 repeats line 1"),
    ("encode_corpus: an empty text", lambda w: encode_corpus(
        rows_file(w, "empty_text.jsonl", '{"id": 1, "text": " "}\n'), w["bi_export"],
        str(w["tmp"] / "o")), r"empty_text\.jsonl, line 1: 'text' must be a non-empty string"),
    ("encode_corpus: no SavedModel", lambda w: encode_corpus(
        w["rows"], str(w["tmp"]), str(w["tmp"] / "o")), r"No exported SavedModel"),
    ("encode_corpus: another model's export", lambda w: encode_corpus(
        w["rows"], w["ce_export"], str(w["tmp"] / "o")),
     r"not a strings-in embedding model.*\['passage', 'query'\]"),
    ("encode_corpus: truncated saved_model.pb", lambda w: encode_corpus(
        w["rows"], changed_copy(w, "cut_export", w["ce_export"],
                                lambda d: truncate(d / "saved_model.pb")), str(w["tmp"] / "o")),
     r"saved_model\.pb: truncated or not a SavedModel"),
    ("read_embedding_shards: None", lambda w: read_embedding_shards(None), r"takes a directory"),
    ("read_embedding_shards: no manifest", lambda w: read_embedding_shards(str(w["tmp"])),
     r"manifest\.json missing"),
    ("read_embedding_shards: truncated manifest", lambda w: shards(
        w, "cut_manifest", lambda d: truncate(d / "manifest.json")),
     r"manifest\.json: truncated or not an encode_corpus manifest"),
    ("read_embedding_shards: truncated shard", lambda w: shards(
        w, "cut_shard", lambda d: truncate(d / "embeddings-00001-of-00002.npz")),
     r"embeddings-00001-of-00002\.npz: truncated or corrupted"),
    ("read_embedding_shards: shards of two models", lambda w: shards(
        w, "two_dims", lambda d: np.savez(d / "embeddings-00001-of-00002.npz", ids=np.array([2, 3]),
                                          embeddings=np.ones((2, 5), np.float32))),
     r"dim-5 embeddings, the first shard's are dim 3"),
]


@pytest.mark.parametrize("name,action,pattern", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_one_line_from_tfbert(w, raises_one_line_from_tfbert, name, action,
                                             pattern):
    raises_one_line_from_tfbert(name, lambda: action(w), pattern)


def test_every_call_of_the_issue_is_swept():
    calls = {name.split(":")[0] for name, _, _ in CASES}
    assert {"from_pretrained", "sentence from_pretrained", "predict", "rank", "export", "rerank",
            "mine", "quantize",
            "quantized_search", "index build", "index add", "index search", "index save",
            "index load", "semantic_search", "encode", "encode_corpus",
            "read_embedding_shards"} <= calls
    assert len({c[0] for c in CASES}) == len(CASES)


def test_nothing_was_written_by_the_refused_exports(w):
    # The refused exports must not have replaced or left anything: the checkpoint's
    # config.json is still a file, and no export directory appeared.
    assert (pathlib.Path(w["ce_dir"]) / "config.json").is_file()
    assert not (w["tmp"] / "x").exists()


def test_a_real_embedding_export_passes_the_checks(w):
    """The checks refuse only what they should: a strings-in embedding export of
    the tiny model gets past them (to Beam, or to the missing-Beam line)."""
    export = w["bi_export"]
    try:
        import apache_beam  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs Apache Beam"):
            encode_corpus(w["rows"], export, str(w["tmp"] / "emb"))
        return
    manifest = encode_corpus(w["rows"], export, str(w["tmp"] / "emb"), num_shards=1)
    assert manifest["count"] == len(TEXTS)
