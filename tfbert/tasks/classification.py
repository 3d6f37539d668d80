"""Sentence(-pair) classification and regression (GLUE style).

Reads TSV/CSV/JSONL with column flags, puts dropout + dense on the pooled
output, and scores with GLUE's metrics: accuracy, F1 of the positive class
(two classes), macro-F1 (more), Matthews correlation; Pearson/Spearman for
regression.

One module, over 400 lines, by design: it is one task class whose methods are
the Task contract for this task (reading, windows, scoring, predict,
export); the mechanisms they call are already their own modules
(`tfbert.text.windows`, `tfbert.data.batching`, `tfbert.metrics.glue`), and
cutting the class into mixins would only scatter one idea.

Example:
>>> task = ClassificationTask(ClassificationConfig(
...     train_file="tests/data/finetune/sentiment_train.tsv",
...     dev_file="tests/data/finetune/sentiment_dev.tsv",
...     text_column="sentence", label_column="label", seq_length=32))
>>> _ = task.prepare(BertPreprocessor(vocab_file="tests/data/pretraining/vocab.txt",
...                                   seq_length=32))
>>> task.label_list
['negative', 'positive']
>>> task.num_examples(task.config.train_file)
160
"""

import dataclasses
from typing import Optional, Union

import numpy as np
import tensorflow as tf

from tfbert.data import readers, validation_split
from tfbert.data.batching import window_stream
from tfbert.config_loader import at_least, in_range, one_of, validate
from tfbert.export.compiled_call import compiled_call
from tfbert.export.task_model import export_task_model
from tfbert.metrics import glue
from tfbert.models.text_classifier import (WINDOW_POOLING, TextClassifier,
                                           classification_outputs, head_loss, head_metrics,
                                           pooled_logits, regression_outputs, text_windows)
from tfbert.text.raw_texts import text_column
from tfbert.tasks.text_task import TextTask
from tfbert.tasks.multi_label import MultiLabelClassification
from tfbert.text.packer import trim_to_bucket
from tfbert.text.windows import (WINDOW_MODES, check_doc_overlap, check_pair_length,
                                 pair_specials, window_batches)

Column = Optional[Union[str, int]]


@dataclasses.dataclass
class ClassificationConfig:
    """Data and head settings (the `task:` section of a finetune YAML)."""

    train_file: str = ""
    dev_file: str = ""
    format: Optional[str] = None  # tsv | csv | jsonl; default from the extension
    header: bool = True  # TSV/CSV: first line names the columns
    text_column: Column = "sentence"
    text_b_column: Column = None  # set for sentence pairs
    label_column: Column = "label"
    label_list: Optional[list] = None  # default: sorted labels of the training file
    regression: bool = False
    seq_length: int = at_least(2, 128)
    # Pad each batch to its longest text rounded up to a bucket width
    # (`tfbert.text.packer.BUCKETS`), not to seq_length: same outputs, less
    # work on short texts. False: every batch is seq_length wide.
    bucketing: bool = True
    dropout: float = in_range(0.0, 1.0, 0.1, high_open=True)
    main_metric: Optional[str] = None  # default: accuracy, or corr for regression
    # Texts longer than seq_length (`tfbert.text.windows`): "truncate" cuts
    # them; "windows" reads every window (training: each window is an example
    # with its text's label; prediction: the windows' logits pooled per text).
    long_text: str = one_of(WINDOW_MODES, "truncate")
    # mean: the whole text counts; max: one decisive passage is enough; first:
    # the opening decides (titles, abstracts), later windows only cost time.
    window_pooling: str = one_of(WINDOW_POOLING, "mean")
    doc_stride: Optional[int] = at_least(1, None)  # window step; None: half a window
    doc_overlap: Optional[int] = at_least(0, None)  # or: wordpieces shared by neighbours
    max_windows: int = at_least(1, 64)  # per text; the rest of a longer text is not read
    # --- Multi-label (`tfbert.tasks.multi_label`): any number of labels per text ---
    multi_label: bool = False
    label_separator: str = ","  # TSV/CSV: between the labels of one example
    # Thresholds chosen on the validation data: one for all labels (by
    # micro-F1) or one per label (by its F1). `threshold`: fixed instead.
    threshold_mode: str = one_of(("global", "per_label"), "global")
    threshold: Optional[float] = dataclasses.field(
        default=None, metadata={"check": (lambda v: 0 < v < 1, "in (0, 1)")})

    def __post_init__(self):
        validate(self)
        if self.label_list:
            names = [str(l) for l in self.label_list]
            twice = sorted({l for l in names if names.count(l) > 1})
            if twice:
                raise ValueError(f"ClassificationConfig.label_list: {twice} appear(s) more than "
                                 f"once in {names}.")
        if self.multi_label and not self.label_separator:
            raise ValueError("ClassificationConfig.label_separator: must not be empty.")


