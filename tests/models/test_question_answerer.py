"""QuestionAnswerer: Keras `fit` / `evaluate` / `predict` on (question, context)
strings with answers in the SQuAD form of Hugging Face `datasets`, windows over
long contexts, answers with character offsets, the recipe behind `compile()`,
the three ways out (.keras, export, checkpoint) and one clear line for each
bad input. Real data: questions written by hand on sentences of the Python
documentation (built-in functions, os, json, re), one of them unanswerable."""

import json
import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfbert import checkpoint
from tfbert.models.question_answerer import QuestionAnswerer
from tfbert.tasks.question_answering import QuestionAnsweringTask
from tfbert.train.optimizer import AdamW, WarmupPolynomialDecay

VOCAB = "tests/data/pretraining/vocab.txt"  # built from Python docstrings: no [UNK] below
CONTEXTS = {
    "abs": ("Return the absolute value of a number. The argument may be an integer, a floating "
            "point number, or an object implementing __abs__(). If the argument is a complex "
            "number, its magnitude is returned."),
    "len": ("Return the length (the number of items) of an object. The argument may be a "
            "sequence (such as a string, bytes, tuple, list, or range) or a collection (such as "
            "a dictionary, set, or frozen set)."),
    "sorted": ("Return a new sorted list from the items in iterable. Has two optional arguments "
               "which must be specified as keyword arguments. key specifies a function of one "
               "argument that is used to extract a comparison key from each element in "
               "iterable. reverse is a boolean value. If set to True, then the list elements are "
               "sorted as if each comparison were reversed."),
    "open": ("Open file and return a corresponding file object. If the file cannot be opened, "
             "an OSError is raised. mode is an optional string that specifies the mode in which "
             "the file is opened. It defaults to 'r' which means open for reading in text mode."),
    "zip": ("Iterate over several iterables in parallel, producing tuples with an item from "
            "each one. By default, zip() stops when the shortest iterable is exhausted. It will "
            "ignore the remaining items in the longer iterables."),
    "getcwd": "Return a string representing the current working directory.",
    "range": ("Rather than being a function, range is actually an immutable sequence type. The "
              "advantage of the range type over a regular list or tuple is that a range object "
              "will always take the same (small) amount of memory, no matter the size of the "
              "range it represents."),
    "isinstance": ("Return True if the object argument is an instance of the classinfo "
                   "argument, or of a subclass thereof. If object is not an object of the given "
                   "type, the function always returns False. If classinfo is not a type or tuple "
                   "of types, a TypeError exception is raised."),
    "dumps": ("Serialize obj to a JSON formatted str. If indent is a non-negative integer or "
              "string, then JSON array elements and object members will be pretty-printed with "
              "that indent level."),
    "compile": ("Compile a regular expression pattern into a regular expression object, which "
                "can be used for matching using its match(), search() and other methods."),
}
# (context, question, answer); "" is unanswerable (SQuAD v2.0).
ROWS = [
    ("abs", "What does abs return?", "the absolute value of a number"),
    ("abs", "What is returned for a complex number?", "its magnitude"),
    ("abs", "What may the argument be?",
     "an integer, a floating point number, or an object implementing __abs__()"),
    ("len", "What does len return?", "the length (the number of items) of an object"),
    ("len", "What may the argument of len be?", "a sequence"),
    ("sorted", "What does sorted return?", "a new sorted list from the items in iterable"),
    ("sorted", "How many optional arguments does it have?", "two"),
    ("sorted", "What kind of value is reverse?", "a boolean value"),  # second window only
    ("sorted", "What does key specify?", "a function of one argument"),
    ("open", "What does open return?", "a corresponding file object"),
    ("open", "What is raised if the file cannot be opened?", "an OSError"),
    ("open", "What does mode default to?", "'r'"),
    ("zip", "When does zip stop?", "when the shortest iterable is exhausted"),
    ("zip", "What does zip produce?", "tuples with an item from each one"),
    ("getcwd", "What does getcwd return?", "a string representing the current working directory"),
    ("range", "What kind of type is range?", "an immutable sequence type"),
    ("range", "How much memory does a range object take?", "the same (small) amount of memory"),
    ("isinstance", "What does isinstance return for an instance?", "True"),
    ("isinstance", "What exception is raised if classinfo is not a type?",
     "a TypeError exception"),
    ("dumps", "What does dumps serialize obj to?", "a JSON formatted str"),
    ("dumps", "What must indent be?", "a non-negative integer or string"),
    ("compile", "What does compile turn a pattern into?", "a regular expression object"),
    ("compile", "Which methods can be used for matching?", "match(), search() and other methods"),
    ("getcwd", "Who wrote the json module?", ""),
]
QUESTIONS = [q for _, q, _ in ROWS]
CONTEXT_COLUMN = [CONTEXTS[c] for c, _, _ in ROWS]
ANSWERS = [a for _, _, a in ROWS]
# Raw strings as a user has them: accents, an emoji, a CJK name, double spaces.
ODD = (["Who wrote the café module?", "What does it return?", "What is empty?"],
       ["The café module in Zürich  was written by Bob 🐍 in 東京.",
        "Return a string representing the current working directory.", ""])


