"""TF Serving warmup requests: an XLA export carries one `serving_ids`
request per compiled shape, and replaying them (as TF Serving does at load)
compiles every program that `serving_default` then needs."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tfbert.export.compiled_call import compiled_call
from tfbert.export.warmup import WARMUP_FILE, read_warmup_requests, write_warmup_requests
from tfbert.models.sentence_encoder import SentenceEncoder
from tfbert.tasks.sentence_embedding import SentenceEmbeddingTask


def embedding_export(encoder, vocab_file, path, jit_compile, seq_length=32):
    from tfbert.text.preprocessor import BertPreprocessor

    model = SentenceEncoder(encoder, pooling="mean",
                            preprocessor=BertPreprocessor(vocab_file=vocab_file,
                                                          seq_length=seq_length))
    task = SentenceEmbeddingTask().prepare(model.preprocessor)
    return task.export(model, str(path), jit_compile=jit_compile)


def test_shapes_are_the_buckets_under_the_token_bound(encoder):
    call = compiled_call(encoder, jit_compile=True, max_tokens=64)
    assert call.shapes(32) == [(1, 16), (1, 24), (1, 32), (2, 16), (2, 24), (2, 32), (4, 16)]
    assert call.shapes(20) == [(1, 16), (2, 16), (4, 16)]  # widths up to seq_length only
    assert compiled_call(encoder, jit_compile=False).shapes(32) == []


def test_requests_round_trip_and_nothing_is_written_without_shapes(tmp_path):
    path = write_warmup_requests(str(tmp_path), [(1, 16), (4, 24)], "serving_ids")
    assert path == os.path.join(str(tmp_path), WARMUP_FILE)
    requests = read_warmup_requests(str(tmp_path))
    assert [name for name, _ in requests] == ["serving_ids", "serving_ids"]
    assert [inputs["input_mask"].shape for _, inputs in requests] == [(1, 16), (4, 24)]
    for _, inputs in requests:
        assert sorted(inputs) == ["input_mask", "input_type_ids", "input_word_ids"]
        assert all(v.dtype == np.int32 for v in inputs.values())
        assert (inputs["input_mask"] == 1).all() and (inputs["input_type_ids"] == 0).all()
    assert write_warmup_requests(str(tmp_path / "none"), [], "serving_ids") is None
    assert not (tmp_path / "none").exists()


def test_a_file_that_is_not_warmup_requests_is_one_line(tmp_path):
    path = tmp_path / WARMUP_FILE
    path.parent.mkdir()
    path.write_text("these are not TFRecords\n")
    with pytest.raises(ValueError, match=r"tf_serving_warmup_requests: not a TF Serving "
                                         r"warmup file \(record 0: DataLossError\)$"):
        read_warmup_requests(str(tmp_path))
    with tf.io.TFRecordWriter(str(path)) as writer:  # TFRecords, but not PredictionLogs
        writer.write(b"\xff\xff\xff")
    with pytest.raises(ValueError, match=r"not a TF Serving warmup file \(record 0: "
                                         r"DecodeError\)$"):
        read_warmup_requests(str(tmp_path))


def test_xla_exports_carry_the_requests_and_default_exports_none(encoder, uncased_vocab_file,
                                                                 tmp_path):
    plain = embedding_export(encoder, uncased_vocab_file, tmp_path / "plain", False)
    assert read_warmup_requests(plain) == []
    assert not os.path.exists(os.path.join(plain, "assets.extra"))
    xla = embedding_export(encoder, uncased_vocab_file, tmp_path / "xla", True)
    shapes = [inputs["input_mask"].shape for _, inputs in read_warmup_requests(xla)]
    assert shapes == compiled_call(encoder, jit_compile=True).shapes(32)
    assert (1, 32) in shapes and (16, 32) in shapes and (32, 16) in shapes
    assert not [p for p in os.listdir(tmp_path) if p not in ("plain", "xla")]  # no temp dirs


REPLAY = """
import glob, json, os
import tensorflow as tf
from tfbert.export.task_model import load_task_model
from tfbert.export.warmup import read_warmup_requests
path, dump = json.loads(ARGS)
signatures = load_task_model(path).signatures
programs = lambda: len(glob.glob(os.path.join(dump, "*before_optimizations.txt")))
for name, inputs in read_warmup_requests(path):  # what TF Serving does at load
    signatures[name](**{k: tf.constant(v) for k, v in inputs.items()})
counts = [programs()]
texts = ["a short text", "the file is opened and read to the end of the stream " * 2,
         "one", "the mail is written", "a lock", "it returns a value", "time", "a list"]
for batch in (1, 3, 8):  # real requests of several widths: nothing new compiles
    signatures["serving_default"](text=tf.constant(texts[:batch]))
counts.append(programs())
ids = tf.ones([1, 40], tf.int32)  # 40 columns: the 48 bucket, over seq_length, not warmed
signatures["serving_ids"](input_word_ids=ids, input_mask=ids, input_type_ids=ids * 0)
counts.append(programs())
print(json.dumps(counts))
"""


@pytest.mark.slow
def test_replayed_requests_compile_what_serving_default_needs(encoder, uncased_vocab_file,
                                                              tmp_path, run_python):
    xla = embedding_export(encoder, uncased_vocab_file, tmp_path / "xla", True)
    dump = str(tmp_path / "dump")
    counts = json.loads(run_python(f"ARGS = {json.dumps(json.dumps([xla, dump]))}\n" + REPLAY,
                                   env={"XLA_FLAGS": f"--xla_dump_to={dump}"}
                                   ).strip().splitlines()[-1])
    warmed = len(read_warmup_requests(xla))
    assert counts[0] >= warmed
    assert counts[1] == counts[0]  # serving_default shares the warmed programs
    assert counts[2] == counts[1] + 1  # the counter sees a shape that was not warmed
