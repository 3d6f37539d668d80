"""Extractive question answering (SQuAD v1.1 and v2.0), windows and span search in the graph.

Features are `[CLS] question [SEP] context window [SEP]`: the question is cut
to `max_query_length` wordpieces, and a long context is covered by windows
of `seq_length - 3 - len(question)` wordpieces (RoBERTa's `<s> question
</s></s> window </s>`: `- 4`) that start `doc_stride` wordpieces apart
(BERT's `run_squad.py` rule), or, with `doc_overlap` (Hugging
Face's `stride`), that share `doc_overlap` wordpieces with the next window. Everything from raw strings
to the answer is TensorFlow ops (`QuestionAnsweringTask.answer`): tokenizing
with byte offsets (`tokenize_with_offsets`), windowing, packing, the model,
and the span search over all windows of a question. The same function runs
in `tf.data` (training windows), in `predict` / dev evaluation, and inside
the exported SavedModel, so TF Serving answers exactly like `predict`.

Training: one window is one example (steps per epoch = windows / batch).
Its targets are the gold answer's first and last wordpiece inside the
window, or [CLS] (position 0) when the answer is not (wholly) inside it or
the question has none (v2.0).

The windows, targets, span search (the max-context rule, n-best, v2.0 null
answers) and answer function are `tfbert.models.answer_spans`, shared with
`tfbert.models.question_answerer.QuestionAnswerer`, the model this task
trains (`build_model`), so a user's `fit` and `tools/finetune.py` train one
model class with one export; the results and the official prediction files
are `tfbert.tasks.squad_predictions`.

Dev scores use the official scripts' rules and names (`tfbert.metrics.squad`),
computed like `evaluate-v2.0.py dev.json predictions.json --na-prob-file
null_odds.json`. `main_metric` is `f1`, the F1 of the answers the model
actually gives (thresholded at `null_score_diff_threshold`); `best_f1`,
the F1 at the best threshold found on dev, is reported next to it.

Example:
>>> task = QuestionAnsweringTask(QuestionAnsweringConfig(seq_length=16, doc_stride=4,
...                                                     max_query_length=4))
>>> _ = task.prepare(BertPreprocessor(vocab_file="tests/data/pretraining/vocab.txt"))
>>> w = task.windows(tf.constant(["Who?"]), tf.constant(["one two three four five six "
...                                                      "seven eight nine ten eleven"]))
>>> w["window_start"].numpy().tolist(), w["window_length"].numpy().tolist()
([0, 4, 8, 12, 16], [10, 10, 10, 10, 8])
"""

import dataclasses
from typing import Optional

import tensorflow as tf

from tfbert.data.batching import window_stream
from tfbert.data import validation_split
from tfbert.data.squad import read_squad
from tfbert.config_loader import at_least, in_range, validate
from tfbert.export.compiled_call import compiled_call
from tfbert.export.task_model import export_task_model
from tfbert.metrics.squad import squad_scores
from tfbert.text.raw_texts import text_column
from tfbert.models.answer_spans import (SPAN_LOSS_WEIGHTS, answer_strings, question_windows,
                                        search_spans, span_loss, window_targets)
from tfbert.models.question_answerer import QuestionAnswerer
from tfbert.tasks.base import Task
from tfbert.tasks.squad_predictions import question_result, write_prediction_files
from tfbert.text.windows import pair_specials
from tfbert.train import recipe


