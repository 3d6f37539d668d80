"""Corpus embeddings with Apache Beam's RunInference, for corpora beyond one machine.

    pip install -e ".[beam]"
    encode_corpus("passages.jsonl", "runs/sbert/export/1", "embeddings/",
                  runner="DirectRunner", beam_pipeline_options="--direct_running_mode="
                  "multi_processing --direct_num_workers=2")
    ids, embeddings = read_embedding_shards("embeddings/")
    index = tfbert.retrieval.index.VectorIndex.build(embeddings, ids=ids)

Input: JSONL rows `{"id": int, "text": str}` (ids distinct). The model: the
strings-in embedding SavedModel that `--task=sentence_embedding` exports
(`serving_default(text) -> embedding`), run by Beam's `RunInference` with its
TensorFlow model handler (`TFModelHandlerTensor`, loading the SavedModel with
the tokenizer ops registered). The pipeline:

    rows -> GroupByKey into batches of about `batch_size` texts
         -> RunInference (one pre-cut batch per model call: `with_no_batching`,
            since Beam 2.77's DaskRunner loses elements in BatchElements, which
            RunInference's own batching is)
         -> GroupByKey into `num_shards` shards -> `embeddings-SSSSS-of-NNNNN.npz`
            (`ids` int64 `[n]`, `embeddings` float32 `[n, dim]`)

Every input is accounted for: after the run the shards are read back and
their ids compared with the input's; a missing or repeated id fails the run
with one line naming the runner and the counts, and the output directory is
left as it was (the shards are written to a temporary directory and renamed
into place, `tfbert.atomic.atomic_dir`). `manifest.json` records the
counts, the dimension and the model.

Runners: DirectRunner (in process, or `--direct_running_mode=multi_processing
--direct_num_workers=N`), DaskRunner (`dask_address=` a `dask.distributed`
scheduler; pass `--dask_npartitions=<workers>` in `beam_pipeline_options`:
each Dask partition loads the model once, and without it every batch is its
own partition: 600 texts took 201 s on 2 workers, 35 s with 2 partitions),
and any other Beam runner by name. The rows are read by the driver (which
checks the ids afterwards); the shards are written by the workers to
`output_dir`: on a cluster, a path every worker can write.
"""

import glob
import json
import os
import uuid
import zipfile

import numpy as np

try:
    import apache_beam as beam
except ImportError:  # the module imports without Beam; running it says what to install
    beam = None

from tfbert.config_loader import check_int
from tfbert.data.beam_runner import DataLossError, pipeline_options, run_to_completion, runner_label
from tfbert.data.readers import jsonl_rows

MANIFEST = "manifest.json"
SHARD = "embeddings-{:05d}-of-{:05d}.npz"


def read_rows(path):
    """`(ids, texts)` of a JSONL file of `{"id": int, "text": str}` rows;
    errors name the file and line."""
    ids, texts, seen = [], [], {}
    for n, row in jsonl_rows(path):
        i, text = row.get("id"), row.get("text")
        if isinstance(i, bool) or not isinstance(i, int):
            raise ValueError(f"{path}, line {n}: 'id' must be an integer, got {i!r:.40}.")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{path}, line {n}: 'text' must be a non-empty string.")
        if i in seen:
            raise ValueError(f"{path}, line {n}: id {i} repeats line {seen[i]}.")
        seen[i] = n
        ids.append(i)
        texts.append(text)
    if not ids:
        raise ValueError(f"{path}: no rows.")
    return ids, texts


def read_embedding_shards(directory):
    """`(ids int64 [n], embeddings float32 [n, dim])` of the shards in `directory`,
    in shard order; checked against its manifest (count, dim, distinct ids)."""
    if not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"read_embedding_shards takes a directory, got {type(directory).__name__}.")
    manifest_path = os.path.join(directory, MANIFEST)
    if not os.path.isfile(manifest_path):
        raise FileNotFoundError(f"No embedding shards at {directory} ({MANIFEST} missing).")
    try:
        with open(manifest_path, encoding="utf-8") as f:
            manifest = json.load(f)
        int(manifest["num_shards"]), int(manifest["count"]), int(manifest["dim"])
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"{manifest_path}: truncated or not an encode_corpus manifest (needs "
                         "num_shards, count and dim).") from None
    paths = sorted(glob.glob(os.path.join(directory, "embeddings-*-of-*.npz")))
    if len(paths) != manifest["num_shards"]:
        raise ValueError(f"{directory}: {len(paths)} shard files, the manifest lists "
                         f"{manifest['num_shards']}.")
    ids, embeddings = _read_shards(paths)
    if len(ids) != manifest["count"] or embeddings.shape[1:] != (manifest["dim"],):
        raise ValueError(f"{directory}: the shards hold {len(ids)} x {embeddings.shape[1:]}, "
                         f"the manifest says {manifest['count']} x {manifest['dim']}.")
    return ids, embeddings


