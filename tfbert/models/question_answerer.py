"""`QuestionAnswerer`: extractive question answering on raw strings, preprocessor attached.

What `TextClassifier` is for classification (`tfbert.models.strings_model.
StringsModel`): a `keras.Model` with its `BertPreprocessor` attached whose
`fit`, `evaluate` and `predict` take `x = (questions, contexts)`, two
columns of strings (lists of str, NumPy string arrays, pandas Series), or a
`tf.data.Dataset` of `(question, context)` (for `fit`: `((question,
context), {"text": str, "answer_start": int})`), batched or not.
`compile()` with no arguments is the QA task's loss (the mean of the start
and end cross-entropies) and the fine-tuning recipe.

Answers (`y`) are in the SQuAD form of Hugging Face `datasets`: per
question `{"text": [str], "answer_start": [int]}` (character offsets; a
single str / int works too, and the first answer is the training target);
an empty `text` list or "" is "no answer" (SQuAD v2.0). A long context is
read in windows (`doc_stride` or `doc_overlap`), and every window is one
training example, its targets the answer's first and last wordpiece in it,
or [CLS] when the answer is not wholly inside it. All of that runs in
`tf.data` as graph ops, the QA task's own functions (`tfbert.models.
answer_spans`).

`predict` gives, per question, the dict of transformers' question-answering
pipeline: `answer`, `score` (its probability among the n-best spans and,
with `version_2`, the null answer), `start`, `end` (characters:
`context[start:end] == answer`); no answer is `""` with `start == end == 0`.
The span search is over all windows of a question (the max-context rule,
`n_best_size`, `max_answer_length`; with `version_2`, "" when the null
score beats the best span by more than `null_score_diff_threshold`), by the
same graph function as the export, so TF Serving answers as `predict`.

Ways out: `save("m.keras")` / `keras.models.load_model`; `export(dir)`: the
strings-in SavedModel `tools/finetune.py --task=squad` writes
(`serving_default(question, context)`, `serving_ids`); `save_pretrained(dir)`:
a tfbert checkpoint that `from_pretrained` reads. `tfbert.tasks.
question_answering` trains this same class.

Example (a random tiny encoder; `from_pretrained(dir)` for real weights):
>>> model = QuestionAnswerer.from_preset("tiny", vocab_file="tests/data/pretraining/vocab.txt",
...                                      seq_length=32, max_query_length=8)
>>> model.compile()
>>> context = "Return the absolute value of a number."
>>> history = model.fit((["What does abs return?"], [context]),
...                     [{"text": ["the absolute value"], "answer_start": [7]}], epochs=1,
...                     verbose=0)
>>> answer = model.predict((["What does abs return?"], [context]), verbose=0)[0]
>>> sorted(answer), context[answer["start"]:answer["end"]] == answer["answer"]
(['answer', 'end', 'score', 'start'], True)
"""

import os
import weakref

import keras
import numpy as np
import tensorflow as tf

from tfbert import checkpoint
from tfbert.atomic import check_replaceable
from tfbert.config_loader import check_int
from tfbert.data.batching import window_stream
from tfbert.models.answer_spans import (ANSWER_NOT_AT_START, SPAN_LOSS_WEIGHTS,
                                        answer_byte_range, answer_strings, question_windows,
                                        span_loss, span_metrics, window_targets)
from tfbert.models.span_labeler import BertSpanLabeler
from tfbert.models.strings_model import StringsModel
from tfbert.models.text_data import (IDS_HINT, check_batch_size, check_weights, holds_ids,
                                     is_one_pair, is_pair, text_columns)
from tfbert.text.preprocessor import BertPreprocessor
from tfbert.text.windows import pair_separators, pair_specials
from tfbert.train import recipe

SECTION = "question_answerer"  # the checkpoint's config.json section and weights prefix
# The settings a checkpoint's section carries besides seq_length (constructor names).
SETTINGS = ("doc_stride", "doc_overlap", "max_query_length", "max_answer_length", "n_best_size",
            "null_score_diff_threshold", "version_2", "max_windows", "dropout")