def squad(context, answer):
    """One answer as Hugging Face `datasets` gives SQuAD: lists, character offsets."""
    if not answer:
        return {"text": [], "answer_start": []}
    return {"text": [answer], "answer_start": [context.index(answer)]}


Y = [squad(c, a) for c, a in zip(CONTEXT_COLUMN, ANSWERS)]


def tiny(**kwargs):
    kwargs.setdefault("seq_length", 64)
    kwargs.setdefault("max_query_length", 16)
    kwargs.setdefault("doc_stride", 32)
    return QuestionAnswerer.from_preset("tiny", vocab_file=VOCAB, **kwargs)


@pytest.fixture(scope="module")
def untrained():
    """A tiny random answerer (offsets, ways out and bad input need no training)."""
    keras.utils.set_random_seed(1)
    model = tiny()
    model.compile()
    return model


def spans(results):
    return [(r["answer"], r["start"], r["end"]) for r in results]


def test_fit_with_compile_defaults_trains_on_windows():
    keras.utils.set_random_seed(0)
    model = tiny()
    model.compile()
    x = (QUESTIONS, CONTEXT_COLUMN)
    windows = model.num_texts(x)
    assert windows > len(QUESTIONS)  # the longer contexts take two windows
    history = model.fit(x, Y, epochs=4, verbose=0)
    # One window is one example: 16 windows a batch (the recipe's), 4 epochs.
    schedule = model.optimizer._learning_rate
    assert isinstance(model.optimizer, AdamW) and isinstance(schedule, WarmupPolynomialDecay)
    assert schedule.decay_steps == 4 * math.ceil(windows / 16)
    assert history.history["loss"][-1] < 0.8 * history.history["loss"][0]
    assert model.version_2  # an empty answer among the training answers
    scores = model.evaluate(x, Y, verbose=0, return_dict=True)
    assert sorted(scores) == ["end_logits_accuracy", "end_logits_loss", "loss",
                              "start_logits_accuracy", "start_logits_loss"]
    # The ids path: a dataset of windows (what the QA task feeds) passes through.
    ids = model.evaluate(model.text_batches(x, Y, batch_size=8), verbose=0, return_dict=True)
    assert ids["loss"] == pytest.approx(scores["loss"], rel=1e-4)


@pytest.mark.slow
def test_fit_learns_the_answers_also_from_a_later_window():
    keras.utils.set_random_seed(0)
    model = tiny()
    model.compile()
    x = (QUESTIONS, CONTEXT_COLUMN)
    history = model.fit(x, Y, epochs=40, verbose=0)
    assert history.history["loss"][-1] < 0.25 * history.history["loss"][0]
    predicted = model.predict(x, verbose=0)
    right = [p["answer"] == a for p, a in zip(predicted, ANSWERS)]
    assert np.mean(right) >= 0.85, [p["answer"] for p in predicted]
    for p, context in zip(predicted, CONTEXT_COLUMN):
        assert context[p["start"]:p["end"]] == p["answer"]
    # "a boolean value" lies in the second window of its context only.
    later = ANSWERS.index("a boolean value")
    assert predicted[later]["answer"] == "a boolean value"


