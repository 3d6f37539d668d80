"""QuestionAnsweringTask: windows over long contexts, training targets, the
in-graph span search and its exact character mapping, export and bad input.

The span search is fed hand-set logits (peaks at known positions), so the
expected answer is known exactly; the export tests use a tiny random encoder
(answers are whatever it says, but the SavedModel must say the same).
"""

import json

import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertEncoder
from tfbert.data.squad import write_squad
from tfbert.tasks import TASKS
from tfbert.tasks.question_answering import QuestionAnsweringConfig, QuestionAnsweringTask

# Real text (Python's functools and json docs), with accents, CJK, emoji and
# runs of whitespace mixed in where an answer must still map back exactly.
CONTEXT = (
    "Least-recently-used cache decorator. If maxsize is set to None, the LRU features are "
    "disabled and the cache can grow without bound. If typed is True, arguments of different "
    "types will be cached separately. Arguments to the cached function must be hashable. "
    "JSON is a subset of JavaScript syntax used as a lightweight data interchange format. "
    "The café in Zürich   serves crème brûlée, and the module was written by  "
    "Bob Ippolito 🐍 in 東京都  for the standard library.")
ANSWER = "Bob Ippolito 🐍 in 東京都"


def make_task(seq_length=32, doc_stride=8, max_query_length=8, **kw):
    return QuestionAnsweringTask(QuestionAnsweringConfig(
        seq_length=seq_length, doc_stride=doc_stride, max_query_length=max_query_length, **kw))


@pytest.fixture()
def squad_file(tmp_path):
    start = CONTEXT.index(ANSWER)
    qas = [{"id": "later", "question": "Who wrote the module?", "is_impossible": False,
            "answers": [{"text": ANSWER, "answer_start": start}]},
           {"id": "first", "question": "What is it?", "is_impossible": False,
            "answers": [{"text": "Least-recently-used cache decorator",
                         "answer_start": 0}]},
           {"id": "none", "question": "What colour is the sky?", "is_impossible": True,
            "answers": []}]
    path = str(tmp_path / "train.json")
    return write_squad(path, [{"title": "docs", "paragraphs": [{"context": CONTEXT, "qas": qas}]}])


def decode_window(pre, ids):
    return [t.decode() for t in pre.id_to_token(ids).numpy()]


def test_registered():
    assert TASKS["squad"] is QuestionAnsweringTask
    with pytest.raises(ValueError, match=r"QuestionAnsweringConfig.max_query_length: 10 must be "
                                         r"in \[1, seq_length - 4 = 8\]"):
        make_task(seq_length=12, max_query_length=10)


def test_windows_and_targets_find_answer_in_later_window(squad_file, make_preprocessor):
    task = make_task(train_file=squad_file)
    pre = make_preprocessor(32)
    task.prepare(pre)
    assert task.version_2
    q, c, a_start, a_end = task._slices(squad_file)
    w = task.windows(q, c)
    n_windows = w["num_windows"].numpy().tolist()
    assert n_windows[0] >= 3 and len(set(n_windows)) == 1  # same context, same windows
    assert task.num_examples(squad_file) == sum(n_windows)
    targets = task._targets(w, a_start, a_end)
    start, end = targets["start_logits"].numpy(), targets["end_logits"].numpy()
    rows = w["row"].numpy()
    # Question 0: the answer lies only in later windows; earlier ones target [CLS].
    hits = [i for i in range(len(rows)) if rows[i] == 0 and start[i] > 0]
    assert hits and min(hits) >= 2
    assert all(start[i] == end[i] == 0 for i in range(len(rows)) if rows[i] == 0 and i < hits[0])
    # The target pieces map back to the exact answer text (bytes of the context).
    i = hits[0]
    piece = w["window_start"].numpy()[i] + start[i] - w["context_offset"].numpy()[i]
    last = w["window_start"].numpy()[i] + end[i] - w["context_offset"].numpy()[i]
    raw = CONTEXT.encode()
    b0 = w["piece_start"][0].numpy()[piece]
    b1 = w["piece_limit"][0].numpy()[last]
    assert raw[b0:b1].decode() == ANSWER
    tokens = decode_window(pre, w["inputs"]["input_word_ids"][i])
    assert tokens[start[i]: end[i] + 1] == ["bob", "ip", "##pol", "##ito", "[UNK]", "in", "東",
                                            "京", "都"]
    # Question 1: the answer is in the first window; question 2 has none.
    first_rows = [i for i in range(len(rows)) if rows[i] == 1]
    assert start[first_rows[0]] == w["context_offset"].numpy()[first_rows[0]]
    assert all(start[i] == end[i] == 0 for i in range(len(rows)) if rows[i] == 2)
    # Packing: [CLS] question [SEP] window [SEP], never past seq_length.
    tokens = decode_window(pre, w["inputs"]["input_word_ids"][0])
    assert tokens[:7] == ["[CLS]", "who", "wrote", "the", "module", "?", "[SEP]"]
    assert w["inputs"]["input_mask"].numpy().sum(1).max() <= 32


