"""`TextClassifier`: a Keras classifier that takes raw strings, preprocessor attached.

keras-hub's `TextClassifier` habit on a tfbert encoder: `fit`, `evaluate` and
`predict` take texts (a list of str, a NumPy string array, a pandas Series, a
tuple of two of them for sentence pairs, or a `tf.data.Dataset` of strings);
the `BertPreprocessor` runs inside `tf.data` (each batch padded to a bucket
of its longest text). `compile()` with no arguments is the fine-tuning recipe
of `tfbert.train.recipe`: the head's loss and metrics, AdamW with warmup over
10% of the updates and linear decay to 0 over the updates that `fit` runs,
the learning rate by model size and the batch size by data size. Anything
passed to `compile` or `fit` instead (an optimizer, a loss, metrics,
callbacks, `batch_size`) is used as given.

One model for three kinds of head: `num_classes` labels (softmax), one score
(`num_classes=1`: regression, MSE), or `multi_label=True` (one sigmoid per
label, binary cross-entropy; a label is chosen at probability >= its
threshold). The model itself maps the three id tensors to logits, as
`BertClassifier` does, so `model.predict(texts)` gives logits; the dict of
ids (or a dataset of it) is passed through as it is.

Long texts: `long_text="truncate"` (the default) cuts a text at `seq_length`;
`long_text="windows"` reads every window of it (`tfbert.text.windows`), as
the classification task's `long_text: windows` does: in `fit` and `evaluate`
each window is one example with its text's label (the recipe's batch size
and schedule count windows), `predict` and the export give one row per
text, its windows' logits pooled with `window_pooling`. Pairs window the
second text; the first goes before every window.

Ways out: `save("m.keras")` / `keras.models.load_model` (the vocabulary
travels in the config); `export(dir)`: the strings-in SavedModel that
`tools/finetune.py` writes for the same head (`serving_default(text[,
text_b])`, `serving_ids`); `save_pretrained(dir)`: a tfbert checkpoint that
`from_pretrained` reads. `tfbert.tasks.classification` trains this same
class, so the scripts, the runner and a user's `fit` share the model.

Example (a random tiny encoder; `from_pretrained(dir)` for real weights):
>>> model = TextClassifier.from_preset("tiny", vocab_file="tests/data/pretraining/vocab.txt",
...                                    num_classes=2, seq_length=32)
>>> model.compile()
>>> history = model.fit(["a fine day", "a dreadful mess"], [1, 0], epochs=1, verbose=0)
>>> model.predict(["what a fine day"], verbose=0).shape
(1, 2)
"""

import os
import weakref

import keras
import numpy as np
import tensorflow as tf

from tfbert import checkpoint
from tfbert.atomic import check_replaceable
from tfbert.config_loader import check_int
from tfbert.data.batching import training_batches, window_stream
from tfbert.models.classifier import BertClassifier
from tfbert.models.strings_model import StringsModel
from tfbert.models.text_data import (check_batch_size, check_label_list, check_weights,
                                     dataset_columns, holds_ids, text_columns, text_dataset)
from tfbert.text.packer import trim_to_bucket, trim_to_longest
from tfbert.text.preprocessor import BertPreprocessor
from tfbert.text.windows import (WINDOW_MODES, check_doc_overlap, check_pair_length,
                                 first_text_length, pack_windows, pool_windows, window_batches)

# How a long text's windows' logits become its row (`long_text="windows"`).
WINDOW_POOLING = ("mean", "max", "first")

# Per model, the last texts counted and their windows: `fit` counts them for
# the schedule and again for its batches, and counting tokenizes every text.
_WINDOW_COUNTS = weakref.WeakKeyDictionary()


def classification_outputs(logits, label_list):
    """`logits`, `probabilities` (softmax), `label_id` and `label` (graph ops;
    the export and `predict` of the single-label heads)."""
    label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_id": label_id, "label": tf.gather(tf.constant(label_list), label_id)}