def test_targets_point_into_the_window_that_holds_the_answer(untrained):
    model = untrained
    # A context of five windows; the answer is in its last third.
    context = " ".join(CONTEXTS[k] for k in ("abs", "len", "zip"))
    answer = "when the shortest iterable is exhausted"
    x = (["When does zip stop?"], [context])
    (inputs, targets), = list(model.text_batches(x, [squad(context, answer)], batch_size=16))
    start, end = targets["start_logits"].numpy(), targets["end_logits"].numpy()
    assert len(start) >= 4 and start[0] == end[0] == 0  # the first window: [CLS]
    holding = np.flatnonzero(start)
    assert len(holding) >= 1 and holding[0] >= 2
    tokens = model.preprocessor.tokenize(tf.constant([answer])).merge_dims(1, 2)[0].numpy()
    for i in holding:
        ids = inputs["input_word_ids"][i].numpy()
        assert ids[start[i]:end[i] + 1].tolist() == tokens.tolist()
    # Windows without the whole answer and the unanswerable question: [CLS].
    assert set(np.flatnonzero(end)) == set(holding)
    # predict reads every window: the answer's offsets are into the whole context.
    result = model.predict(x, verbose=0)[0]
    assert context[result["start"]:result["end"]] == result["answer"] != ""


def test_predict_offsets_slice_the_context_back(untrained):
    results = untrained.predict(ODD, verbose=0)
    for r, context in zip(results, ODD[1]):
        assert sorted(r) == ["answer", "end", "score", "start"]
        assert context[r["start"]:r["end"]] == r["answer"]
        assert 0 <= r["score"] <= 1
    assert results[0]["answer"] and results[1]["answer"]
    assert results[2] == {"answer": "", "score": 0.0, "start": 0, "end": 0}  # empty context


def test_every_input_kind_gives_the_same_predictions(untrained):
    pd = pytest.importorskip("pandas")
    model = untrained
    reference = model.predict((QUESTIONS, CONTEXT_COLUMN), verbose=0)
    pairs = tf.data.Dataset.from_tensor_slices((QUESTIONS, CONTEXT_COLUMN))
    with_answers = tf.data.Dataset.from_tensor_slices((
        (QUESTIONS, CONTEXT_COLUMN), {"text": ANSWERS, "answer_start": [
            c.index(a) if a else -1 for c, a in zip(CONTEXT_COLUMN, ANSWERS)]}))
    kinds = {"numpy": (np.array(QUESTIONS), np.array(CONTEXT_COLUMN)),
             "pandas": (pd.Series(QUESTIONS), pd.Series(CONTEXT_COLUMN)),
             "dataset": pairs, "batched dataset": pairs.batch(5),
             "dataset with answers": with_answers}
    for kind, x in kinds.items():
        got = model.predict(x, verbose=0)
        assert spans(got) == spans(reference), kind
        np.testing.assert_allclose([r["score"] for r in got], [r["score"] for r in reference],
                                   atol=1e-5)
    # The batch size changes the padding, never the answer.
    assert spans(model.predict((QUESTIONS, CONTEXT_COLUMN), batch_size=3,
                               verbose=0)) == spans(reference)
    # evaluate on a dataset of ((question, context), answer) = on lists.
    lists = model.evaluate((QUESTIONS, CONTEXT_COLUMN), Y, verbose=0, return_dict=True)
    from_dataset = model.evaluate(with_answers, verbose=0, return_dict=True)
    assert from_dataset["loss"] == pytest.approx(lists["loss"], rel=1e-4)


def test_keras_file_round_trip_with_the_preprocessor_inside(untrained, tmp_path):
    model = untrained
    path = str(tmp_path / "qa.keras")
    model.save(path)
    again = keras.models.load_model(path)
    assert type(again) is QuestionAnswerer and again.head_config() == model.head_config()
    assert type(again.optimizer).__name__ == "AdamW"
    got, want = again.predict(ODD, verbose=0), model.predict(ODD, verbose=0)
    assert spans(got) == spans(want)
    np.testing.assert_allclose([r["score"] for r in got], [r["score"] for r in want], atol=1e-5)


