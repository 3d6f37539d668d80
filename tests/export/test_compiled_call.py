"""`compiled_call`: the XLA call equals the plain one at every batch size and
width, compiles a bounded set of shapes, and task exports with
`jit_compile=True` load in a fresh process and answer as the default export."""

import json

import numpy as np
import pytest
import tensorflow as tf

from tfbert.export.compiled_call import compiled_call
from tfbert.export.op_check import check_op_rule
from tfbert.models.sentence_encoder import SentenceEncoder
from tfbert.tasks.classification import ClassificationConfig, ClassificationTask
from tfbert.tasks.feature_extraction import FeatureExtractionConfig, FeatureExtractionTask
from tfbert.tasks.question_answering import QuestionAnsweringConfig, QuestionAnsweringTask
from tfbert.tasks.sentence_embedding import SentenceEmbeddingTask
from tfbert.tasks.tagging import TaggingConfig, TaggingTask

# Slow: 2-3 minutes of in-process XLA compiles and exports. (It was marked
# when a later real-SIGTERM test segfaulted the suite's process; those tests
# now run in a fresh interpreter, tests/train/test_callbacks.py.)
pytestmark = pytest.mark.slow


def packed(lengths, width, seed=0):
    """Encoder inputs: rows of `lengths` real tokens, left-aligned, `width` wide."""
    rng = np.random.default_rng(seed)
    ids = np.zeros([len(lengths), width], np.int32)
    types = np.zeros_like(ids)
    for i, n in enumerate(lengths):
        ids[i, :n] = rng.integers(1000, 5000, n)
        types[i, n // 2:n] = 1
    mask = (ids > 0).astype(np.int32)
    return {"input_word_ids": tf.constant(ids), "input_mask": tf.constant(mask),
            "input_type_ids": tf.constant(types)}


def check_equal(got, want):
    """Same structure, shapes and values (padding positions too: padding
    never changes a token, and every input position is computed)."""
    tf.nest.assert_same_structure(got, want)
    for g, w in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
        assert g.shape == w.shape
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-5)


@pytest.mark.parametrize("lengths,width", [
    ([5], 16),                          # batch 1, a bucket width
    ([3, 30, 17], 30),                  # batch 3 runs as 4 rows; 30 columns as 32
    ([9, 2, 12, 7, 10, 3, 11, 5], 12),  # batch 8; 12 columns run as 16
    ([60, 4], 70),                      # 70 columns as 96
])
def test_compiled_equals_plain(encoder, lengths, width):
    inputs = packed(lengths, width)
    want = encoder(inputs, training=False)  # dict: pooled, per-position, list of layers
    call = compiled_call(encoder, jit_compile=True, max_tokens=10_000)
    check_equal(call(inputs), want)
    assert call.compiled_function.experimental_get_tracing_count() == 1  # XLA ran it


def test_large_batches_run_the_plain_graph(encoder):
    call = compiled_call(encoder, jit_compile=True, max_tokens=64)
    inputs = packed([5, 9, 3], 24)  # 4 rows x 24 columns = 96 > 64
    check_equal(call(inputs), encoder(inputs, training=False))
    assert call.compiled_function.experimental_get_tracing_count() == 0
    call(packed([5], 24))  # 1 x 24: XLA
    assert call.compiled_function.experimental_get_tracing_count() == 1


def test_plain_is_the_model_call(encoder):
    call = compiled_call(encoder, jit_compile=False)
    inputs = packed([4, 7], 10)
    assert call.compiled_function is None
    np.testing.assert_array_equal(call(inputs)["sequence_output"],
                                  encoder(inputs, training=False)["sequence_output"])


def test_jit_compile_takes_a_bool_only(encoder):
    """Issue 66: jit_compile="no" (truthy) once compiled every export under XLA."""
    with pytest.raises(TypeError, match=r"^jit_compile must be True or False, got 'no'\.$"):
        compiled_call(encoder, "no")