def _read_shards(paths):
    ids, embeddings = [], []
    for path in paths:
        try:
            with np.load(path) as shard:
                ids.append(shard["ids"])
                embeddings.append(shard["embeddings"])
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            raise ValueError(f"{path}: truncated or corrupted embedding shard (an .npz with "
                             "ids and embeddings).") from None
        if embeddings[-1].ndim != 2 or len(embeddings[-1]) != len(ids[-1]):
            raise ValueError(f"{path}: {len(ids[-1])} ids for embeddings of shape "
                             f"{embeddings[-1].shape}.")
        if embeddings and embeddings[-1].shape[1:] != embeddings[0].shape[1:]:
            raise ValueError(f"{path}: dim-{embeddings[-1].shape[1]} embeddings, the first "
                             f"shard's are dim {embeddings[0].shape[1]} (shards of two models?).")
    if not ids:
        return np.zeros(0, np.int64), np.zeros((0, 0), np.float32)
    return np.concatenate(ids).astype(np.int64), np.concatenate(embeddings).astype(np.float32)


# === The pipeline ===

def _check_embedding_export(export_dir):
    """One line unless `export_dir` holds a strings-in embedding SavedModel
    (`serving_default(text) -> embedding`), read from saved_model.pb alone."""
    from google.protobuf.message import DecodeError
    from tensorflow.core.protobuf import saved_model_pb2

    path = os.path.join(export_dir, "saved_model.pb")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No exported SavedModel at {export_dir} (saved_model.pb "
                                "missing); export one with --task=sentence_embedding.")
    model = saved_model_pb2.SavedModel()
    try:
        with open(path, "rb") as f:
            model.ParseFromString(f.read())
    except DecodeError:
        raise ValueError(f"{path}: truncated or not a SavedModel.") from None
    signatures = model.meta_graphs[0].signature_def if model.meta_graphs else {}
    serving = signatures.get("serving_default")
    inputs = sorted(serving.inputs) if serving is not None else []
    outputs = sorted(serving.outputs) if serving is not None else []
    if inputs != ["text"] or "embedding" not in outputs:
        raise ValueError(f"{export_dir} is not a strings-in embedding model: its serving_default "
                         f"takes {inputs} and gives {outputs}, not text -> embedding; export one "
                         "with --task=sentence_embedding.")


def _require_beam():
    if beam is None:
        raise ImportError("encode_corpus needs Apache Beam: pip install -e \".[beam]\" (or pip "
                          "install apache-beam).")


def _model_handler(export_dir):
    """Beam's TensorFlow model handler for the strings-in SavedModel, keyed by
    id, taking pre-cut batches (`with_no_batching`: no BatchElements)."""
    from apache_beam.ml.inference.base import KeyedModelHandler, PredictionResult
    from apache_beam.ml.inference.tensorflow_inference import TFModelHandlerTensor

    class StringsModelHandler(TFModelHandlerTensor):
        def load_model(self):
            # Keras 3 cannot load a SavedModel with `tf.keras.models.load_model` (the
            # handler's default); the tokenizer ops must be registered first.
            import tensorflow as tf
            import tensorflow_text  # noqa: F401

            return tf.saved_model.load(self._model_uri)

    def inference_fn(model, batch, inference_args, model_id=None):
        import tensorflow as tf

        texts = list(batch)  # one pre-cut batch of strings: one model call
        embeddings = model.signatures["serving_default"](text=tf.constant(texts))["embedding"]
        return [PredictionResult(t, e, model_id) for t, e in zip(texts, embeddings.numpy())]

    return KeyedModelHandler(StringsModelHandler(export_dir, inference_fn=inference_fn)
                             ).with_no_batching()


class _Embed(beam.PTransform if beam is not None else object):
    """Batches `(key, [(id, text)])` -> `(id, embedding float32 [dim])` per text."""

    def __init__(self, export_dir):
        super().__init__()
        self.export_dir = export_dir

    def expand(self, batches):
        from apache_beam.ml.inference.base import RunInference

        return (batches
                | "Rows" >> beam.Map(lambda item: sorted(item[1]))
                | "RunInference" >> RunInference(_model_handler(self.export_dir))
                | "Unpack" >> beam.Map(lambda kv: (int(kv[0]),
                                                   np.asarray(kv[1].inference, np.float32))))


def _write_shard(item, directory, num_shards):
    shard, rows = item
    rows = sorted(rows, key=lambda row: row[0])
    ids = np.array([i for i, _ in rows], np.int64)
    emb = np.stack([e for _, e in rows]).astype(np.float32)
    path = os.path.join(directory, SHARD.format(shard, num_shards))
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:8]}.npz"
    np.savez(tmp, ids=ids, embeddings=emb)
    os.replace(tmp, path)
    yield len(ids)