def test_save_pretrained_round_trip_and_head_check(untrained, tmp_path,
                                                   raises_one_line_from_tfbert):
    model = untrained
    out = model.save_pretrained(str(tmp_path / "ckpt"))
    settings = checkpoint.read_checkpoint(out).question_answerer
    assert (settings.seq_length, settings.max_query_length, settings.doc_stride) == (64, 16, 32)
    again = QuestionAnswerer.from_pretrained(out)
    assert again.head_config() == model.head_config()
    assert again.preprocessor.seq_length == 64  # the saved one, unless another is asked for
    assert QuestionAnswerer.from_pretrained(out, seq_length=48).preprocessor.seq_length == 48
    ids = next(iter(model.text_batches((ODD[0][:2], ODD[1][:2]), with_targets=False)))
    np.testing.assert_allclose(again(ids)["start_logits"], model(ids)["start_logits"], atol=1e-5)
    # A plain encoder checkpoint: the same encoder, a fresh head, the given settings.
    plain = checkpoint.save_checkpoint(str(tmp_path / "plain"), model.encoder.config,
                                       model.encoder.get_named_weights(),
                                       model.preprocessor.vocab.tokens, True)
    fresh = QuestionAnswerer.from_pretrained(plain, seq_length=48, max_query_length=8)
    assert fresh.preprocessor.seq_length == 48 and fresh.version_2 is None
    name = "embeddings/word_embeddings/embeddings"
    np.testing.assert_array_equal(fresh.encoder.get_named_weights()[name],
                                  model.encoder.get_named_weights()[name])
    # A head of another size, and a bad setting: one line each.
    hidden = model.encoder.config.hidden_size
    wrong = checkpoint.save_checkpoint(
        str(tmp_path / "wrong"), model.encoder.config, model.encoder.get_named_weights(),
        model.preprocessor.vocab.tokens, True,
        head_weights={"question_answerer": {"kernel": np.zeros([hidden, 3], np.float32),
                                            "bias": np.zeros([3], np.float32)}},
        question_answerer=model.settings())
    raises_one_line_from_tfbert(
        "head", lambda: QuestionAnswerer.from_pretrained(wrong),
        r"does not match the question answerer head: bias: shape \(3,\) .* expects \(2,\)")
    meta = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    meta["question_answerer"]["n_best_size"] = 0
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(meta))
    raises_one_line_from_tfbert("setting", lambda: QuestionAnswerer.from_pretrained(out),
                                r"config.json:question_answerer.*n_best_size")


def test_export_is_the_squad_tasks_savedmodel_in_a_fresh_process(untrained, tmp_path,
                                                                  run_python):
    model = untrained
    questions, contexts = ODD[0][:2] + QUESTIONS[5:8], ODD[1][:2] + CONTEXT_COLUMN[5:8]
    export_dir = model.export(str(tmp_path / "export" / "1"))
    out = run_python(f"""
import json
import tensorflow as tf, tensorflow_text  # the tokenizer ops
m = tf.saved_model.load({export_dir!r})
out = m.signatures["serving_default"](question=tf.constant({questions!r}),
                                      context=tf.constant({contexts!r}))
print(json.dumps({{"outputs": sorted(out), "signatures": sorted(m.signatures),
                   "answer": [a.decode() for a in out["answer"].numpy()],
                   "start": out["start_char"].numpy().tolist(),
                   "end": out["end_char"].numpy().tolist()}}))
""")
    served = json.loads(out.strip().splitlines()[-1])
    assert "serving_ids" in served["signatures"]
    # The outputs QuestionAnsweringTask.export documents (v1.1: no null score).
    assert served["outputs"] == ["answer", "end_char", "nbest_answers", "nbest_end_char",
                                 "nbest_end_logits", "nbest_scores", "nbest_start_char",
                                 "nbest_start_logits", "num_windows", "score", "start_char"]
    predicted = model.predict((questions, contexts), verbose=0)
    assert list(zip(served["answer"], served["start"], served["end"])) == spans(predicted)


def test_the_qa_task_builds_this_model(untrained):
    task = QuestionAnsweringTask({"seq_length": 64, "max_query_length": 16, "doc_stride": 24,
                                  "n_best_size": 5, "version_2": True})
    task.prepare(untrained.preprocessor)
    model = task.build_model(untrained.encoder)
    assert type(model) is QuestionAnswerer
    assert (model.doc_stride, model.n_best_size, model.version_2) == (24, 5, True)


