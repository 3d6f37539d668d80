"""Corpus embeddings with Beam's RunInference (TensorFlow model handler) running the
exported strings-in embedding SavedModel: DirectRunner in multi-processing mode (2
workers) and the DaskRunner on a real 2-worker dask.distributed LocalCluster. Every id
comes back exactly once, the embeddings equal `encode()` within 1e-5, the index builder
reads the shards, and a lossy run fails with one line and leaves the output as it was.

Needs the beam extra (.ci/run installs it); skipped without apache-beam."""

import json

import numpy as np
import pytest

beam = pytest.importorskip("apache_beam")

from tfbert import BertConfig, BertEncoder  # noqa: E402
from tfbert.retrieval.corpus_encoding import DataLossError, encode_corpus, read_embedding_shards  # noqa: E402

VOCAB = "tests/data/pretraining/vocab.txt"
RUNNERS = {
    "DirectRunner multi_processing": dict(
        runner="DirectRunner",
        beam_pipeline_options="--direct_running_mode=multi_processing --direct_num_workers=2"),
    # One Dask partition per worker: each partition loads the model once (the
    # pretraining pipeline's default, one element per partition, loads it per batch).
    "DaskRunner": dict(runner="DaskRunner", beam_pipeline_options="--dask_npartitions=2"),
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(the SentenceEncoder, its strings-in SavedModel) of a tiny random encoder."""
    from tfbert.tasks.sentence_embedding import SentenceEmbeddingTask
    from tfbert.text.preprocessor import BertPreprocessor

    task = SentenceEmbeddingTask({"seq_length": 32}).prepare(
        BertPreprocessor(vocab_file=VOCAB, seq_length=32))
    model = task.build_model(BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931,
                                                                 num_layers=1)))
    export = str(tmp_path_factory.mktemp("export") / "1")
    task.export(model, export)
    return model, export


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """600 real docstring passages with sparse ids."""
    from tfbert.datasets.docstring_pairs import docstring_pairs

    texts = [p for _, _, p in docstring_pairs()[:600]]
    ids = [1000 + 7 * i for i in range(len(texts))]
    path = tmp_path_factory.mktemp("corpus") / "passages.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts)))
    return str(path), ids, texts


@pytest.mark.parametrize("runner", list(RUNNERS))
def test_every_text_once_and_equal_to_encode(runner, exported, corpus, tmp_path, request):
    model, export = exported
    path, ids, texts = corpus
    options = dict(RUNNERS[runner])
    if runner == "DaskRunner":
        options["dask_address"] = request.getfixturevalue("dask_address")
    manifest = encode_corpus(path, export, str(tmp_path / "emb"), num_shards=3, batch_size=50,
                             **options)
    assert manifest["count"] == 600 and manifest["num_shards"] == 3
    got_ids, embeddings = read_embedding_shards(str(tmp_path / "emb"))
    assert sorted(got_ids.tolist()) == ids
    want = model.encode(texts)
    order = {i: k for k, i in enumerate(ids)}
    diff = np.abs(embeddings - want[[order[i] for i in got_ids]]).max()
    assert diff <= 1e-5, diff
    faiss = pytest.importorskip("faiss")  # noqa: F841
    from tfbert.retrieval.index import VectorIndex

    index = VectorIndex.from_shards(str(tmp_path / "emb"))
    hit = index.search(want[[5]], top_k=1)[0][0]
    assert hit["corpus_id"] == ids[5]


def test_a_lossy_run_fails_and_keeps_the_earlier_output(exported, corpus, tmp_path):
    _, export = exported
    path, ids, _ = corpus
    out = str(tmp_path / "emb")
    encode_corpus(path, export, out, num_shards=2, batch_size=100)
    before = sorted(p.name for p in (tmp_path / "emb").iterdir())
    drop_one_batch = beam.Filter(lambda batch: batch[0] != 0)
    with pytest.raises(DataLossError) as e:
        encode_corpus(path, export, out, num_shards=2, batch_size=100, between=drop_one_batch)
    message = str(e.value)
    assert "\n" not in message and message.startswith("Beam's DirectRunner lost data: 600 "
                                                      "texts in, 500 embeddings out")
    assert sorted(p.name for p in (tmp_path / "emb").iterdir()) == before
    assert len(read_embedding_shards(out)[0]) == 600


def test_bad_input_is_one_clear_line(exported, tmp_path):
    _, export = exported
    rows = tmp_path / "rows.jsonl"
    for text, message in (('{"id": 1, "text": ""}', "line 1: 'text' must be a non-empty"),
                          ('{"id": "a", "text": "x"}', "line 1: 'id' must be an integer"),
                          ('{"id": 1, "text": "x"}\n{"id": 1, "text": "y"}',
                           "line 2: id 1 repeats line 1"),
                          ('{"id": 1, "text": "x"}\n{"id": 2,', "line 2: not valid JSON"),
                          ('[1, "x"]', "line 1: expected a JSON object, got list")):
        rows.write_text(text + "\n")
        with pytest.raises(ValueError, match=message) as e:
            encode_corpus(str(rows), export, str(tmp_path / "out"))
        assert "\n" not in str(e.value)
    with pytest.raises(FileNotFoundError, match="No exported SavedModel"):
        encode_corpus(str(rows), str(tmp_path), str(tmp_path / "out"))