def test_training_dataset_batches_windows(squad_file, make_preprocessor):
    task = make_task(train_file=squad_file)
    task.prepare(make_preprocessor(32))
    x, y = next(iter(task.dataset(squad_file, batch_size=4, training=True)))
    assert x["input_word_ids"].shape == (4, 32) and y["start_logits"].shape == (4,)
    batches = list(task.dataset(squad_file, batch_size=4))
    assert sum(b[0]["input_word_ids"].shape[0] for b in batches) == task.num_examples(squad_file)


def peaked_logits(w, window, start, end, length):
    """Start/end logits with a peak at (start, end) of one window, [CLS] low."""
    n = int(tf.shape(w["row"])[0])
    s = np.full((n, length), -5.0, np.float32)
    e = np.full((n, length), -5.0, np.float32)
    s[:, 0] = e[:, 0] = -20.0
    s[window, start] = 8.0
    e[window, end] = 7.0
    s[window, start + 1] = 3.0  # a runner-up span inside the answer
    return tf.constant(s), tf.constant(e)


def gold_window(task, squad_file):
    """Windows of the first question, the window holding its answer, and the
    answer's start/end token positions there."""
    q, c, a_start, a_end = task._slices(squad_file)
    w = task.windows(q[:1], c[:1])
    targets = task._targets(w, a_start[:1], a_end[:1])
    window = int(np.flatnonzero(targets["start_logits"].numpy())[0])
    s, e = int(targets["start_logits"][window]), int(targets["end_logits"][window])
    return w, c, window, s, e


def test_span_search_maps_back_exactly(squad_file, make_preprocessor):
    task = make_task(train_file=squad_file, n_best_size=5)
    task.prepare(make_preprocessor(32))
    w, c, window, s, e = gold_window(task, squad_file)
    start_logits, end_logits = peaked_logits(w, window, s, e, 32)
    out = task.search(w, start_logits, end_logits, c[:1])
    assert out["answer"].numpy()[0].decode() == ANSWER
    assert out["start_char"].numpy()[0] == CONTEXT.index(ANSWER)
    assert out["end_char"].numpy()[0] == CONTEXT.index(ANSWER) + len(ANSWER)
    assert out["score"].numpy()[0] == pytest.approx(15.0)
    assert out["no_answer_score"].numpy()[0] == pytest.approx(-40.0 - 15.0)
    nbest = [t.decode() for t in out["nbest_answers"].numpy()[0]]
    assert nbest[0] == ANSWER and nbest[1] == ANSWER[len("Bob "):]  # Ippolito ... (runner-up)
    assert np.all(np.diff(out["nbest_scores"].numpy()[0]) <= 0)
    # [CLS] above the best span: v2 says "" (no answer).
    s2 = start_logits.numpy()
    s2[:, 0] = 40.0  # null = 40 - 20 = 20 > 15
    out = task.search(w, tf.constant(s2), end_logits, c[:1])
    assert out["answer"].numpy()[0] == b"" and out["start_char"].numpy()[0] == -1
    # v1.1: [CLS] is never the answer.
    task.version_2 = False
    out = task.search(w, tf.constant(s2), end_logits, c[:1])
    assert out["answer"].numpy()[0].decode() == ANSWER and "no_answer_score" not in out


def test_spans_longer_than_max_answer_length_are_not_candidates(squad_file, make_preprocessor):
    task = make_task(train_file=squad_file, max_answer_length=3)
    task.prepare(make_preprocessor(32))
    w, c, window, s, e = gold_window(task, squad_file)
    out = task.search(w, *peaked_logits(w, window, s, e, 32), c[:1])
    assert e - s + 1 > 3
    assert len(out["answer"].numpy()[0].decode().split()) <= 3


@pytest.fixture()
def tiny_qa(tiny_config, make_preprocessor, squad_file):
    task = make_task(train_file=squad_file, seq_length=32, max_windows=64)
    task.prepare(make_preprocessor(32))
    model = task.build_model(BertEncoder(tiny_config.replace(vocab_size=30522)))
    return task, model