def test_get_config_round_trip():
    model = tiny(doc_overlap=8, n_best_size=5, version_2=True, null_score_diff_threshold=1.5)
    again = QuestionAnswerer.from_config(model.get_config())
    assert again.get_config() == model.get_config()
    assert (again.doc_overlap, again.version_2, again.preprocessor.seq_length) == (8, True, 64)


C0 = CONTEXTS["abs"]
BAD_INPUTS = [
    ("lengths", lambda m: m.fit((["a?", "b?"], [C0]), Y[:2]),
     r"x has 2 questions but 1 contexts"),
    ("not a tuple", lambda m: m.fit(["What does abs return?"], Y[:1]),
     r"x must be \(questions, contexts\), a tuple of two columns"),
    ("two strings", lambda m: m.predict(("What does abs return?", C0)),
     r"x must be \(questions, contexts\)"),
    ("ids", lambda m: m.fit(np.array([[2, 7, 3]]), Y[:1]), r"x holds int64 values, not strings"),
    ("ids columns", lambda m: m.fit((np.array([2, 7]), np.array([3, 4])), Y[:2]),
     r"x\[0\] \(questions\) holds int64 values, not strings"),
    ("ids dataset", lambda m: m.fit(tf.data.Dataset.from_tensor_slices(([1, 2], [3, 4]))),
     r"the dataset yields .*int32.* texts, not strings"),
    ("ids to the model", lambda m: m(["a text"]),
     r"QuestionAnswerer takes the dict of the three int32 id tensors"),
    ("answer count", lambda m: m.fit((["a?", "b?"], [C0, C0]), Y[:1]),
     r"y has 1 answers for 2 questions"),
    ("start outside", lambda m: m.fit((["a?"], [C0]), [{"text": ["a"], "answer_start": [500]}]),
     rf"y\[0\]: answer_start=500 is outside the context \(x\[1\]\[0\] has {len(C0)} characters"),
    ("text elsewhere", lambda m: m.fit((["a?"], [C0]),
                                       [{"text": ["absolute"], "answer_start": [3]}]),
     r"y\[0\]: the answer 'absolute' is not at answer_start=3 of x\[1\]\[0\], which has "
     r"'urn the ' there"),
    ("not a dict", lambda m: m.fit((["a?"], [C0]), ["the absolute value"]),
     r"y\[0\] is str \('the absolute value'\): give each answer as \{'text'"),
    ("one dict", lambda m: m.fit((["a?"], [C0]), {"text": ["Return"], "answer_start": [0]}),
     r"y is one dict: give a list of answers"),
    ("missing key", lambda m: m.fit((["a?"], [C0]), [{"text": ["Return"]}]),
     r"y\[0\] has no \['answer_start'\]"),
    ("texts and starts", lambda m: m.fit((["a?"], [C0]),
                                         [{"text": ["Return", "the"], "answer_start": [0]}]),
     r"y\[0\] has 2 texts but 1 answer_starts"),
    ("start type", lambda m: m.fit((["a?"], [C0]), [{"text": "Return", "answer_start": "0"}]),
     r"y\[0\]\['answer_start'\] holds '0', not a character offset"),
    ("no y", lambda m: m.fit((["a?"], [C0]), None),
     r"fit and evaluate need y: one answer per question"),
    ("empty", lambda m: m.fit(([], []), []), r"x\[0\] \(questions\) is empty"),
    ("empty predict", lambda m: m.predict(([], [])), r"x\[0\] \(questions\) is empty"),
    ("dataset without answers", lambda m: m.fit(tf.data.Dataset.from_tensor_slices(
        (["a?"], [C0]))), r"dataset of \(question, context\) only: fit and evaluate need"),
    ("dataset answer elsewhere", lambda m: m.fit(tf.data.Dataset.from_tensor_slices(
        ((["a?"], [C0]), {"text": ["absolute"], "answer_start": [3]}))),
     r"x: the dataset holds an answer whose text is not in its context at its answer_start"),
    ("dataset answer outside", lambda m: m.evaluate(tf.data.Dataset.from_tensor_slices(
        ((["a?"], [C0]), {"text": ["a"], "answer_start": [500]}))),
     r"x: the dataset holds an answer whose text is not in its context"),
    ("validation_split", lambda m: m.fit((["a?"], [C0]), Y[:1], validation_split=0.5),
     r"validation_split is not supported"),
    ("predict callbacks", lambda m: m.predict((["a?"], [C0]), callbacks=[]),
     r"predict on texts takes x, batch_size and verbose; got \['callbacks'\]"),
    ("huge context", lambda m: m.predict((["What grows?"], [
        "The cache can grow without bound. " * 6000])), r"more than max_windows=1024 windows"),
    ("query length", lambda m: tiny(max_query_length=61),
     r"max_query_length=61 leaves no room for the context in seq_length=64: at most 60"),
    ("overlap", lambda m: tiny(doc_overlap=45),
     r"doc_overlap=45 must be < seq_length - 3 - max_query_length = 45"),
]