@dataclasses.dataclass
class QuestionAnsweringConfig:
    """Data, windowing and answer settings (the `task:` section of a finetune YAML)."""

    train_file: str = ""
    dev_file: str = ""
    seq_length: int = at_least(5, 384)  # [CLS] question [SEP] context [SEP]
    # Windows over a long context, in either convention:
    # doc_stride: google-research/bert's `--doc_stride`, context wordpieces
    #   between window starts;
    # doc_overlap: Hugging Face's `stride` (`run_qa.py --doc_stride`),
    #   context wordpieces shared by neighbouring windows. Set, it replaces
    #   doc_stride: windows then start `budget - doc_overlap` apart.
    doc_stride: int = at_least(1, 128)
    doc_overlap: Optional[int] = at_least(0, None)
    max_query_length: int = at_least(1, 64)  # question wordpieces kept
    max_answer_length: int = at_least(1, 30)  # wordpieces
    n_best_size: int = at_least(1, 20)
    null_score_diff_threshold: float = 0.0  # v2.0: answer "" when null - best > this
    version_2: Optional[bool] = None  # default: detected from the data (`is_impossible`)
    # Windows in one call of the answer function / exported model: a clear
    # error instead of running out of memory on a huge context.
    max_windows: int = at_least(1, 1024)
    predict_batch_size: int = at_least(1, 16)  # questions per call in `predict` and dev evaluation
    dropout: float = in_range(0.0, 1.0, 0.0, high_open=True)

    def __post_init__(self):
        validate(self)
        self.check_room(3)  # BERT's packing; `prepare` checks again with the preprocessor's

    def check_room(self, specials):
        """A window holds the question, `specials` special tokens (3 for BERT's
        packing, 4 for RoBERTa's `<s> q </s></s> c </s>`) and some context."""
        budget = self.seq_length - specials - self.max_query_length  # context wordpieces
        if budget < 1:
            raise ValueError(f"QuestionAnsweringConfig.max_query_length: {self.max_query_length} "
                             f"must be in [1, seq_length - {specials + 1} = "
                             f"{self.seq_length - specials - 1}] (room for the context beside "
                             f"{specials} special tokens).")
        if self.doc_overlap is not None and self.doc_overlap >= budget:
            raise ValueError(f"QuestionAnsweringConfig.doc_overlap: {self.doc_overlap} must be in "
                             f"[0, seq_length - {specials} - max_query_length = {budget}) (each "
                             "window must move on).")