class ClassificationTask(TextTask):
    """Classification (or regression with `config.regression=True`) on [CLS]."""

    name = "classification"
    config_class = ClassificationConfig

    @classmethod
    def from_config(cls, config=None):
        """The task `config` asks for: `multi_label: true` is the multi-label task
        (tfbert/tasks/multi_label.py), chosen here, by name, not by `__new__`."""
        multi = (config.get("multi_label") if isinstance(config, dict)
                 else getattr(config, "multi_label", False))
        if cls is ClassificationTask and multi is True:
            return MultiLabelClassificationTask(config)
        return cls(config)

    def __init__(self, config=None, regression=None):
        super().__init__(config)
        if self.config.multi_label and not isinstance(self, MultiLabelClassification):
            raise ValueError(f"{type(self).__name__} with multi_label: true: build it with "
                             f"{type(self).__name__}.from_config(config) (or "
                             "MultiLabelClassificationTask), as tools/finetune.py does.")
        if regression is not None:
            self.config = dataclasses.replace(self.config, regression=bool(regression))
        config = self.config
        self.regression = config.regression
        self.pairs = config.text_b_column is not None
        self.label_list = [str(l) for l in config.label_list] if config.label_list else None
        self.main_metric = config.main_metric or ("corr" if self.regression else "accuracy")
        self.text_inputs = ("text", "text_b") if self.pairs else ("text",)
        self.windowed = config.long_text == "windows"
        self._num_windows = {}
        self._text_logits = {}

    @property
    def num_outputs(self):
        return 1 if self.regression else len(self.label_list)

    # === Data ===

    def read(self, path):
        """`(examples, targets)`; targets are class ids or float scores."""
        c = self.config
        examples = readers.read_labeled_text(
            path, text_column=c.text_column, label_column=c.label_column,
            text_b_column=c.text_b_column, format=c.format, header=c.header)
        if self.regression:
            return examples, np.asarray(readers.parse_float_labels(examples), np.float32)
        return examples, np.asarray(readers.encode_labels(examples, self.label_list), np.int32)

    def prepare(self, preprocessor):
        """Sets the preprocessor; without a label list, takes the training file's labels."""
        self.check_lengths(preprocessor)
        self.preprocessor = preprocessor
        if not self.regression and self.label_list is None:
            if not self.config.train_file:
                raise ValueError("Classification needs `label_list` or a `train_file` to read "
                                 "the labels from.")
            c = self.config
            examples = readers.read_labeled_text(
                c.train_file, c.text_column, c.label_column, c.text_b_column, c.format, c.header)
            self.label_list = sorted(set(examples.label))
        if not self.regression and len(self.label_list) < 2:
            raise ValueError(f"Classification needs at least 2 labels, got {self.label_list}.")
        return self

    def check_lengths(self, preprocessor):
        """seq_length holds a pair's special tokens; windows move on (one line each)."""
        if self.pairs:
            check_pair_length(preprocessor, self.config.seq_length,
                              key="ClassificationConfig.seq_length")
        if self.windowed:
            check_doc_overlap(self.config.doc_overlap, preprocessor, self.config.seq_length,
                              self.pairs, key="ClassificationConfig.doc_overlap")

    def _texts(self, examples):
        texts = {"text": examples.text}
        if self.pairs:
            texts["text_b"] = examples.text_b
        return texts

    def dataset(self, path, batch_size, training=False, seed=0):
        """`(inputs, targets)` batches; training ones are shuffled, repeated and
        full (static shapes for XLA)."""
        examples, targets = self.read(path)
        if self.regression:
            targets = targets[:, None]
        ds = tf.data.Dataset.from_tensor_slices((self._texts(examples), targets))
        if self.windowed:
            return self._window_dataset(ds, path, batch_size, training, seed)
        ds = self.batch(ds, batch_size, len(examples), training, seed)
        ds = ds.map(lambda t, y: (self.encode(t), y), num_parallel_calls=tf.data.AUTOTUNE)
        return ds.prefetch(tf.data.AUTOTUNE)

    # === Long texts: windows (`tfbert.text.windows`) ===

    def windows(self, texts):
        """`(spans, inputs)`: the windows of a dict of string tensors `[batch]`
        (`window_spans`) and their packed int32 `[windows, seq_length]` inputs.
        Pairs: the second text is windowed; the first, cut to half of what the
        special tokens leave, goes before every window (as a question before a
        context in QA). The same function as `TextClassifier.windows`
        (`text_windows`)."""
        c = self.config
        return text_windows(self.preprocessor, [texts[n] for n in self.text_inputs],
                            c.seq_length, c.doc_stride, c.doc_overlap, c.max_windows)

    def _window_dataset(self, ds, path, batch_size, training, seed):
        """Batches of windows, each with its text's target."""
        def to_windows(texts, targets):
            spans, inputs = self.windows(texts)
            return inputs, tf.gather(targets, spans["row"])

        trim = (lambda x, y: (trim_to_bucket(x), y)) if self.config.bucketing else None
        if not training:
            return window_stream(ds, to_windows, batch_size, finish=trim)
        return window_stream(ds, to_windows, batch_size, len(self.read(path)[0]),
                             self.num_examples(path), seed, self.drop_remainder, trim)

    def text_logits(self, model, texts, call=None):
        """Graph ops: a dict of string tensors `[batch]` -> logits `[batch, outputs]`,
        one row per text however long (its windows' logits pooled with
        `config.window_pooling`). `call`: how the model runs."""
        call = call or compiled_call(model, jit_compile=False)
        if not self.windowed:
            return call(self.encode(texts))
        return pooled_logits(call, self.windows(texts), self.config.window_pooling)

    def window_text_batches(self, texts, batch_size):
        """Batches (dicts of string tensors) of the texts in order, each with at
        most `batch_size` windows (a text with more is a batch of its own)."""
        return [{n: tf.constant(list(texts[n][start:end]), tf.string) for n in self.text_inputs}
                for start, end in window_batches(self.windows_per_text(texts), batch_size)]

    def windows_per_text(self, texts):
        """NumPy int `[n]`: each text's windows (`windows`: a pair's first text
        goes before every window, so its second text has more of them)."""
        ds = tf.data.Dataset.from_tensor_slices(
            {n: tf.constant(list(texts[n]), tf.string) for n in self.text_inputs})
        counts = [self.windows(t)[0]["num_windows"].numpy() for t in ds.batch(256)]
        return np.concatenate(counts) if counts else np.zeros(0, np.int64)

    def _logits(self, model, texts_dataset):
        """NumPy logits of a dataset of string-dict batches (windows pooled per text)."""
        key = id(model)
        if key not in self._text_logits:
            spec = {n: tf.TensorSpec([None], tf.string) for n in self.text_inputs}
            self._text_logits[key] = tf.function(lambda t: self.text_logits(model, t),
                                                 input_signature=[spec])
        fn = self._text_logits[key]
        out = [fn(batch).numpy() for batch in texts_dataset]
        return np.concatenate(out) if out else np.zeros((0, self.num_outputs), np.float32)

    def num_examples(self, path):
        """Training examples in `path`: texts, or with windows, their windows."""
        examples = self.read(path)[0]
        if not self.windowed:
            return len(examples)
        if path not in self._num_windows:
            self._num_windows[path] = int(self.windows_per_text(self._texts(examples)).sum())
        return self._num_windows[path]

    def split_validation(self, path, out_dir, fraction, seed):
        c = self.config
        return validation_split.split_records(path, out_dir, fraction, seed, c.format, c.header)

    def summary(self):
        """Label counts and how many training examples get truncated."""
        examples, targets = self.read(self.config.train_file)
        out = {"task": self.name}
        if not self.regression and targets.ndim == 1:
            counts = np.bincount(targets, minlength=len(self.label_list))
            out["labels"] = ", ".join(f"{l}: {c}" for l, c in zip(self.label_list, counts))
        # [CLS] a [SEP] (b [SEP]): 2 or 3 positions are not text (RoBERTa's pair: 4).
        budget = self.config.seq_length - (pair_specials(self.preprocessor) if self.pairs else 2)
        lengths = np.zeros(len(examples), np.int64)
        for column in ("text", "text_b") if self.pairs else ("text",):
            texts = getattr(examples, column)
            for i in range(0, len(texts), 512):
                pieces = self.preprocessor.tokenize(tf.constant(texts[i:i + 512]))
                lengths[i:i + 512] += pieces.merge_dims(1, 2).row_lengths().numpy()
        truncated = int((lengths > budget).sum())
        if self.windowed:
            out["windows"] = (f"{self.num_examples(self.config.train_file)} for {len(examples)} "
                              f"texts ({truncated} longer than one window)")
        else:
            out["truncated"] = f"{truncated} of {len(examples)} (longer than seq_length)"
        return out

    # === Model, loss, metrics ===

    def build_model(self, encoder):
        """The `TextClassifier` a user's `fit` trains (same head, same outputs,
        same windows over long texts)."""
        c = self.config
        return TextClassifier(encoder, self.preprocessor, num_classes=self.num_outputs,
                              label_list=None if self.regression else self.label_list,
                              multi_label=c.multi_label, threshold=c.threshold or 0.5,
                              pairs=self.pairs, dropout=c.dropout, long_text=c.long_text,
                              doc_stride=c.doc_stride, doc_overlap=c.doc_overlap,
                              max_windows=c.max_windows, window_pooling=c.window_pooling)

    def loss(self):
        return head_loss(self.num_outputs)

    def metrics(self):
        return head_metrics(self.num_outputs)

    # === Evaluation ===

    def eval_data(self, path, batch_size):
        """`(inputs dataset, reference)` for `score`."""
        examples, targets = self.read(self.require_dev_file(path))
        batch_size = self.check_batch_size(batch_size)
        if self.windowed:  # raw strings: `evaluate` reads every window of each text
            return self.window_text_batches(self._texts(examples), batch_size), targets
        ds = tf.data.Dataset.from_tensor_slices(self._texts(examples)).batch(batch_size)
        ds = ds.map(self.encode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
        return ds, targets

    def dev_logits(self, model, dev):
        """Logits `[texts, outputs]` of `eval_data`'s inputs (windows pooled per text)."""
        inputs, _ = self.check_dev(dev)
        if self.windowed:
            return self._logits(model, inputs)
        return np.asarray(model.predict(inputs, verbose=0))

    def evaluate(self, model, dev):
        return self.score(self.dev_logits(model, dev), dev[1])

    def score(self, logits, targets):
        """GLUE metrics of model outputs against the targets."""
        logits = np.asarray(logits)
        if self.regression:
            return glue.regression_metrics(targets, logits[:, 0])
        return glue.classification_metrics(targets, logits.argmax(-1), len(self.label_list))

    def write_predictions(self, model, dev, out_dir):
        """`dev_predictions.tsv`: line, gold and predicted label (or score)
        per dev example (read by `tfbert.visualize.draw_confusion`, i.e.
        `tools/visualize.py --kind=confusion`)."""
        import csv
        import os

        targets = dev[1]
        outputs = self.dev_logits(model, dev)
        path = os.path.join(out_dir, "dev_predictions.tsv")
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, delimiter="\t", lineterminator="\n")
            writer.writerow(["index", "gold", "predicted"])
            for i, (gold, out) in enumerate(zip(targets, outputs)):
                if self.regression:
                    writer.writerow([i, f"{float(gold):g}", f"{float(out[0]):g}"])
                else:
                    writer.writerow([i, self.label_list[int(gold)],
                                     self.label_list[int(np.argmax(out))]])
        return [path]

    # === Raw strings: prediction and export ===

    def outputs(self, logits):
        """Named outputs from logits (graph ops; shared by `predict` and the export)."""
        if self.regression:
            return regression_outputs(logits)
        return classification_outputs(logits, self.label_list)

    def text_columns(self, text, text_b=None):
        """`{"text": [...], "text_b": [...]}` of `predict`'s arguments (pairs need
        `text_b`), each a list of str checked as the strings models check theirs
        (a bare string, None or bytes that are not UTF-8 is one clear line)."""
        texts = {"text": text_column(text, "text").tolist()}
        if self.pairs:
            if text_b is None:
                raise ValueError("This task takes sentence pairs: pass text_b.")
            texts["text_b"] = text_column(text_b, "text_b").tolist()
            if len(texts["text_b"]) != len(texts["text"]):
                raise ValueError(f"text and text_b differ in length ({len(texts['text'])} and "
                                 f"{len(texts['text_b'])}).")
        return texts

    def predict_logits(self, model, texts, batch_size=64):
        """NumPy logits `[n, outputs]` of a dict of string lists (`text`,
        `text_b`): one row per text, its windows pooled with `long_text=windows`
        (then `batch_size` counts windows)."""
        batch_size = self.check_batch_size(batch_size)
        if self.windowed:
            return self._logits(model, self.window_text_batches(texts, batch_size))
        ds = tf.data.Dataset.from_tensor_slices(texts).batch(batch_size)
        return model.predict(ds.map(self.encode), verbose=0)

    def predict(self, model, text, text_b=None, batch_size=64):
        """NumPy outputs (`logits`, `probabilities`, `label` as str / `score`) for raw strings.
        With `long_text=windows`, `batch_size` counts windows: a call holds the
        windows of several texts, at most `batch_size` (or one text's)."""
        logits = self.predict_logits(model, self.text_columns(text, text_b), batch_size)
        out = {k: v.numpy() for k, v in self.outputs(tf.constant(logits)).items()}
        if "label" in out:
            out["label"] = np.array([s.decode() for s in out["label"]])
        return out

    def export(self, model, export_dir, jit_compile=False):
        """SavedModel: `serving_default(text[, text_b])` -> `logits`,
        `probabilities`, `label_id`, `label` (or `logits`, `score`).
        `jit_compile=True`: the model runs under XLA at bucketed shapes
        (`tfbert.export.compiled_call`; TF Serving needs
        `--xla_cpu_compilation_enabled=true`)."""
        call = compiled_call(model, jit_compile)

        def serve_ids(inputs):
            return self.outputs(call(inputs))

        def serve_text(texts):
            return self.outputs(self.text_logits(model, texts, call=call))

        return export_task_model(export_dir, serve_text, serve_ids, self.text_inputs,
                                 track=[model, self.preprocessor],
                                 warmup_shapes=call.shapes(self.preprocessor.seq_length))


class MultiLabelClassificationTask(MultiLabelClassification, ClassificationTask):
    """`ClassificationTask` with `multi_label: true` (`tfbert.tasks.multi_label`):
    `ClassificationTask.from_config(config)` builds it when the config says so."""


class RegressionTask(ClassificationTask):
    """`ClassificationTask` with one float output (MSE; Pearson/Spearman on dev)."""

    name = "regression"

    def __init__(self, config=None):
        super().__init__(config, regression=True)