def test_bounded_shapes(encoder):
    call = compiled_call(encoder, jit_compile=True, max_tokens=10_000)
    fn = call.compiled_function
    for batch in (5, 6, 7, 8):  # all run as 8 rows of the 16-column bucket
        call(packed([3 + i for i in range(batch)], 14, seed=batch))
    assert fn.experimental_get_tracing_count() == 1
    call(packed([20], 20))  # 1 row, 24 columns: a second shape
    call(packed([9], 24))  # the same shape from another input width
    call(packed([10], 12))  # 1 row, 16 columns: a third
    assert fn.experimental_get_tracing_count() == 3


def test_padding_rows_change_nothing(encoder):
    """All-padding rows (the compiled batch's filler, or sent by a client) give
    finite outputs and leave the real rows as they are."""
    call = compiled_call(encoder, jit_compile=True, max_tokens=10_000)
    got = call(packed([6, 0, 11], 16))  # the middle row is all padding
    assert all(np.isfinite(t.numpy()).all() for t in tf.nest.flatten(got))
    alone = call(packed([6], 16))
    np.testing.assert_allclose(got["pooled_output"][0], alone["pooled_output"][0], atol=1e-5)
    empty = call(packed([], 16))
    assert empty["pooled_output"].shape == (0, 128)


# === Task exports with jit_compile=True, in a fresh process ===

TEXT = ["The pasta was superb !", "Angela Merkel visited Ürgüp , didn't she?", "ok"]
TEXT_B = ["I loved it .", "Yes .", "Fine"]
CONTEXT = ("Least-recently-used cache decorator. If maxsize is set to None, the LRU features are "
           "disabled and the cache can grow without bound. The module was written by Bob "
           "Ippolito in 東京都 for the standard library.")
INPUTS = {"pairs": {"text": TEXT, "text_b": TEXT_B}, "tagging": {"text": TEXT},
          "features": {"text": TEXT}, "embedding": {"text": TEXT},
          "squad": {"question": ["Who wrote the module?", "What is it?", ""],
                    "context": [CONTEXT, CONTEXT[:40], "Arguments must be hashable."]}}

FRESH = """
import glob, json, os
import tensorflow as tf
from tfbert.export.task_model import load_task_model
paths, inputs, ids = json.loads(INPUT)
sigs = {name: load_task_model(path).signatures for name, path in paths.items()}
# XLA compiles per concrete shape (the exported function sees unknown ones):
# batches 3 and 4 run as 4 rows, 2 as 2, all in the 16-column bucket; 100
# (128 rows x 16 columns) is over XLA_MAX_TOKENS (512): the plain graph.
programs = lambda: len(glob.glob(os.path.join(DUMP, "*before_optimizations.txt")))
counts = []
for batch in (3, 4, 2, 100) if "embedding" in sigs else ():
    sigs["embedding"]["serving_default"](text=tf.constant(["a short text"] * batch))
    counts.append(programs())
out = {"programs": counts}
for name, sig in sigs.items():
    res = sig["serving_default"](**{k: tf.constant(v) for k, v in inputs[name].items()})
    res.update({"ids_" + k: v for k, v in sig["serving_ids"](
        **{k: tf.constant(v, tf.int32) for k, v in ids.items()}).items()})
    out[name] = {k: [s.decode() for s in v.numpy().ravel()] if v.dtype == tf.string
                 else v.numpy().tolist() for k, v in res.items()}
print(json.dumps(out))
"""


def export_tasks(names, root, vocab_file, encoder):
    """{name: (task, model, XLA export path)} (export_task_model checks the op rule)."""
    from tfbert.text.preprocessor import BertPreprocessor

    pre = lambda n: BertPreprocessor(vocab_file=vocab_file, seq_length=n)

    def build(name):
        if name == "pairs":
            task = ClassificationTask(ClassificationConfig(
                label_list=["neg", "pos"], text_b_column="b", seq_length=24)).prepare(pre(24))
        elif name == "tagging":
            task = TaggingTask(TaggingConfig(label_list=["O", "B-PER", "I-PER"], seq_length=12)
                               ).prepare(pre(12))
        elif name == "features":
            task = FeatureExtractionTask(FeatureExtractionConfig(layers=(-2, -1), seq_length=20)
                                         ).prepare(pre(20))
        elif name == "squad":
            task = QuestionAnsweringTask(QuestionAnsweringConfig(
                seq_length=32, doc_stride=8, max_query_length=8, version_2=True)).prepare(pre(32))
        else:
            sentence = SentenceEncoder(encoder, pooling="mean", preprocessor=pre(32))
            return SentenceEmbeddingTask().prepare(sentence.preprocessor), sentence
        return task, task.build_model(encoder)

    exported = {}
    for name in names:
        task, model = build(name)
        exported[name] = (task, model, task.export(model, str(root / name), jit_compile=True))
    return exported