class QuestionAnsweringTask(Task):
    """SQuAD v1.1 / v2.0 with `QuestionAnswerer` (see the module docstring)."""

    name = "squad"
    config_class = QuestionAnsweringConfig
    text_inputs = ("question", "context")
    main_metric = "f1"
    min_train_steps = recipe.QUESTION_ANSWERING_MIN_STEPS  # the recipe's step floor

    def __init__(self, config=None):
        super().__init__(config)
        self.version_2 = self.config.version_2
        self._data = {}
        self._num_windows = {}
        self._answer_fns = {}

    # === Data ===

    def read(self, path):
        if not path:
            raise ValueError("squad: set task.train_file and task.dev_file (SQuAD JSON).")
        if path not in self._data:
            self._data[path] = read_squad(path)
        return self._data[path]

    def prepare(self, preprocessor):
        """Sets the preprocessor; v2.0 or v1.1 from the config or the data."""
        self.config.check_room(pair_specials(preprocessor))  # RoBERTa's packing has 4
        self.preprocessor = preprocessor
        if self.version_2 is None:
            paths = [p for p in (self.config.train_file, self.config.dev_file) if p]
            self.version_2 = any(self.read(p).version_2 for p in paths)
        return self

    def summary(self):
        c = self.config
        windows = (f"doc_stride {c.doc_stride}" if c.doc_overlap is None
                   else f"doc_overlap {c.doc_overlap}")
        return {"task": self.name, "version": "2.0" if self.version_2 else "1.1",
                "seq_length": c.seq_length, "windows": windows}

    def window_settings(self):
        """The keyword arguments of `answer_spans.question_windows`."""
        c = self.config
        return {"seq_length": c.seq_length, "max_query_length": c.max_query_length,
                "doc_stride": c.doc_stride, "doc_overlap": c.doc_overlap,
                "max_windows": c.max_windows,
                "error": (f"squad: the contexts need more than max_windows={c.max_windows} "
                          "windows; send fewer or shorter contexts per call (or raise "
                          "task.max_windows)")}

    def search_settings(self):
        """The keyword arguments of `answer_spans.search_spans`."""
        c = self.config
        return {"max_answer_length": c.max_answer_length, "n_best_size": c.n_best_size,
                "version_2": bool(self.version_2),
                "null_score_diff_threshold": c.null_score_diff_threshold}

    def windows(self, question, context):
        """Windows of a batch of (question, context) strings, graph ops only
        (`answer_spans.question_windows`: `inputs`, `row`, `window_start`,
        `window_length`, `context_offset`, `piece_start`, `piece_limit`, ...)."""
        return question_windows(self.preprocessor, question, context, **self.window_settings())

    def _targets(self, w, answer_start, answer_end):
        """Start/end positions `[windows]` of the answer (byte range) in each
        window; 0 ([CLS]) outside it or for no answer (start -1)."""
        return window_targets(w, answer_start, answer_end)

    def _training_windows(self, question, context, answer_start, answer_end):
        w = self.windows(question, context)
        return w["inputs"], self._targets(w, answer_start, answer_end)

    def _slices(self, path):
        examples = self.read(path).examples
        return (tf.constant([e.question for e in examples]),
                tf.constant([e.context for e in examples]),
                tf.constant([e.answer_bytes[0] for e in examples], tf.int64),
                tf.constant([e.answer_bytes[1] for e in examples], tf.int64))

    def dataset(self, path, batch_size, training=False, seed=0):
        """`(inputs, {"start_logits": pos, "end_logits": pos})` batches of windows."""
        slices = self._slices(path)
        questions = tf.data.Dataset.from_tensor_slices(slices)
        if not training:
            return window_stream(questions, self._training_windows, batch_size)
        # Windows of one question are neighbours: mix them (no bigger than an epoch).
        return window_stream(questions, self._training_windows, batch_size,
                             len(self.read(path)), self.num_examples(path), seed,
                             self.drop_remainder, shuffle_buffer=2048)

    def num_examples(self, path):
        """Training windows in `path` (one window is one training example)."""
        if path not in self._num_windows:
            q, c, _, _ = self._slices(path)
            ds = tf.data.Dataset.from_tensor_slices((q, c)).batch(64)
            self._num_windows[path] = int(sum(
                int(tf.reduce_sum(self.windows(qb, cb)["num_windows"])) for qb, cb in ds))
        return self._num_windows[path]

    def split_validation(self, path, out_dir, fraction, seed):
        """Paragraphs held out: no context on both sides."""
        return validation_split.split_squad(path, out_dir, fraction, seed)

    # === Model, loss, training ===

    def build_model(self, encoder):
        """The `QuestionAnswerer` a user's `fit` trains (same head, same answers)."""
        c = self.config
        return QuestionAnswerer(
            encoder, self.preprocessor, doc_stride=c.doc_stride, doc_overlap=c.doc_overlap,
            max_query_length=c.max_query_length, max_answer_length=c.max_answer_length,
            n_best_size=c.n_best_size, null_score_diff_threshold=c.null_score_diff_threshold,
            version_2=bool(self.version_2), max_windows=c.max_windows, dropout=c.dropout)

    def loss(self):
        return span_loss()

    def build_trainable(self, model, optimizer, train):
        # BERT's loss is the mean of the start and end cross-entropies.
        model.compile(optimizer=optimizer, loss=self.loss(), loss_weights=SPAN_LOSS_WEIGHTS,
                      metrics=None, jit_compile=train.jit_compile)
        return model

    # === The answer function (graph ops; predict, evaluation and export) ===

    def answer(self, model, question, context, call=None):
        """Raw strings `[batch]` -> dict of answers (see `export` for the names;
        `answer_spans.answer_strings`). `call`: how the model runs
        (`tfbert.export.compiled_call`; default the plain call)."""
        call = call or compiled_call(model, jit_compile=False)
        return answer_strings(call, self.preprocessor, question, context,
                              self.window_settings(), self.search_settings())

    def search(self, w, start_logits, end_logits, context):
        """`search_spans` with this task's settings."""
        return search_spans(w, start_logits, end_logits, context, **self.search_settings())

    def answer_function(self, model):
        """The traced `answer` for `model` (one per model; string shapes `[None]`)."""
        key = id(model)
        if key not in self._answer_fns:
            spec = tf.TensorSpec([None], tf.string)
            self._answer_fns[key] = tf.function(
                lambda q, c: self.answer(model, q, c), input_signature=[spec, spec])
        return self._answer_fns[key]

    # === Raw strings: prediction ===

    def predict(self, model, questions, contexts, batch_size=None):
        """One dict per question: `answer`, `score`, `start_char`, `end_char`
        (characters; -1 for no answer), `no_answer_score` (v2.0) and `nbest`
        (list of `text`, `score`, `start_logit`, `end_logit`, `start_char`,
        `end_char`), from the same graph function as the export."""
        questions = text_column(questions, "questions").tolist()
        contexts = text_column(contexts, "contexts").tolist()
        if len(questions) != len(contexts):
            raise ValueError(f"squad: {len(questions)} questions but {len(contexts)} contexts.")
        fn = self.answer_function(model)
        size = self.config.predict_batch_size if batch_size is None else (
            self.check_batch_size(batch_size))
        results = []
        for i in range(0, len(questions), size):
            try:
                out = fn(tf.constant(questions[i: i + size], tf.string),
                         tf.constant(contexts[i: i + size], tf.string))
            except tf.errors.InvalidArgumentError as e:
                raise ValueError(f"squad: questions {i}..{i + size - 1}: {e.message.splitlines()[0]}"
                                 ) from None
            out = {k: v.numpy() for k, v in out.items()}
            for j in range(len(out["answer"])):
                results.append(question_result(out, j))
        return results

    # === Evaluation ===

    def eval_data(self, path, batch_size):
        """`(SquadData, gold)`: the dev questions and id -> gold answer texts."""
        data = self.read(path)
        return data, {e.id: list(e.answers) for e in data.examples}

    def evaluate(self, model, dev):
        data, gold = self.check_dev(dev)
        results = self.predict(model, [e.question for e in data.examples],
                               [e.context for e in data.examples])
        return self.score(results, dev)

    def score(self, results, reference):
        """Official SQuAD metrics of `predict` results (list, in dev order)."""
        data, gold = reference
        ids = [e.id for e in data.examples]
        predictions = {q: r["answer"] for q, r in zip(ids, results)}
        null_odds = ({q: r["no_answer_score"] for q, r in zip(ids, results)}
                     if self.version_2 else None)
        return squad_scores(gold, predictions, null_odds, version=2 if self.version_2 else 1)

    def write_predictions(self, model, dev, out_dir):
        """`predictions.json`, `nbest_predictions.json` and (v2.0)
        `null_odds.json` in the official formats; returns the paths."""
        data, _ = dev
        results = self.predict(model, [e.question for e in data.examples],
                               [e.context for e in data.examples])
        return write_prediction_files([e.id for e in data.examples], results, self.version_2,
                                      out_dir)

    # === Export ===

    def export(self, model, export_dir, jit_compile=False):
        """SavedModel: `serving_default(question, context)` -> `answer`
        (string; "" for no answer), `score` (best span's start+end logit),
        `start_char`, `end_char` (characters; -1 for no answer), v2.0:
        `no_answer_score` (null - best: the null odds) and `null_score`;
        also `nbest_answers`, `nbest_scores`, `nbest_start_logits`,
        `nbest_end_logits`, `nbest_start_char`, `nbest_end_char`
        `[batch, n_best_size]` and `num_windows`. `serving_ids` -> the
        per-position `start_logits`, `end_logits`. `jit_compile=True`: the
        model runs under XLA at bucketed shapes (`tfbert.export.compiled_call`;
        TF Serving needs `--xla_cpu_compilation_enabled=true`)."""
        call = compiled_call(model, jit_compile)

        def serve_ids(inputs):
            return call(inputs)

        def serve_text(texts):
            return self.answer(model, texts["question"], texts["context"], call=call)

        return export_task_model(export_dir, serve_text, serve_ids, self.text_inputs,
                                 track=[model, self.preprocessor],
                                 warmup_shapes=call.shapes(self.preprocessor.seq_length))