def regression_outputs(logits):
    return {"logits": logits, "score": logits[:, 0]}


def multi_label_outputs(logits, thresholds, label_list):
    """`logits`, `probabilities` (sigmoid), `label_mask` (1 = chosen at
    `thresholds`), `labels` (the chosen ones first, "" after: dense, as TF
    Serving's REST API needs) and `num_labels` (graph ops)."""
    num = len(label_list)
    probabilities = tf.sigmoid(logits)
    mask = tf.where(probabilities >= tf.cast(thresholds, probabilities.dtype), 1, 0)
    # Chosen labels first, each group in label-list order.
    order = tf.math.top_k(-((1 - mask) * num + tf.range(num)), k=num).indices
    count = tf.reduce_sum(mask, axis=-1)
    names = tf.gather(tf.constant(label_list), order)
    labels = tf.where(tf.range(num)[None, :] < count[:, None], names, "")
    return {"logits": logits, "probabilities": probabilities, "label_mask": mask,
            "labels": labels, "num_labels": count}


def text_windows(preprocessor, texts, seq_length, doc_stride=None, doc_overlap=None,
                 max_windows=None):
    """`(spans, inputs)`: the windows of a tuple of one or two string tensors
    `[batch]` (`window_spans`) and their packed int32 `[windows, seq_length]`
    inputs, at most `max_windows` per text. Pairs: the second text is
    windowed; the first, cut to `first_text_length`, goes before every window
    (as a question before a context in QA). The model's and the
    classification task's windows."""
    pieces = lambda t: preprocessor.tokenize(t).merge_dims(1, 2)
    prefix = None
    if len(texts) == 2:
        prefix = pieces(texts[0])[:, : first_text_length(preprocessor, seq_length)]
    return pack_windows(preprocessor, pieces(texts[-1]), seq_length, prefix=prefix,
                        doc_stride=doc_stride, doc_overlap=doc_overlap,
                        max_windows_per_text=max_windows)


def pooled_logits(call, windows, pooling):
    """Logits `[batch, outputs]`, one row per text, of `text_windows`' output:
    `call` (the model on ids) on every window, pooled per text."""
    spans, inputs = windows
    return pool_windows(call(trim_to_longest(inputs)), spans, pooling)


def head_loss(num_classes, multi_label=False):
    """The loss of a classifier head on logits (the recipe's, and the tasks')."""
    if multi_label:
        return keras.losses.BinaryCrossentropy(from_logits=True)
    if num_classes == 1:
        return keras.losses.MeanSquaredError()
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def head_metrics(num_classes, multi_label=False):
    if multi_label:  # per (text, label) decision at probability 0.5 (logit 0)
        return [keras.metrics.BinaryAccuracy(name="label_accuracy", threshold=0.0)]
    if num_classes == 1:
        return [keras.metrics.MeanAbsoluteError(name="mae")]
    return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]