@pytest.mark.parametrize("name, call, match", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_one_line(name, call, match, raises_one_line_from_tfbert, untrained):
    raises_one_line_from_tfbert(name, lambda: call(untrained), match)


def test_fit_under_a_two_replica_strategy(run_python):
    """`fit` inside `MirroredStrategy.scope()` on two CPU replicas: the recipe
    counts the global batches of windows, the loss falls, and `predict` over
    the replicas gives the answers the same weights give on one device."""
    out = run_python(f"""
import json
import tensorflow as tf
tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0],
    [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
from tfbert import QuestionAnswerer
x = ({QUESTIONS!r}, {CONTEXT_COLUMN!r})
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
keras.utils.set_random_seed(0)
with strategy.scope():
    model = QuestionAnswerer.from_preset("tiny", vocab_file="{VOCAB}", seq_length=64,
                                         max_query_length=16, doc_stride=32)
    model.compile()
history = model.fit(x, {Y!r}, batch_size=8, epochs=3, verbose=0)
plain = QuestionAnswerer.from_config(model.get_config())
plain.set_weights(model.get_weights())
split = model.predict(x, batch_size=3, verbose=0)
one = plain.predict(x, batch_size=3, verbose=0)
print(json.dumps({{"replicas": strategy.num_replicas_in_sync, "windows": model.num_texts(x),
                   "steps": int(model.optimizer.iterations.numpy()),
                   "decay_steps": model.optimizer._learning_rate.decay_steps,
                   "loss": history.history["loss"], "split": split, "one": one}}))
""")
    result = json.loads(out.strip().splitlines()[-1])
    assert result["replicas"] == 2
    # Global batches of 8 windows, 3 epochs; several replicas take whole batches only.
    assert result["steps"] == result["decay_steps"] == 3 * (result["windows"] // 8)
    assert np.isfinite(result["loss"]).all() and result["loss"][-1] < result["loss"][0]
    assert len(result["split"]) == len(QUESTIONS)
    assert spans(result["split"]) == spans(result["one"])
    np.testing.assert_allclose([r["score"] for r in result["split"]],
                               [r["score"] for r in result["one"]], atol=1e-5)


def test_an_empty_text_span_is_an_answer_and_only_start_minus_one_is_none():
    """A byte-level BPE context has lone space tokens whose offsets are empty
    ((91, 91) as transformers trims them): when such a span wins, predict
    reports it where it is; only the answer function's start_char -1 (v2.0's
    null) is the empty answer at 0 (seen as ('', 0, 0) against ('', 91, 91))."""
    from tfbert.models.question_answerer import _pipeline_answers

    out = {"answer": np.array([b"", b"", b"a stream"]),
           "start_char": np.array([91, -1, 17]), "end_char": np.array([91, -1, 25]),
           "nbest_scores": np.array([[2.0, 1.0], [2.0, 1.0], [3.0, 1.0]]),
           "nbest_start_char": np.array([[91, 5], [91, 5], [17, 5]]),
           "null_score": np.array([0.0, 5.0, 0.0])}
    got = _pipeline_answers(out, version_2=True)
    assert [(a["answer"], a["start"], a["end"]) for a in got] == [
        ("", 91, 91), ("", 0, 0), ("a stream", 17, 25)]
    assert got[0]["score"] == pytest.approx(math.exp(2) / (math.exp(2) + math.exp(1) + 1))
    assert got[1]["score"] == pytest.approx(math.exp(5) / (math.exp(2) + math.exp(1)
                                                           + math.exp(5)))