def default_outputs(name, task, model, ids):
    """What the default export's two signatures compute (the same task functions, eagerly)."""
    texts = {k: tf.constant(v) for k, v in INPUTS[name].items()}
    if name == "pairs":
        out = task.outputs(model(task.encode(texts), training=False))
        ids_out = task.outputs(model(ids, training=False))
    elif name == "tagging":
        out = task.tag_text(model, texts["text"])
        logits = model(ids, training=False)
        ids_out = {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1),
                   "tag_ids": tf.argmax(logits, axis=-1, output_type=tf.int32)}
    elif name == "features":
        out, ids_out = task.outputs(model, task.encode(texts)), task.outputs(model, ids)
    elif name == "squad":
        out = task.answer_function(model)(texts["question"], texts["context"])
        ids_out = model(ids, training=False)
    else:
        out = {"embedding": model.embed_text(texts["text"])}
        ids_out = {"embedding": model(ids, training=False)}
    out.update({"ids_" + k: v for k, v in ids_out.items()})
    return {k: [s.decode() for s in v.numpy().ravel()] if v.dtype == tf.string else v.numpy()
            for k, v in out.items()}


def check_fresh_process(exported, run_python, vocab_file, dump):
    """Loads the XLA exports in a fresh process; their answers equal the
    default export's (the same task functions, run here without XLA)."""
    from tfbert.text.preprocessor import BertPreprocessor

    ids = BertPreprocessor(vocab_file=vocab_file, seq_length=10)(tf.constant(TEXT))
    paths = {name: path for name, (_, _, path) in exported.items()}
    plain_ids = {k: v.numpy().tolist() for k, v in ids.items()}
    source = (f"INPUT = {json.dumps(json.dumps([paths, INPUTS, plain_ids]))}\n"
              f"DUMP = {dump!r}\n" + FRESH)
    out = json.loads(run_python(source, env={"XLA_FLAGS": f"--xla_dump_to={dump}"}
                                ).strip().splitlines()[-1])
    counts = out.pop("programs")
    if "embedding" in exported:
        assert counts[0] >= 1 and counts[1] == counts[0]  # none new for 4 rows
        assert counts[2] == counts[3] == counts[0] + 1  # 2 rows: one more; 100: plain graph
    for name, (task, model, path) in exported.items():
        assert "FastWordpieceTokenizeWithOffsets" in check_op_rule(path)
        want = default_outputs(name, task, model, ids)
        got = out[name]
        assert sorted(got) == sorted(want), name
        for key, w in want.items():
            if isinstance(w, list):  # strings
                assert got[key] == w, (name, key)
                continue
            g = np.asarray(got[key], w.dtype)
            assert g.shape == w.shape, (name, key)
            if w.dtype.kind in "iub":
                np.testing.assert_array_equal(g, w, err_msg=f"{name} {key}")
            else:
                np.testing.assert_allclose(g, w, atol=1e-5, err_msg=f"{name} {key}")
    return out


def test_xla_exports_answer_as_default_exports(run_python, uncased_vocab_file, encoder, tmp_path):
    """Sentence embeddings (and XLA's program count in the exported graph),
    sentence-pair classification."""
    exported = export_tasks(("embedding", "pairs"), tmp_path, uncased_vocab_file, encoder)
    check_fresh_process(exported, run_python, uncased_vocab_file, str(tmp_path / "dump"))


def test_xla_exports_windows_and_per_position_tasks(run_python, uncased_vocab_file, encoder,
                                                     tmp_path):
    """SQuAD windows; tagging and feature extraction: per-position outputs
    back at the input width."""
    exported = export_tasks(("squad", "tagging", "features"), tmp_path, uncased_vocab_file,
                            encoder)
    out = check_fresh_process(exported, run_python, uncased_vocab_file, str(tmp_path / "dump"))
    assert out["squad"]["num_windows"][0] >= 2