ANSWER_FORM = "{'text': [str], 'answer_start': [int]} (SQuAD form; empty lists: no answer)"
# A dataset's answers are checked in the graph (answer_byte_range): its one line.
DATASET_CHECKS = {ANSWER_NOT_AT_START: "x: the dataset holds an answer whose text is not in its "
                                       "context at its answer_start (a character offset)."}

@keras.saving.register_keras_serializable(package="tfbert")
class QuestionAnswerer(StringsModel, BertSpanLabeler):
    """Extractive question answering on raw (question, context) strings (see module doc).

    Args:
        encoder: a `BertEncoder` (pretrained or fresh).
        preprocessor: the `BertPreprocessor` of the encoder's vocabulary; its
            `seq_length` is the window's length (question and context).
        doc_stride: context wordpieces between the starts of the windows
            over a long context (`tfbert.text.windows`).
        doc_overlap: or, set (it wins), context wordpieces shared by
            neighbouring windows.
        max_query_length: question wordpieces kept.
        max_answer_length: longest answer span, in wordpieces.
        n_best_size: spans kept by the search (the candidates of `score`).
        null_score_diff_threshold: with `version_2`, the answer is "" when
            the null score minus the best span's score is above this.
        version_2: "no answer" is a possible prediction (SQuAD v2.0). None:
            the first `fit` (or `evaluate`) on in-memory answers decides
            (True when one of them is empty); False until then.
        max_windows: windows in one call of the answer function (a clear
            error instead of running out of memory on a huge context).
        dropout: as `BertSpanLabeler`.
        initializer_range: as `BertSpanLabeler`.
    """

    recipe_min_steps = recipe.QUESTION_ANSWERING_MIN_STEPS  # fit without epochs: as the QA task

    head_layer = "span_logits"
    head_prefix = settings_section = SECTION  # save_pretrained: weights prefix, section

    def __init__(self, encoder, preprocessor, doc_stride=128, doc_overlap=None,
                 max_query_length=64, max_answer_length=30, n_best_size=20,
                 null_score_diff_threshold=0.0, version_2=None, max_windows=1024, dropout=0.0,
                 initializer_range=None, **kwargs):
        # === Checks ===
        if not isinstance(preprocessor, BertPreprocessor):
            raise TypeError(f"QuestionAnswerer needs a BertPreprocessor, got "
                            f"{type(preprocessor).__name__}.")
        counts = {"doc_stride": doc_stride, "max_query_length": max_query_length,
                  "max_answer_length": max_answer_length, "n_best_size": n_best_size,
                  "max_windows": max_windows}
        if doc_overlap is not None:
            counts["doc_overlap"] = doc_overlap
        for name, value in counts.items():
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{name} must be an int, got {value!r}.")
            if value < (0 if name == "doc_overlap" else 1):
                raise ValueError(f"{name} must be >= {0 if name == 'doc_overlap' else 1}, "
                                 f"got {value}.")
        seq_length = preprocessor.seq_length
        specials = pair_specials(preprocessor)  # 3 for BERT, 4 for RoBERTa
        budget = seq_length - specials - max_query_length  # context wordpieces per window
        if budget < 1:
            raise ValueError(f"max_query_length={max_query_length} leaves no room for the "
                             f"context in seq_length={seq_length}: at most "
                             f"{seq_length - specials - 1}.")
        if doc_overlap is not None and doc_overlap >= budget:
            raise ValueError(f"doc_overlap={doc_overlap} must be < seq_length - {specials} - "
                             f"max_query_length = {budget} (each window must move on).")
        kwargs.setdefault("name", "question_answerer")
        # RoBERTa's packing has no segment ids: the head finds the context after </s></s>.
        kwargs["separator_id"] = (preprocessor.vocab.sep_id if pair_separators(preprocessor) == 2
                                  else None)
        super().__init__(encoder, dropout=dropout, initializer_range=initializer_range, **kwargs)
        # === Config ===
        self.preprocessor = preprocessor
        self.doc_stride = int(doc_stride)
        self.doc_overlap = None if doc_overlap is None else int(doc_overlap)
        self.max_query_length = int(max_query_length)
        self.max_answer_length = int(max_answer_length)
        self.n_best_size = int(n_best_size)
        self.null_score_diff_threshold = float(null_score_diff_threshold)
        self.version_2 = None if version_2 is None else bool(version_2)
        self.max_windows = int(max_windows)
        self._auto_optimizer = False  # compile(optimizer="auto"): fit builds the optimizer

    # === Constructors ===

    @classmethod
    def from_pretrained(cls, checkpoint_dir, seq_length=None, **kwargs):
        """From a tfbert checkpoint: a converted or pretrained encoder (a fresh
        span head), or one `save_pretrained` wrote (its head and settings;
        keyword arguments override the settings). `seq_length`: as given,
        else the saved model's, else 384."""
        seq_length = check_int(seq_length, "seq_length", 5, allow_none=True)
        ckpt = checkpoint.read_checkpoint(checkpoint_dir)
        encoder = cls.pretrained_encoder(ckpt)
        settings = ckpt.question_answerer
        head = ckpt.prefixed_weights(SECTION) if settings else {}
        if settings:
            for key in SETTINGS:
                kwargs.setdefault(key, getattr(settings, key))
            seq_length = seq_length or settings.seq_length
        preprocessor = BertPreprocessor.from_pretrained(checkpoint_dir,
                                                        seq_length=seq_length or 384)
        model = cls(encoder, preprocessor, **kwargs)
        if head:
            model.assign_head(head, ckpt.weights_path, "question answerer head")
        return model

    # === Settings of the shared graph functions (tfbert.models.answer_spans) ===

    def window_settings(self):
        """The keyword arguments of `answer_spans.question_windows`."""
        return {"seq_length": self.preprocessor.seq_length,
                "max_query_length": self.max_query_length, "doc_stride": self.doc_stride,
                "doc_overlap": self.doc_overlap, "max_windows": self.max_windows}

    def search_settings(self):
        """The keyword arguments of `answer_spans.search_spans`."""
        return {"max_answer_length": self.max_answer_length, "n_best_size": self.n_best_size,
                "version_2": bool(self.version_2),
                "null_score_diff_threshold": self.null_score_diff_threshold}

    def _traced(self, name, fn, signature=None):
        """`fn` as a `tf.function` (of `signature`), traced once per model and
        settings: every dataset's `map` and every `predict` reuse its graph."""
        key = (name, tuple(sorted(self.window_settings().items())),
               tuple(sorted(self.search_settings().items())))
        return self.traced(key, fn, signature)

    def answer_function(self):
        """The traced answer function of `predict`: questions, contexts
        `[batch]` -> `answer_spans.search_spans`' dict (the export's outputs)."""
        model = weakref.ref(self)  # the cache must not keep the model alive
        spec = tf.TensorSpec([None], tf.string)
        call = lambda ids: model()(ids, training=False)
        return self._traced("answer", lambda q, c: answer_strings(
            call, model().preprocessor, q, c, model().window_settings(),
            model().search_settings()), [spec, spec])

    # === Questions, contexts and answers in ===

    def columns(self, x):
        """`(questions, contexts)`: two NumPy object arrays of str, checked."""
        if not is_pair(x):
            if not is_one_pair(x):  # one question as two strings: the line below says how
                text_columns(x)  # one clear line for ids, None, a string, an empty list
            raise TypeError(f"x must be (questions, contexts), a tuple of two columns of "
                            f"strings; got {type(x).__name__} of one column (one question: "
                            f"([question], [context])).")
        (questions,) = text_columns(x[0], "x[0] (questions)")
        (contexts,) = text_columns(x[1], "x[1] (contexts)")
        if len(questions) != len(contexts):
            raise ValueError(f"x has {len(questions)} questions but {len(contexts)} contexts.")
        return questions, contexts

    def num_texts(self, x):
        """Training examples in `x`: the windows of its questions (one window
        is one example, as in the QA task)."""
        questions, contexts = self.columns(x)
        spec = tf.TensorSpec([None], tf.string)
        model = weakref.ref(self)
        count = self._traced("count", lambda q, c: tf.reduce_sum(question_windows(
            model().preprocessor, q, c, **model().window_settings())["num_windows"]),
                             [spec, spec])
        return int(sum(int(count(tf.constant(list(questions[i:i + 256])),
                                 tf.constant(list(contexts[i:i + 256]))))
                       for i in range(0, len(questions), 256)))

    def answers(self, y, contexts):
        """`(answer_start, text)` of each question's first answer (`-1, ""` for
        none), NumPy `[n]`, checked against the contexts."""
        n = len(contexts)
        if y is None:
            raise ValueError(f"fit and evaluate need y: one answer per question, {ANSWER_FORM}.")
        if hasattr(y, "to_numpy"):  # a pandas Series of answer dicts
            y = y.to_numpy()
        if isinstance(y, dict):
            raise TypeError(f"y is one dict: give a list of answers, one per question, each "
                            f"{ANSWER_FORM}.")
        if isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
            raise TypeError(f"y must be a list of answers, one per question, got "
                            f"{type(y).__name__}.")
        if len(y) != n:
            raise ValueError(f"y has {len(y)} answers for {n} questions.")
        starts = np.full(n, -1, np.int64)
        texts = np.full(n, "", dtype=object)
        for i, (answer, context) in enumerate(zip(y, contexts)):
            text, start = _first_answer(answer, i)
            if not text:
                continue  # unanswerable (SQuAD v2.0): the target is [CLS]
            if not 0 <= start < len(context):
                raise ValueError(f"y[{i}]: answer_start={start} is outside the context "
                                 f"(x[1][{i}] has {len(context)} characters).")
            there = context[start:start + len(text)]
            if there != text:
                raise ValueError(f"y[{i}]: the answer {text!r:.40} is not at answer_start="
                                 f"{start} of x[1][{i}], which has {there!r:.40} there.")
            starts[i], texts[i] = start, text
        return starts, texts

    # === tf.data: graph ops from here on ===

    def _windows_of(self, question, context, answer_start=None, answer_text=None, weights=None):
        """A batch of questions -> its windows: `inputs`, or `(inputs, targets[,
        weights])` with answers (a question's weight on each of its windows)."""
        w = question_windows(self.preprocessor, question, context, **self.window_settings())
        if answer_start is None:
            return w["inputs"]
        targets = window_targets(w, *answer_byte_range(context, answer_start, answer_text))
        if weights is None:
            return w["inputs"], targets
        return w["inputs"], targets, tf.gather(weights, w["row"])

    def text_batches(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False,
                     with_targets=True, seed=0, drop_remainder=False):
        """A `tf.data.Dataset` of `(ids, {"start_logits", "end_logits"}[,
        weights])` batches of windows (or ids alone without targets), windowed
        in its `map`. `shuffle`: the QA task's endless training stream (each
        epoch every window once, questions reshuffled, windows mixed)."""
        batch_size = check_batch_size(batch_size, 32)
        model = weakref.ref(self)

        def windows_for(spec):
            # One traced function per element arity and dtypes: TF 2.21's
            # reduce_retracing fails (IndexError in most_specific_common_subtype)
            # generalizing one function over calls with a different arity.
            kinds = tuple(s.dtype.name for s in tf.nest.flatten(spec))
            return self._traced(("windows", kinds), lambda *args: model()._windows_of(*args))

        to_windows = lambda d: d.map(windows_for(d.element_spec),
                                     num_parallel_calls=tf.data.AUTOTUNE).unbatch()
        if isinstance(x, tf.data.Dataset):
            if y is not None or sample_weight is not None:
                raise ValueError("x is a tf.data.Dataset: its elements carry the answers; "
                                 "y and sample_weight must be None.")
            has_answers, batched = _dataset_kind(x.element_spec)
            if with_targets and not has_answers:
                raise ValueError("x is a dataset of (question, context) only: fit and evaluate "
                                 "need ((question, context), answer) elements.")
            ds = x if batched else x.batch(batch_size)
            if has_answers:
                ds = ds.map(lambda texts, answer: (
                    (*texts, answer["answer_start"], answer["text"]) if with_targets else texts))
            return to_windows(ds).batch(batch_size).prefetch(tf.data.AUTOTUNE)
        questions, contexts = self.columns(x)
        parts = (tf.constant(list(questions), tf.string), tf.constant(list(contexts), tf.string))
        n = len(questions)
        if with_targets:
            starts, texts = self.answers(y, contexts)
            if self.version_2 is None:  # the first answers seen decide
                self.version_2 = bool((starts < 0).any())
            parts += (tf.constant(starts), tf.constant(list(texts), tf.string))
            weights = check_weights(sample_weight, n)
            if weights is not None:
                parts += (weights,)
        examples = tf.data.Dataset.from_tensor_slices(parts)
        windows_of = windows_for(examples.element_spec)
        if not shuffle:
            ds = window_stream(examples, windows_of, batch_size)
            # A known length: Keras warns "ran out of data" after a dataset of unknown length.
            return ds.apply(tf.data.experimental.assert_cardinality(
                -(-self.num_texts(x) // batch_size)))
        # Windows of one question are neighbours: mix them.
        return window_stream(examples, windows_of, batch_size, n, seed=seed,
                             drop_remainder=drop_remainder, shuffle_buffer=2048)

    def dataset_checks(self):
        return DATASET_CHECKS

    # === Training: compile() is the recipe (StringsModel) ===

    def default_loss(self):
        return span_loss()

    def default_metrics(self):
        return span_metrics()

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        if isinstance(loss, str) and loss == "auto":  # BERT's: the mean of start and end
            kwargs.setdefault("loss_weights", SPAN_LOSS_WEIGHTS)
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    # === Predictions ===

    def question_batches(self, x, batch_size):
        """`(questions, contexts)` string tensors `[batch]` of `x`, batch by batch."""
        if isinstance(x, tf.data.Dataset):
            has_answers, batched = _dataset_kind(x.element_spec)
            ds = x if batched else x.batch(batch_size)
            for element in ds:
                yield element[0] if has_answers else element
            return
        questions, contexts = self.columns(x)
        for i in range(0, len(questions), batch_size):
            yield (tf.constant(list(questions[i:i + batch_size]), tf.string),
                   tf.constant(list(contexts[i:i + batch_size]), tf.string))

    def predict(self, x, batch_size=None, verbose="auto", **kwargs):
        """Per question, `{"answer", "score", "start", "end"}` (see module
        doc). `batch_size`: questions per call (default 16). The ids dict (or
        a dataset of it) gives Keras' per-position `start_logits`, `end_logits`."""
        if holds_ids(x):
            return super().predict(x, batch_size=batch_size, verbose=verbose, **kwargs)
        if kwargs:
            raise TypeError(f"predict on texts takes x, batch_size and verbose; got "
                            f"{sorted(kwargs)}.")
        answer = self.answer_function()
        results = []
        for questions, contexts in self.question_batches(x, check_batch_size(batch_size, 16)):
            try:
                out = answer(questions, contexts)
            except tf.errors.InvalidArgumentError as e:
                raise ValueError(e.message.strip().splitlines()[0]) from None
            results += _pipeline_answers({k: v.numpy() for k, v in out.items()},
                                         bool(self.version_2))
        return results

    # === Ways out ===

    def export(self, filepath, format="tf_saved_model", jit_compile=False, **kwargs):
        """The strings-in SavedModel `tools/finetune.py --task=squad` writes
        (`QuestionAnsweringTask.export` documents the outputs):
        `serving_default(question, context)` -> `answer`, `score`,
        `start_char`, `end_char`, the `nbest_*` fields, ...; `serving_ids` ->
        per-position `start_logits`, `end_logits`. Other `format`s go to
        Keras' `Model.export`."""
        if format != "tf_saved_model":
            return super().export(filepath, format=format, **kwargs)
        check_replaceable(filepath, "export")
        # export/ builds on models: imported here.
        from tfbert.export.compiled_call import compiled_call
        from tfbert.export.task_model import export_task_model

        call = compiled_call(self, jit_compile)

        def serve_text(texts):
            return answer_strings(call, self.preprocessor, texts["question"], texts["context"],
                                  self.window_settings(), self.search_settings())

        return export_task_model(os.fspath(filepath), serve_text, lambda ids: call(ids),
                                 ("question", "context"), track=[self, self.preprocessor],
                                 warmup_shapes=call.shapes(self.preprocessor.seq_length))

    def settings(self):
        """What `save_pretrained` writes beside the weights (config.json's
        `question_answerer` section)."""
        return checkpoint.QuestionAnswererSettings(
            seq_length=self.preprocessor.seq_length,
            **{key: getattr(self, key) for key in SETTINGS})

    # === Keras plumbing ===

    def head_config(self):
        return {**super().head_config(),
                **{key: getattr(self, key) for key in SETTINGS if key != "dropout"}}


def _first_answer(answer, i):
    """`(text, answer_start)` of the first answer of `y[i]`; `("", -1)` for none."""
    if not isinstance(answer, dict):
        raise TypeError(f"y[{i}] is {type(answer).__name__} ({answer!r:.40}): give each "
                        f"answer as {ANSWER_FORM}.")
    missing = sorted({"text", "answer_start"} - set(answer))
    if missing:
        raise ValueError(f"y[{i}] has no {missing}: give each answer as {ANSWER_FORM}.")
    texts, starts = answer["text"], answer["answer_start"]
    texts = [texts] if isinstance(texts, (str, bytes)) else texts
    starts = [starts] if np.ndim(starts) == 0 and not isinstance(starts, (list, tuple)) else starts
    if not hasattr(texts, "__len__") or not hasattr(starts, "__len__"):
        raise TypeError(f"y[{i}]: 'text' and 'answer_start' must be lists (or one str and one "
                        f"int), got {type(texts).__name__} and {type(starts).__name__}.")
    texts, starts = list(texts), list(starts)
    if len(texts) != len(starts):
        raise ValueError(f"y[{i}] has {len(texts)} texts but {len(starts)} answer_starts.")
    if not texts:
        return "", -1
    text, start = texts[0], starts[0]
    text = text.decode("utf-8") if isinstance(text, bytes) else text
    if not isinstance(text, str):
        raise TypeError(f"y[{i}]['text'] holds {type(text).__name__} ({text!r:.40}), not str.")
    if isinstance(start, bool) or not isinstance(start, (int, np.integer)):
        raise TypeError(f"y[{i}]['answer_start'] holds {start!r:.40}, not a character offset "
                        f"(int).")
    return text, int(start)


def _dataset_kind(spec):
    """`(has answers, batched)` of a dataset of `(question, context)` or
    `((question, context), {"text", "answer_start"})`."""
    answer = None
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], tuple):
        spec, answer = spec
    if not (isinstance(spec, tuple) and len(spec) == 2):
        raise TypeError(f"x: the dataset must yield (question, context) or ((question, "
                        f"context), answer), got {spec}.")
    for s in spec:
        if not isinstance(s, tf.TensorSpec) or s.dtype != tf.string:
            raise TypeError(f"x: the dataset yields {getattr(s, 'dtype', s)!r} texts, not "
                            f"strings: {IDS_HINT}.")
    if answer is not None:
        if (not isinstance(answer, dict) or set(answer) != {"text", "answer_start"}
                or answer["text"].dtype != tf.string
                or not answer["answer_start"].dtype.is_integer):
            raise TypeError(f"x: the dataset's answers must be {{'text': str, 'answer_start': "
                            f"int}} (one answer per question; '' and -1 for none), got "
                            f"{answer}.")
    return answer is not None, spec[0].shape.rank == 1


def _pipeline_answers(out, version_2):
    """The answer function's NumPy outputs -> one pipeline dict per question."""
    results = []
    for j, answer in enumerate(out["answer"].tolist()):
        answer = answer.decode("utf-8", "replace")
        scores = out["nbest_scores"][j][out["nbest_start_char"][j] >= 0]
        if version_2:
            scores = np.append(scores, out["null_score"][j])  # the null answer, last
        probabilities = np.exp(scores - scores.max()) if len(scores) else scores
        probabilities = probabilities / probabilities.sum() if len(scores) else probabilities
        # A span can be empty text (a lone space token, offsets (91, 91)): an
        # answer all the same; only start_char -1 is the null answer.
        if out["start_char"][j] >= 0:
            results.append({"answer": answer, "score": float(probabilities[0]),
                            "start": int(out["start_char"][j]), "end": int(out["end_char"][j])})
        else:
            results.append({"answer": "", "score": float(probabilities[-1])
                            if version_2 else 0.0, "start": 0, "end": 0})
    return results