def test_predict_export_and_bad_input(tiny_qa, squad_file, tmp_path):
    from tfbert.export.serving import predict as rest_predict
    from tfbert.export.task_model import load_task_model

    task, model = tiny_qa
    questions = ["Who wrote the module?", "", "What is it?", "Qui a écrit 東京?"]
    contexts = [CONTEXT, "Arguments must be hashable.", "", CONTEXT[:80]]
    results = task.predict(model, questions, contexts)
    for r, ctx in zip(results, contexts):
        if r["answer"]:  # an exact substring at the reported character offsets
            assert ctx[r["start_char"]: r["end_char"]] == r["answer"]
        assert set(r) >= {"answer", "score", "start_char", "end_char", "no_answer_score", "nbest"}
    assert results[0]["num_windows"] >= 3
    assert results[2]["nbest"] == [] and results[2]["answer"] == ""  # empty context

    path = task.export(model, str(tmp_path / "export"))  # runs the op-rule check
    serve = load_task_model(path).signatures["serving_default"]
    out = serve(question=tf.constant(questions), context=tf.constant(contexts))
    assert [a.decode() for a in out["answer"].numpy()] == [r["answer"] for r in results]
    np.testing.assert_allclose(out["score"].numpy(), [r["score"] for r in results], atol=1e-5)
    np.testing.assert_array_equal(out["start_char"].numpy(), [r["start_char"] for r in results])

    # Non-UTF-8 bytes: answered (invalid bytes are dropped by the tokenizer).
    out = serve(question=tf.constant([b"Who \xff\xfe wrote it?"]),
                context=tf.constant([b"Bob \xc3 Ippolito wrote \xff it."]))
    assert out["answer"].shape == (1,)
    # Mismatched batch sizes: a clear error, not a crash.
    with pytest.raises(tf.errors.InvalidArgumentError, match="same batch size"):
        serve(question=tf.constant(["a", "b"]), context=tf.constant(["c"]))
    with pytest.raises(ValueError, match="2 questions but 1 contexts"):
        task.predict(model, ["a", "b"], ["c"])
    # A 1 MB context: a clear error naming max_windows (the limit on one call).
    huge = ("The cache can grow without bound. " * 31000)[:1_000_000]
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_windows=64"):
        serve(question=tf.constant(["What grows?"]), context=tf.constant([huge]))
    # REST body through the signature, like TF Serving.
    body = {"instances": [{"question": "Who wrote the module?", "context": CONTEXT}]}
    assert rest_predict(load_task_model(path), body)["predictions"][0]["answer"] == results[0][
        "answer"]


def test_evaluate_and_prediction_files(tiny_qa, squad_file, tmp_path):
    task, model = tiny_qa
    dev = task.eval_data(squad_file, 8)
    scores = task.evaluate(model, dev)
    assert {"exact", "f1", "total", "HasAns_exact", "NoAns_f1", "best_f1",
            "best_f1_thresh"} <= set(scores)
    assert scores["total"] == 3
    paths = task.write_predictions(model, dev, str(tmp_path / "out"))
    names = sorted(p.rsplit("/", 1)[1] for p in paths)
    assert names == ["nbest_predictions.json", "null_odds.json", "predictions.json"]
    predictions = json.load(open(tmp_path / "out" / "predictions.json", encoding="utf-8"))
    assert set(predictions) == {"later", "first", "none"}
    nbest = json.load(open(tmp_path / "out" / "nbest_predictions.json", encoding="utf-8"))
    assert nbest["later"][0]["text"] == predictions["later"] or predictions["later"] == ""
    assert sum(e["probability"] for e in nbest["later"]) == pytest.approx(1.0)


def _window_ids(task, question, context):
    w = task.windows(tf.constant([question]), tf.constant([context]))
    ids, mask = w["inputs"]["input_word_ids"].numpy(), w["inputs"]["input_mask"].numpy()
    return [row[: m.sum()].tolist() for row, m in zip(ids, mask)]


@pytest.mark.parametrize("overlap", [0, 5, 10])
def test_doc_overlap_gives_hugging_face_windows(overlap, make_preprocessor, minilm_dir):
    """`doc_overlap` is Hugging Face's `stride`: the same windows, id for id,
    as its tokenizer's overflowing windows (what `run_qa.py --doc_stride` uses)."""
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(str(minilm_dir))
    question = "Who wrote the module?"
    task = make_task(seq_length=32, doc_overlap=overlap, max_query_length=16)
    task.prepare(make_preprocessor(32))
    want = hf(question, CONTEXT, truncation="only_second", max_length=32, stride=overlap,
              return_overflowing_tokens=True)["input_ids"]
    assert len(want) >= 4
    assert _window_ids(task, question, CONTEXT) == want


@pytest.mark.parametrize("stride", [3, 8, 40])
def test_doc_stride_gives_run_squad_windows(stride, make_preprocessor):
    """`doc_stride` is google-research/bert's: window starts as `run_squad.py`'s
    `doc_spans` loop computes them (reimplemented here from its source)."""
    task = make_task(seq_length=32, doc_stride=stride, max_query_length=16)
    task.prepare(make_preprocessor(32))
    pre = task.preprocessor
    q = pre.tokenize(tf.constant(["Who wrote the module?"])).merge_dims(1, 2)[0].numpy().tolist()
    c = pre.tokenize(tf.constant([CONTEXT])).merge_dims(1, 2)[0].numpy().tolist()
    budget = 32 - len(q) - 3
    spans, start = [], 0
    while start < len(c):  # run_squad.py, convert_examples_to_features
        length = min(len(c) - start, budget)
        spans.append((start, length))
        if start + length == len(c):
            break
        start += min(length, stride)
    cls, sep = 101, 102
    want = [[cls] + q + [sep] + c[s:s + n] + [sep] for s, n in spans]
    assert _window_ids(task, "Who wrote the module?", CONTEXT) == want


def test_doc_overlap_must_leave_room():
    with pytest.raises(ValueError, match=r"QuestionAnsweringConfig.doc_overlap: 21 must be in "
                                         r"\[0, seq_length - 3 - max_query_length = 21\)"):
        make_task(seq_length=32, doc_overlap=21, max_query_length=8)