@keras.saving.register_keras_serializable(package="tfbert")
class TextClassifier(StringsModel, BertClassifier):
    """Classification, regression or multi-label classification of raw strings.

    Args:
        encoder: a `BertEncoder` (pretrained or fresh).
        preprocessor: the `BertPreprocessor` of the encoder's vocabulary.
        num_classes: labels (1: regression, one score).
        multi_label: one sigmoid per label, any number per text.
        label_list: the names of the labels (default "0", "1", ...); `fit`
            also takes labels as these strings.
        threshold: multi-label decision threshold on each probability (a
            non-trainable `label_thresholds` variable, one per label).
        pairs: the model reads sentence pairs (`text`, `text_b`). None: the
            first `fit` (or `predict`) decides from its `x`.
        dropout: as `BertClassifier`.
        pooling: as `BertClassifier`.
        initializer_range: as `BertClassifier`.
        long_text: "truncate" (a text is cut at `seq_length`) or "windows"
            (every window of it is read; see module doc).
        doc_stride: wordpieces between window starts (None: half a window).
        doc_overlap: or, set (it wins), wordpieces shared by neighbouring
            windows.
        max_windows: windows read per text (the rest of a longer one is not).
        window_pooling: how a text's windows' logits become its row: "mean",
            "max" (one decisive passage is enough) or "first".
    """

    settings_section = "text_classifier"  # save_pretrained: config.json section

    def __init__(self, encoder, preprocessor, num_classes=2, multi_label=False,
                 label_list=None, threshold=0.5, pairs=None, dropout=0.1, pooling="cls",
                 initializer_range=None, long_text="truncate", doc_stride=None,
                 doc_overlap=None, max_windows=64, window_pooling="mean", **kwargs):
        # === Checks ===
        if not isinstance(preprocessor, BertPreprocessor):
            raise TypeError(f"{type(self).__name__} needs a BertPreprocessor, got "
                            f"{type(preprocessor).__name__}.")
        if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)):
            raise TypeError(f"num_classes must be an int, got {num_classes!r}.")
        if multi_label and num_classes < 2:
            raise ValueError(f"multi_label needs num_classes >= 2, got {num_classes}.")
        if not 0 < float(threshold) < 1:
            raise ValueError(f"threshold must be in (0, 1), got {threshold}.")
        if label_list is not None:
            label_list = check_label_list(label_list)
            if num_classes == 1 or len(label_list) != num_classes:
                raise ValueError(f"label_list has {len(label_list)} names for num_classes="
                                 f"{num_classes}" + (" (regression has no labels)."
                                                     if num_classes == 1 else "."))
        if long_text not in WINDOW_MODES:
            raise ValueError(f"long_text must be one of {WINDOW_MODES}, got {long_text!r}.")
        if window_pooling not in WINDOW_POOLING:
            raise ValueError(f"window_pooling must be one of {WINDOW_POOLING}, got "
                             f"{window_pooling!r}.")
        doc_stride = check_int(doc_stride, "doc_stride", 1, allow_none=True)
        doc_overlap = check_int(doc_overlap, "doc_overlap", 0, allow_none=True)
        max_windows = check_int(max_windows, "max_windows", 1)
        kwargs.setdefault("name", "text_classifier")
        super().__init__(encoder, num_classes, dropout=dropout,
                         initializer_range=initializer_range, pooling=pooling, **kwargs)
        # === Config ===
        self.preprocessor = preprocessor
        self.multi_label = bool(multi_label)
        self.label_list = label_list or (None if num_classes == 1 else
                                         [str(i) for i in range(num_classes)])
        self.threshold = float(threshold)
        self.pairs = pairs
        self.long_text = long_text
        self.doc_stride = doc_stride
        self.doc_overlap = doc_overlap
        self.max_windows = max_windows
        self.window_pooling = window_pooling
        self._check_lengths()
        self._auto_optimizer = False  # compile(optimizer="auto"): fit builds the optimizer
        if self.multi_label:
            # One threshold per label, saved with the weights: the fine-tuning
            # task chooses them on validation data (tfbert.tasks.multi_label).
            self.label_thresholds = keras.Variable(
                np.full(self.num_classes, self.threshold, np.float32), trainable=False,
                name="label_thresholds")

    # === Constructors ===

    @classmethod
    def from_pretrained(cls, checkpoint_dir, num_classes=None, seq_length=None, **kwargs):
        """From a tfbert checkpoint: a converted or pretrained encoder (a fresh
        head of `num_classes`, default 2), a converted `...ForSequenceClassification`
        (its head, as transformers loads it, unless `num_classes` differs), or
        one `save_pretrained` wrote (its head, labels and settings;
        `num_classes` must agree with the head). `seq_length`: as given, else
        the saved model's, else 128."""
        seq_length = check_int(seq_length, "seq_length", 2, allow_none=True)
        ckpt = checkpoint.read_checkpoint(checkpoint_dir)
        encoder = cls.pretrained_encoder(ckpt)
        settings = ckpt.text_classifier
        head = ckpt.prefixed_weights("classifier")
        if not settings and not (ckpt.huggingface and head and num_classes in (
                None, head["kernel"].shape[-1])):
            head = {}  # a fresh head: not a converted classifier of that size
        if head and not settings:
            num_classes = int(head["kernel"].shape[-1])
        elif head:
            num_classes = cls.head_size(head, num_classes, ckpt.weights_path, "classifier")
            for key in ("multi_label", "label_list", "threshold", "pairs", "pooling",
                        "long_text", "doc_stride", "doc_overlap", "max_windows",
                        "window_pooling"):
                kwargs.setdefault(key, getattr(settings, key))
            seq_length = seq_length or settings.seq_length
        preprocessor = BertPreprocessor.from_pretrained(checkpoint_dir,
                                                        seq_length=seq_length or 128)
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        model = cls(encoder, preprocessor, num_classes=2 if num_classes is None else num_classes,
                    **kwargs)
        if head:
            model.assign_head(head, ckpt.weights_path, "text classifier head")
        return model

    # === Strings in ===

    @property
    def text_inputs(self):
        """The exported signature's string inputs."""
        return ("text", "text_b") if self.pairs else ("text",)

    def preprocess(self, texts):
        """Graph ops: a tuple of string tensors `[batch]` -> the three id tensors,
        cut to a bucket of the batch's longest text."""
        return trim_to_bucket(self.preprocessor(list(_tuple(texts))))

    def _check_columns(self, count):
        if self.pairs is None:
            self.pairs = count == 2
            self._check_lengths()
        elif self.pairs != (count == 2):
            raise ValueError(f"This model reads {'pairs' if self.pairs else 'single texts'}; "
                             f"got {count} text column{'s' if count > 1 else ''}.")

    def _check_lengths(self):
        """seq_length holds a pair's special tokens; windows move on (one line each)."""
        if self.pairs:
            check_pair_length(self.preprocessor, self.preprocessor.seq_length)
        if self.windowed:
            check_doc_overlap(self.doc_overlap, self.preprocessor, self.preprocessor.seq_length,
                              self.pairs)

    # === Long texts: windows (`tfbert.text.windows`) ===

    @property
    def windowed(self):
        return self.long_text == "windows"

    def windows(self, texts):
        """Graph ops: `text_windows` of a tuple of string tensors `[batch]` at
        this model's settings."""
        return text_windows(self.preprocessor, _tuple(texts), self.preprocessor.seq_length,
                            self.doc_stride, self.doc_overlap, self.max_windows)

    def text_logits(self, texts, call=None):
        """Graph ops: a tuple of string tensors `[batch]` -> logits `[batch,
        outputs]`, one row per text however long (windows pooled with
        `window_pooling`). `call`: how the model runs on ids."""
        call = call or (lambda ids: self(ids, training=False))
        if not self.windowed:
            return call(self.preprocess(texts))
        return pooled_logits(call, self.windows(texts), self.window_pooling)

    def _traced(self, name, fn, count):
        """`fn(*texts)` of `count` string tensors `[batch]` as a `tf.function`,
        traced once per model (`compile` drops them: LoRA changes the model)."""
        return self.traced((name, count), fn, [tf.TensorSpec([None], tf.string)] * count)

    def traced_windows(self, count):
        """`windows` of `count` string tensors as a traced function: counting,
        every dataset's `map` and `predict` reuse one graph (tracing the
        tokenizer takes seconds)."""
        model = weakref.ref(self)  # the cache must not keep the model alive
        return self._traced("windows", lambda *t: model().windows(t), count)

    def windows_per_text(self, columns):
        """NumPy int64 `[n]`: the windows of each text of checked text columns."""
        last = _WINDOW_COUNTS.get(self)
        if last is not None and len(last[0]) == len(columns) and all(
                np.array_equal(a, b) for a, b in zip(last[0], columns)):
            return last[1]
        windows = self.traced_windows(len(columns))
        counts = np.concatenate([windows(*[tf.constant(list(c[i:i + 256]), tf.string)
                                           for c in columns])[0]["num_windows"].numpy()
                                 for i in range(0, len(columns[0]), 256)])
        _WINDOW_COUNTS[self] = (tuple(np.array(c, copy=True) for c in columns), counts)
        return counts

    def _windows_of(self, has_targets):
        """A function: a batch of texts `(texts[, targets[, weights]])` -> its
        windows `(ids[, targets[, weights]])`, each with its text's targets and weight."""
        def windows_of(texts, *rest):
            texts = _tuple(texts)
            spans, inputs = self.traced_windows(len(texts))(*texts)
            return (inputs, *[tf.gather(r, spans["row"]) for r in rest]) if rest else inputs

        if has_targets:
            return windows_of
        return lambda *texts: windows_of(texts)  # the elements are the tuple of text columns

    def window_batches(self, examples, columns, batch_size, shuffle, seed, drop_remainder):
        """Batches of windows of text `examples` (`text_dataset`'s), each window
        with its text's targets. `shuffle`: the windowed classification task's
        training stream (each epoch every window once, a text's windows mixed
        with others'), endless."""
        windows_of = self._windows_of(isinstance(examples.element_spec[0], tuple))
        total = int(self.windows_per_text(columns).sum())
        if shuffle:
            return window_stream(examples, windows_of, batch_size, len(columns[0]), total,
                                 seed, drop_remainder, _trim)
        # A known length: Keras warns "ran out of data" after a dataset of unknown length.
        return window_stream(examples, windows_of, batch_size, finish=_trim).apply(
            tf.data.experimental.assert_cardinality(-(-total // batch_size)))

    def targets(self, y, n):
        """`y` as the loss expects it, checked: class ids `[n]`, scores `[n, 1]`
        or a 0/1 matrix `[n, num_classes]`."""
        if y is None:
            raise ValueError("fit and evaluate need y: one label per text.")
        if hasattr(y, "to_numpy"):
            y = y.to_numpy()
        elif hasattr(y, "numpy"):
            y = y.numpy()
        if self.multi_label and _holds_label_lists(y):
            y = self._label_matrix(y)
        try:
            y = np.asarray(y)
        except ValueError:  # NumPy's "inhomogeneous shape": rows of different lengths
            raise ValueError("y has rows of different lengths: one label per text, or for "
                             "multi_label a 0/1 matrix or each text's list of label names."
                             ) from None
        if y.ndim == 0 or y.shape[0] != n:
            raise ValueError(f"y has {y.shape[0] if y.ndim else 'no'} rows for {n} texts.")
        if self.multi_label:
            if y.shape != (n, self.num_classes) or not np.isin(y, (0, 1)).all():
                raise ValueError(f"multi_label targets must be a 0/1 matrix of shape "
                                 f"({n}, {self.num_classes}), got {y.dtype} {y.shape}.")
            return y.astype(np.float32)
        if self.num_classes == 1:
            if y.dtype.kind not in "iuf" or y.size != n:
                raise ValueError(f"regression targets must be one number per text, got "
                                 f"{y.dtype} {y.shape}.")
            y = y.astype(np.float32).reshape(n, 1)
            if not np.isfinite(y).all():
                raise ValueError(f"y[{int(np.argmin(np.isfinite(y[:, 0])))}] is not finite.")
            return y
        if y.ndim != 1:
            raise ValueError(f"y must be one class id per text, shape ({n},), got {y.shape}"
                             + (" (a 0/1 matrix is for multi_label=True)." if y.ndim == 2
                                else "."))
        if y.dtype.kind in "USO":
            missing = [i for i, label in enumerate(y) if label is None or label != label]
            if missing:  # None, or NaN (pandas' missing value) in a column of names
                raise ValueError(f"y[{missing[0]}] is {y[missing[0]]}: a missing label (drop "
                                 "the row or fill it).")
            index = {label: i for i, label in enumerate(self.label_list)}
            unknown = sorted({str(label) for label in y} - set(index))
            if unknown:
                raise ValueError(f"labels {unknown[:5]} are not in label_list "
                                 f"{self.label_list}.")
            return np.array([index[str(label)] for label in y], np.int32)
        if y.dtype.kind == "f" and not np.isfinite(y).all():
            i = int(np.flatnonzero(~np.isfinite(y))[0])
            raise ValueError(f"y[{i}] is {y[i]}: a missing label (drop the row or fill it).")
        if y.dtype.kind not in "biuf":
            raise TypeError(f"y holds {y.dtype} values: one class id or label name per text.")
        if y.dtype.kind == "f" and not np.all(y == np.round(y)):
            raise ValueError("y holds fractions: class ids are integers (num_classes=1 is "
                             "regression).")
        bad = np.flatnonzero((y < 0) | (y >= self.num_classes))
        if len(bad):
            raise ValueError(f"y[{bad[0]}] is {y[bad[0]]}: class ids must be in "
                             f"[0, {self.num_classes}) (num_classes={self.num_classes}).")
        return y.astype(np.int32)

    def _label_matrix(self, y):
        """Multi-label `y` given as each text's list of label names: the 0/1
        matrix `[n, num_classes]` over `label_list`."""
        index = {label: i for i, label in enumerate(self.label_list)}
        out = np.zeros((len(y), self.num_classes), np.float32)
        for i, labels in enumerate(y):
            for label in labels:
                if str(label) not in index:
                    raise ValueError(f"y[{i}] names {label!r}, which is not in label_list "
                                     f"{self.label_list}.")
                out[i, index[str(label)]] = 1
        return out

    def text_batches(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False,
                     with_targets=True, seed=0, drop_remainder=False):
        """A `tf.data.Dataset` of `(ids, targets[, weights])` (or ids alone
        without targets) from texts, tokenized in its `map`. `shuffle`: the
        fine-tuning tasks' endless training stream (`training_batches`: a
        seeded shuffle each epoch, batches of similar length)."""
        batch_size = check_batch_size(batch_size, 32)
        if isinstance(x, tf.data.Dataset):
            if y is not None or sample_weight is not None:
                raise ValueError("x is a tf.data.Dataset: its elements carry the targets; "
                                 "y and sample_weight must be None.")
            count, has_targets, batched = dataset_columns(x)
            self._check_columns(count)
            if with_targets and not has_targets:
                raise ValueError("x is a dataset of texts only: fit and evaluate need "
                                 "(texts, targets) elements.")
            ds = x if batched else x.batch(batch_size)
            if self.windowed:
                ds = ds.map(self._windows_of(has_targets), num_parallel_calls=tf.data.AUTOTUNE)
                ds = ds.unbatch().batch(batch_size).map(_trim)
            elif has_targets:
                ds = ds.map(lambda t, *rest: (self.preprocess(t), *rest),
                            num_parallel_calls=tf.data.AUTOTUNE)
            else:
                ds = ds.map(lambda *t: self.preprocess(t), num_parallel_calls=tf.data.AUTOTUNE)
            return ds.prefetch(tf.data.AUTOTUNE)
        columns = text_columns(x)
        self._check_columns(len(columns))
        n = len(columns[0])
        targets = self.targets(y, n) if with_targets else None
        weights = check_weights(sample_weight, n) if with_targets else None
        if self.windowed:
            return self.window_batches(text_dataset(columns, targets, weights), columns,
                                       batch_size, shuffle, seed, drop_remainder)
        if shuffle:
            ds = text_dataset(columns, targets, weights)
            ds = training_batches(ds, n, batch_size, seed, self._num_tokens, drop_remainder)
        else:
            ds = text_dataset(columns, targets, weights).batch(batch_size)
        if targets is None:  # elements are the tuple of text columns: map unpacks it
            ds = ds.map(lambda *t: self.preprocess(t), num_parallel_calls=tf.data.AUTOTUNE)
        else:
            ds = ds.map(lambda t, *rest: (self.preprocess(t), *rest),
                        num_parallel_calls=tf.data.AUTOTUNE)
        return ds.prefetch(tf.data.AUTOTUNE)

    def _num_tokens(self, texts, *targets):
        tokenize = self.preprocessor.tokenizer.tokenize_flat
        return tf.add_n([tokenize(t).row_lengths() for t in _tuple(texts)])

    def num_texts(self, x):
        """Training examples in `x`: its texts, or with windows, their windows."""
        columns = text_columns(x)
        if not self.windowed:
            return len(columns[0])
        self._check_columns(len(columns))
        return int(self.windows_per_text(columns).sum())

    # === Training: compile() is the recipe (StringsModel) ===

    def default_loss(self):
        return head_loss(self.num_classes, self.multi_label)

    def default_metrics(self):
        return head_metrics(self.num_classes, self.multi_label)

    def dataset_checks(self):
        # A user's dataset is not read ahead: Keras' sparse cross-entropy finds an
        # id out of range in the graph, several lines deep (`dataset_check_errors`).
        return {"outside the valid range of": f"x: the dataset holds a class id outside "
                                              f"[0, {self.num_classes}) (num_classes="
                                              f"{self.num_classes})."}

    def best_epoch_monitor(self):
        # The head's own metric (head_metrics), as the runner chooses on its task metric.
        if self.multi_label:
            return "val_label_accuracy", "max"
        if self.num_classes == 1:
            return "val_mae", "min"
        return "val_accuracy", "max"

    def predict(self, x, batch_size=None, **kwargs):
        """Logits `[n, num_classes]` of raw texts, in input order (the ids
        dict, or a dataset of it, goes to the model as it is). With
        `long_text="windows"`, one row per text, its windows' logits pooled,
        and `batch_size` counts windows (a call holds the windows of several
        texts, at most `batch_size`, or one text's)."""
        if holds_ids(x):
            return super().predict(x, batch_size=batch_size, **kwargs)
        if self.windowed:
            kwargs.pop("verbose", None)
            if kwargs:
                raise TypeError(f"predict on texts with long_text='windows' takes x, "
                                f"batch_size and verbose; got {sorted(kwargs)}.")
            return self.window_predict(x, check_batch_size(batch_size, 32))
        if isinstance(x, tf.data.Dataset):
            return super().predict(self.text_batches(x, batch_size=batch_size,
                                                     with_targets=False), **kwargs)
        # Longest texts first, as sentence-transformers' encode batches: a batch
        # is cut to its longest text, so texts of like length share batches;
        # the rows go back into input order.
        columns = text_columns(x)
        lengths = sum(np.array([len(text) for text in column], np.int64) for column in columns)
        order = np.argsort(-lengths, kind="stable")
        by_length = tuple(c[order] for c in columns)
        logits = super().predict(self.text_batches(by_length if len(by_length) == 2 else
                                                   by_length[0], batch_size=batch_size,
                                                   with_targets=False), **kwargs)
        out = np.empty_like(logits)
        out[order] = logits
        return out

    def window_predict(self, x, batch_size):
        """NumPy logits `[n, num_classes]`, windows pooled per text (as the
        export's `text_logits`), by one traced function over batches of texts;
        outside Keras' predict, so a model built under a distribution strategy
        runs it too."""
        if isinstance(x, tf.data.Dataset):
            count, has_targets, batched = dataset_columns(x)
            self._check_columns(count)
            ds = x if batched else x.batch(batch_size)
            batches = (_tuple(e[0] if has_targets else e) for e in ds)
        else:
            columns = text_columns(x)
            self._check_columns(len(columns))
            count = len(columns)
            batches = ([tf.constant(list(c[start:end]), tf.string) for c in columns]
                       for start, end in window_batches(self.windows_per_text(columns),
                                                        batch_size))
        model, windows = weakref.ref(self), self.traced_windows(count)
        call = lambda ids: model()(ids, training=False)
        logits_of = self._traced("logits", lambda *t: pooled_logits(
            call, windows(*t), model().window_pooling), count)
        out = [logits_of(*texts).numpy() for texts in batches]
        return np.concatenate(out) if out else np.zeros((0, self.num_classes), np.float32)

    # === Ways out ===

    def outputs_of(self, logits):
        """The exported signature's named outputs from logits (graph ops)."""
        if self.multi_label:
            return multi_label_outputs(logits, self.label_thresholds, self.label_list)
        if self.num_classes == 1:
            return regression_outputs(logits)
        return classification_outputs(logits, self.label_list)

    def export(self, filepath, format="tf_saved_model", jit_compile=False, **kwargs):
        """The strings-in SavedModel `tools/finetune.py` writes for this head:
        `serving_default(text[, text_b])` and `serving_ids` (three int tensors).
        Other `format`s go to Keras' own `Model.export`."""
        if format != "tf_saved_model":
            return super().export(filepath, format=format, **kwargs)
        check_replaceable(filepath, "export")  # a file there is named before the unread-pairs question
        if self.pairs is None:
            raise ValueError("export: the model has not read any text yet; set pairs=True "
                             "or False (or fit it first).")
        # export/ builds on models: imported here.
        from tfbert.export.compiled_call import compiled_call
        from tfbert.export.task_model import export_task_model

        call = compiled_call(self, jit_compile)
        names = self.text_inputs

        def serve_text(texts):  # with windows, one row per text: its windows pooled
            return self.outputs_of(self.text_logits(tuple(texts[n] for n in names), call))

        return export_task_model(os.fspath(filepath), serve_text,
                                 lambda ids: self.outputs_of(call(ids)), names,
                                 track=[self, self.preprocessor],
                                 warmup_shapes=call.shapes(self.preprocessor.seq_length))

    def settings(self):
        """What `save_pretrained` writes beside the weights (the checkpoint's
        `text_classifier` section)."""
        return checkpoint.TextClassifierSettings(
            multi_label=self.multi_label, label_list=self.label_list, threshold=self.threshold,
            pairs=self.pairs, pooling=self.pooling, seq_length=self.preprocessor.seq_length,
            **self.window_settings())

    def window_settings(self):
        """The long-text settings (constructor names)."""
        return {"long_text": self.long_text, "doc_stride": self.doc_stride,
                "doc_overlap": self.doc_overlap, "max_windows": self.max_windows,
                "window_pooling": self.window_pooling}

    # === Keras plumbing ===

    def head_config(self):
        return {**super().head_config(), "multi_label": self.multi_label,
                "label_list": self.label_list, "threshold": self.threshold,
                "pairs": self.pairs, **self.window_settings()}


def _tuple(texts):
    return tuple(texts) if isinstance(texts, (tuple, list)) else (texts,)


def _holds_label_lists(y):
    """True for multi-label `y` given as one list (tuple, set) of label names
    per text (NumPy would call such ragged rows an "inhomogeneous shape")."""
    if isinstance(y, np.ndarray) and (y.dtype != object or y.ndim != 1):
        return False
    if not isinstance(y, (list, tuple, np.ndarray)) or not len(y):
        return False
    return all(isinstance(row, (list, tuple, set)) and all(isinstance(v, str) for v in row)
               for row in y) and any(len(row) for row in y)


def _trim(ids, *rest):
    """A batch of packed windows cut to a bucket of its longest (targets unchanged)."""
    return (trim_to_bucket(ids), *rest) if rest else trim_to_bucket(ids)