def encode_corpus(input_file, export_dir, output_dir, runner="DirectRunner",
                  beam_pipeline_options="", dask_address="", num_shards=4, batch_size=64,
                  between=None, model_name=""):
    """Embeds the rows of `input_file` with the SavedModel `export_dir` on
    Beam, writes the shards to `output_dir` (atomically, after checking that
    every id came back once); returns the manifest dict. `between`: an
    optional PTransform applied to the batches before inference (tests use it
    to simulate a lossy runner)."""
    from tfbert.atomic import atomic_dir, check_replaceable

    # Everything checked before Beam starts (and before Beam is needed): a bad argument,
    # file or model is one line here, not a worker's traceback.
    for name, value in (("input_file", input_file), ("export_dir", export_dir),
                        ("output_dir", output_dir)):
        if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
            raise TypeError(f"{name} must be a path, got {value!r:.40}.")
    num_shards = check_int(num_shards, "num_shards", 1)
    batch_size = check_int(batch_size, "batch_size", 1)
    if not isinstance(runner, str) or not runner:
        raise TypeError(f"runner must be a Beam runner name (e.g. 'DirectRunner'), got {runner!r:.40}.")
    check_replaceable(output_dir)
    _check_embedding_export(export_dir)
    ids, texts = read_rows(input_file)
    _require_beam()
    num_batches = max(1, -(-len(ids) // int(batch_size)))
    runner_obj, options = pipeline_options(runner, beam_pipeline_options, dask_address)
    label = runner_label(runner, options)
    rows = list(zip(ids, texts))
    with atomic_dir(output_dir) as tmp:
        pipeline = beam.Pipeline(runner=runner_obj, options=options)
        batches = (pipeline
                   | "Rows" >> beam.Create(rows)
                   | "BatchKey" >> beam.Map(lambda row: (row[0] % num_batches, row))
                   | "Batch" >> beam.GroupByKey())
        if between is not None:
            batches = batches | "Between" >> between
        _ = (batches
             | "Embed" >> _Embed(export_dir)
             | "ShardKey" >> beam.Map(lambda row: (row[0] % num_shards, row))
             | "Shard" >> beam.GroupByKey()
             | "Write" >> beam.FlatMap(_write_shard, tmp, num_shards))
        run_to_completion(pipeline)
        paths = sorted(glob.glob(os.path.join(tmp, "embeddings-*-of-*.npz")))
        got_ids, embeddings = _read_shards(paths)
        check_ids(ids, got_ids, label)
        # Shards that got no batch are written empty, so every index 0..N-1 exists.
        for shard in range(num_shards):
            path = os.path.join(tmp, SHARD.format(shard, num_shards))
            if not os.path.exists(path):
                np.savez(path, ids=np.zeros(0, np.int64),
                         embeddings=np.zeros((0, embeddings.shape[1]), np.float32))
        manifest = {"count": len(got_ids), "dim": int(embeddings.shape[1]),
                    "num_shards": int(num_shards), "runner": label, "input": input_file,
                    "model": model_name or os.path.abspath(export_dir)}
        with open(os.path.join(tmp, MANIFEST), "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=2)
    return manifest


def check_ids(want, got, label):
    """One-line `DataLossError` unless `got` holds every id of `want` exactly once.

    >>> check_ids([1, 2, 3], np.array([3, 1, 2]), "DirectRunner")
    >>> check_ids([1, 2, 3], np.array([3, 1, 1]), "DaskRunner")
    Traceback (most recent call last):
    ...
    tfbert.data.beam_runner.DataLossError: Beam's DaskRunner lost data: 3 texts in, 3 embeddings out; 1 ids missing (first [2]), 1 repeated (first [1]); the output directory was left as it was.
    """
    want = np.asarray(want, np.int64)
    values, counts = np.unique(got, return_counts=True)
    missing = np.setdiff1d(want, values)
    repeated = values[counts > 1]
    extra = np.setdiff1d(values, want)
    if len(missing) or len(repeated) or len(extra):
        parts = []
        if len(missing):
            parts.append(f"{len(missing)} ids missing (first {missing[:3].tolist()})")
        if len(repeated):
            parts.append(f"{len(repeated)} repeated (first {repeated[:3].tolist()})")
        if len(extra):
            parts.append(f"{len(extra)} not in the input (first {extra[:3].tolist()})")
        raise DataLossError(f"Beam's {label} lost data: {len(want)} texts in, {len(got)} "
                            f"embeddings out; {', '.join(parts)}; the output directory was "
                            "left as it was.")
