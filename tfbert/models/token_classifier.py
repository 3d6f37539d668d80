"""Per-token labels (NER, POS) on BERT's sequence output: `BertTokenClassifier`
on the three id tensors, and `TokenClassifier`, the same model taking raw text.

`TokenClassifier` is what `TextClassifier` is for classification
(`tfbert.models.strings_model.StringsModel`): a `keras.Model` with its
`BertPreprocessor` attached whose `fit`, `evaluate` and `predict` take texts,
tokenized inside `tf.data`, and whose `compile()` with no arguments is the
tagging task's loss and metric with the fine-tuning recipe. A text is either
a string (a list of str, a NumPy string array, a pandas Series), split into
words as the tagging export splits raw strings (`tfbert.text.word_splitting`:
at whitespace, with leading and trailing punctuation split off), or a list of
words, as a CoNLL file gives them. Tags are one per word, as label names
(`label_list`) or ids; each word's tag goes on its first wordpiece and the
loss counts those only (`tfbert.models.word_labels`: the tagging task's rule,
graph ops in `tf.data`). A `tf.data.Dataset` of `(texts, tag ids)` works as
well, batched or not.

`predict` gives, for each text, one dict a word (the shape of transformers'
token-classification pipeline without aggregation): `word`, `tag`, `score`
(the tag's probability), `start` and `end` (character offsets: `text[start:end]
== word`; for a list of words, offsets into `" ".join(words)`); words past
`seq_length` wordpieces are not tagged. `predict(..., return_logits=True)`
gives each text's first-piece logits `[words, num_classes]` instead.

Long texts: `long_text="truncate"` (the default) tags the words of the first
`seq_length` wordpieces; `long_text="windows"` reads a text in overlapping
windows (`tfbert.text.windows`), as the tagging task's `long_text: windows`
does: in `fit` and `evaluate` each window is one example labelling the words
in it (the recipe's batch size and schedule count windows); `predict` and the
export tag every word, each from the window where it has the most context.

Example (a random tiny encoder; `from_pretrained(dir, label_list=...)` for real weights):
>>> model = TokenClassifier.from_preset("tiny", vocab_file="tests/data/pretraining/vocab.txt",
...                                     label_list=["O", "B-LOC"], seq_length=32)
>>> model.compile()
>>> _ = model.fit([["Flights", "to", "Paris"]], [["O", "O", "B-LOC"]], epochs=1, verbose=0)
>>> [w["word"] for w in model.predict(["Flights to Paris."], verbose=0)[0]]
['Flights', 'to', 'Paris', '.']
"""

import os
import weakref

import keras
import numpy as np
import tensorflow as tf

from tfbert import checkpoint
from tfbert.atomic import check_replaceable
from tfbert.config_loader import check_bool, check_int
from tfbert.data.batching import training_batches, window_stream
from tfbert.models.encoder_model import EncoderModel
from tfbert.models.strings_model import StringsModel
from tfbert.models.text_data import (IDS_HINT, check_batch_size, check_label_list, check_weights,
                                     holds_ids, text_columns)
from tfbert.models.word_labels import (first_piece_positions, ids_outputs,
                                       logits_at_first_pieces, pack_words, tag_strings,
                                       tag_strings_in_windows, tagging_loss, tagging_metrics,
                                       weighted_labels, window_word_labels, window_word_logits,
                                       word_pieces_of)
from tfbert.text.packer import trim_to_bucket
from tfbert.text.preprocessor import BertPreprocessor
from tfbert.text.windows import (WINDOW_MODES, check_doc_overlap, window_batches,
                                 window_spans)
from tfbert.text.word_splitting import WordSplitter

TAG_ID_CHECK = "tfbert: a dataset tag id is out of range"  # the graph check's message
SECTION = "token_classifier"  # the checkpoint's config.json section and weights prefix

@keras.saving.register_keras_serializable(package="tfbert")
class BertTokenClassifier(EncoderModel):
    """A `BertEncoder` with dropout + dense over every token of `sequence_output`.

    Inputs: the encoder's dict of int32 `[batch, seq]` tensors. Output: float32
    logits `[batch, seq, num_classes]`. Which positions carry a label (the
    first wordpiece of each word) is the task's business (`tfbert.tasks.tagging`).

    Example:
    >>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=100))
    >>> model = BertTokenClassifier(encoder, num_classes=9)
    >>> ids = np.array([[2, 7, 9, 3, 0]], "int32")
    >>> model({"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
    ...        "input_type_ids": np.zeros_like(ids)}).shape
    TensorShape([1, 5, 9])
    """

    def __init__(self, encoder, num_classes, dropout=0.1, initializer_range=None, **kwargs):
        self.check_encoder(encoder, "BertTokenClassifier")
        if int(num_classes) < 1:
            raise ValueError(f"num_classes must be >= 1, got {num_classes}.")
        if initializer_range is None:
            initializer_range = encoder.config.initializer_range

        # === Layers ===
        head_dropout = keras.layers.Dropout(dropout, name="token_dropout")
        logits_layer = self.dense_head(num_classes, initializer_range, "logits")

        # The pooler gets no gradient from per-token labels; freezing it keeps
        # the optimizer from tracking (and warning about) it. Note: this sets
        # `trainable` on the encoder passed in.
        encoder.pooler.trainable = False

        # === Functional model ===
        inputs = self.encoder_inputs()
        sequence = encoder(inputs)["sequence_output"]
        logits = logits_layer(head_dropout(sequence))
        kwargs.setdefault("name", "bert_token_classifier")
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.num_classes = int(num_classes)
        self.dropout = dropout
        self.initializer_range = initializer_range

    def head_config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout,
                "initializer_range": self.initializer_range}


@keras.saving.register_keras_serializable(package="tfbert")
class TokenClassifier(StringsModel, BertTokenClassifier):
    """Tags on the words of raw strings or of pre-split word lists (see module doc).

    Args:
        encoder: a `BertEncoder` (pretrained or fresh).
        preprocessor: the `BertPreprocessor` of the encoder's vocabulary.
        num_classes: tags (default: `len(label_list)`).
        label_list: the names of the tags (default "0", "1", ...); `fit`
            takes tags as these strings or as ids, `predict` gives the names.
        dropout: as `BertTokenClassifier`.
        initializer_range: as `BertTokenClassifier`.
        long_text: "truncate" (words past `seq_length` wordpieces are not
            tagged) or "windows" (see module doc).
        doc_stride, doc_overlap: windows' step, or the wordpieces two
            windows share (at most one; default: half a window).
        max_windows: windows read per text (the words of a longer one past
            them are not tagged).
    """

    head_prefix = settings_section = SECTION  # save_pretrained: weights prefix, section
    weighted_default_metrics = True  # accuracy over the tagged words, not over padding

    def __init__(self, encoder, preprocessor, num_classes=None, label_list=None, dropout=0.1,
                 initializer_range=None, long_text="truncate", doc_stride=None,
                 doc_overlap=None, max_windows=64, **kwargs):
        # === Checks ===
        if not isinstance(preprocessor, BertPreprocessor):
            raise TypeError(f"TokenClassifier needs a BertPreprocessor, got "
                            f"{type(preprocessor).__name__}.")
        if label_list is not None:
            label_list = check_label_list(label_list, "tag")
        if num_classes is None:
            if label_list is None:
                raise ValueError("TokenClassifier needs num_classes or label_list.")
            num_classes = len(label_list)
        if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)):
            raise TypeError(f"num_classes must be an int, got {num_classes!r}.")
        if num_classes < 2:
            raise ValueError(f"num_classes must be >= 2 (tags), got {num_classes}.")
        if label_list is not None and len(label_list) != num_classes:
            raise ValueError(f"label_list has {len(label_list)} names for num_classes="
                             f"{num_classes}.")
        if long_text not in WINDOW_MODES:
            raise ValueError(f"long_text must be one of {WINDOW_MODES}, got {long_text!r}.")
        doc_stride = check_int(doc_stride, "doc_stride", 1, allow_none=True)
        doc_overlap = check_int(doc_overlap, "doc_overlap", 0, allow_none=True)
        max_windows = check_int(max_windows, "max_windows", 1)
        if doc_stride is not None and doc_overlap is not None:
            raise ValueError("Give doc_stride or doc_overlap, not both.")
        check_doc_overlap(doc_overlap, preprocessor, preprocessor.seq_length)
        kwargs.setdefault("name", "token_classifier")
        super().__init__(encoder, int(num_classes), dropout=dropout,
                         initializer_range=initializer_range, **kwargs)
        # === Config ===
        self.preprocessor = preprocessor
        self.label_list = label_list or [str(i) for i in range(self.num_classes)]
        self.long_text = long_text
        self.doc_stride = doc_stride
        self.doc_overlap = doc_overlap
        self.max_windows = max_windows
        self._auto_optimizer = False  # compile(optimizer="auto"): fit builds the optimizer
        self._splitter = None
        self._window_counts = None  # (texts, windows of each): windows_per_text's last

    # === Constructors ===

    @classmethod
    def from_pretrained(cls, checkpoint_dir, num_classes=None, label_list=None, seq_length=None,
                        **kwargs):
        """From a tfbert checkpoint: a converted or pretrained encoder (a fresh
        head of `num_classes` or `len(label_list)` tags), or one
        `save_pretrained` wrote (its head, tags and `seq_length`;
        `num_classes` must agree with the head). `seq_length`: as given, else
        the saved model's, else 128."""
        seq_length = check_int(seq_length, "seq_length", 2, allow_none=True)
        ckpt = checkpoint.read_checkpoint(checkpoint_dir)
        encoder = cls.pretrained_encoder(ckpt)
        settings = ckpt.token_classifier
        head = ckpt.prefixed_weights(SECTION) if settings else {}
        if head:
            num_classes = cls.head_size(head, num_classes, ckpt.weights_path, "token classifier")
            label_list = label_list or settings.label_list
            seq_length = seq_length or settings.seq_length
            for key in ("dropout", "long_text", "doc_stride", "doc_overlap", "max_windows"):
                kwargs.setdefault(key, getattr(settings, key))
        preprocessor = BertPreprocessor.from_pretrained(checkpoint_dir,
                                                        seq_length=seq_length or 128)
        model = cls(encoder, preprocessor, num_classes=num_classes, label_list=label_list,
                    **kwargs)
        if head:
            model.assign_head(head, ckpt.weights_path, "token classifier head")
        return model

    # === Texts and tags in ===

    @property
    def splitter(self):
        """The `WordSplitter` of raw strings (the tagging export's words)."""
        if self._splitter is None:
            self._splitter = WordSplitter(self.preprocessor)
        return self._splitter

    def texts(self, x, what="x"):
        """`(kind, texts)`: `("strings", NumPy object array of str)` or
        `("words", list of lists of str)`; one clear error for anything else."""
        if hasattr(x, "to_numpy"):  # a pandas Series
            x = x.to_numpy()
        elif isinstance(x, tf.Tensor):
            x = x.numpy()
        first = None
        if isinstance(x, (list, tuple)) and x:
            first = x[0]
        elif isinstance(x, np.ndarray) and x.dtype.kind in "USO" and x.size:
            first = x[0]
        if not isinstance(first, (list, tuple, np.ndarray)):
            (column,) = text_columns(x if not isinstance(x, tuple) else list(x), what)
            return "strings", column
        texts = []
        for i, words in enumerate(x):
            if not isinstance(words, (list, tuple, np.ndarray)):
                raise TypeError(f"{what}[{i}] is {type(words).__name__}, but {what}[0] is a "
                                f"list of words: give every text as a list of words, or "
                                f"every text as a string.")
            row = []
            for j, word in enumerate(np.asarray(words, dtype=object).tolist()):
                if isinstance(word, bytes):
                    word = word.decode("utf-8")
                if isinstance(word, (int, np.integer)) and not isinstance(word, bool):
                    raise TypeError(f"{what}[{i}][{j}] is an int ({word}), not a word: "
                                    f"{IDS_HINT}.")
                if not isinstance(word, str):
                    raise TypeError(f"{what}[{i}][{j}] is {type(word).__name__} "
                                    f"({word!r:.40}), not a word (str).")
                if not word.strip():
                    raise ValueError(f"{what}[{i}][{j}] is an empty word ({word!r}).")
                row.append(word)
            texts.append(row)
        return "words", texts

    def num_texts(self, x):
        """Training examples in `x`: its texts, or with windows, their windows."""
        kind, texts = self.texts(x)
        return int(self.windows_per_text(kind, texts).sum()) if self.windowed else len(texts)

    # === Long texts: windows (`tfbert.text.windows`) ===

    @property
    def windowed(self):
        return self.long_text == "windows"

    @property
    def window_args(self):
        return dict(doc_stride=self.doc_stride, doc_overlap=self.doc_overlap,
                    max_windows_per_text=self.max_windows)

    def windows_per_text(self, kind, texts):
        """NumPy int64 `[n]`: the windows of each text (`texts` as `texts()` gives them).
        The last texts' counts are kept: `fit` counts them for the schedule and
        again for its batches, and counting tokenizes every text."""
        texts = [list(t) for t in texts] if kind == "words" else list(texts)
        if self._window_counts is not None and self._window_counts[0] == texts:
            return self._window_counts[1]
        counts = []
        for i in range(0, len(texts), 256):
            batch = _column(kind, texts[i:i + 256])
            pieces = self._traced(self._piece_counts)(batch)
            counts.append(window_spans(pieces, self.preprocessor.seq_length - 2,
                                       **self.window_args)["num_windows"].numpy())
        counts = np.concatenate(counts) if counts else np.zeros([0], np.int64)
        self._window_counts = (texts, counts)
        return counts

    def _piece_counts(self, texts):
        return self.word_pieces(texts)[0].merge_dims(1, 2).row_lengths()

    def _windows(self, texts, tags=None, weights=None):
        """A batch of texts -> its windows `(inputs, labels, weights)`, one row a
        window (first pieces weigh 1, or the text's weight)."""
        spans, inputs, labels = window_word_labels(
            self.preprocessor, self.word_pieces(texts)[0], self._ragged_tags(tags),
            self.preprocessor.seq_length, **self.window_args)
        inputs, labels, first = weighted_labels(inputs, labels, bucketing=False)
        if weights is not None:
            first = first * tf.gather(tf.cast(weights, tf.float32), spans["row"])[:, None]
        return inputs, labels, first

    def _window_inputs(self, texts, *rest):
        return window_word_labels(self.preprocessor, self.word_pieces(texts)[0], None,
                                  self.preprocessor.seq_length, **self.window_args)[1]

    def _window_words(self, texts):
        """Graph ops, windows: what `_per_text` reads of a batch of texts, every
        word tagged from its best window."""
        pieces, starts, ends = self.word_pieces(texts)
        if texts.shape.rank == 2:
            texts = tf.strings.reduce_join(texts, axis=1, separator=" ")
        word_logits, kept = window_word_logits(lambda ids: self(ids, training=False),
                                               self.preprocessor, pieces,
                                               self.preprocessor.seq_length, **self.window_args)

        def per_text(values, default):
            return tf.RaggedTensor.from_row_splits(values, pieces.row_splits).to_tensor(default)

        return {"word_logits": per_text(word_logits, 0.0), "kept": per_text(kept, False),
                "start": starts.to_tensor(), "end": ends.to_tensor(), "text": texts}

    def words_of(self, kind, texts):
        """Each text's words as the model reads them (graph ops for strings)."""
        if kind == "words":
            return texts
        _, starts, ends = self._split_strings(tf.constant(list(texts)))
        return [[t.encode("utf-8")[s:e].decode("utf-8", "replace") for s, e in zip(*se)]
                for t, se in zip(texts, zip(starts.to_list(), ends.to_list()))]

    def _traced(self, fn):
        """`fn` (a method of this model) as a `tf.function`, traced once a signature."""
        model, name = weakref.ref(self), fn.__name__
        return self.traced(name, lambda *args: getattr(model(), name)(*args))

    def _split_strings(self, text):
        return self._traced(self._split)(text)

    def _split(self, text):
        return self.splitter(text)

    def _word_counts(self, kind, texts):
        if kind == "words":
            return np.array([len(t) for t in texts], np.int64)
        counts = [self._split_strings(tf.constant(list(texts[i:i + 512])))[1].row_lengths()
                  for i in range(0, len(texts), 512)]
        return np.concatenate([c.numpy() for c in counts])

    def targets(self, y, kind, texts):
        """Tags `y` (one list a text, one tag a word, names or ids) as an int32
        `tf.RaggedTensor` `[texts, (words)]`, checked against the words."""
        n = len(texts)
        if y is None:
            raise ValueError("fit and evaluate need y: one list of tags per text, one tag per "
                             "word.")
        if hasattr(y, "to_numpy"):
            y = y.to_numpy()
        elif isinstance(y, (tf.Tensor, tf.RaggedTensor)):
            y = y.to_list() if isinstance(y, tf.RaggedTensor) else y.numpy()
        if isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
            raise TypeError(f"y must be one list of tags per text, got {type(y).__name__}.")
        if len(y) != n:
            raise ValueError(f"y has {len(y)} rows for {n} texts.")
        counts = self._word_counts(kind, texts)
        rows = []
        for i, tags in enumerate(y):
            if isinstance(tags, (str, bytes)) or not hasattr(tags, "__len__"):
                raise TypeError(f"y[{i}] is {type(tags).__name__} ({tags!r:.40}): give one "
                                f"list of tags per text, one tag per word.")
            tags = np.asarray(list(tags)) if len(tags) else np.zeros([0], np.int64)
            if tags.ndim != 1:
                raise ValueError(f"y[{i}] must be a flat list of tags, got shape {tags.shape}.")
            if len(tags) != counts[i]:
                words = self.words_of(kind, texts[i:i + 1])[0]
                raise ValueError(f"y[{i}] has {len(tags)} tags for the {counts[i]} words of "
                                 f"x[{i}]: {words[:12]}" + (" ..." if len(words) > 12 else ""))
            rows.append(tags)
        lengths = counts
        kinds = {r.dtype.kind for r in rows if len(r)}
        if kinds & set("USO") and kinds - set("USO"):
            raise TypeError("y mixes tag names and tag ids: give one or the other.")
        flat = np.concatenate(rows) if rows else np.zeros([0], np.int64)
        if flat.dtype.kind in "USO":
            flat = flat.astype(str)
            labels = np.array(self.label_list)
            order = np.argsort(labels)
            found = np.clip(np.searchsorted(labels[order], flat), 0, len(labels) - 1)
            known = labels[order][found] == flat
            if not known.all():
                unknown = sorted(set(flat[~known].tolist()))
                raise ValueError(f"tags {unknown[:5]} are not in label_list {self.label_list}.")
            ids = order[found]
        else:
            if flat.dtype.kind not in "iu" and not (
                    flat.dtype.kind == "f" and np.all(flat == np.round(flat))):
                raise TypeError(f"tags must be names in label_list or integer ids, got "
                                f"{flat.dtype} values.")
            ids = flat.astype(np.int64)
            bad = np.flatnonzero((ids < 0) | (ids >= self.num_classes))
            if len(bad):
                row = int(np.searchsorted(np.cumsum(lengths), bad[0], side="right"))
                col = int(bad[0] - (np.cumsum(lengths)[row - 1] if row else 0))
                raise ValueError(f"y[{row}][{col}] is {ids[bad[0]]}: tag ids must be in "
                                 f"[0, {self.num_classes}).")
        return tf.RaggedTensor.from_row_lengths(ids.astype(np.int32), lengths)

    # === tf.data: graph ops from here on ===

    def word_pieces(self, texts):
        """`(word_pieces [batch, (words), (pieces)], starts, ends)` of a batch:
        strings `[batch]` (split as the export splits them; byte offsets) or
        words `[batch, (words)]` (offsets into the words joined by spaces)."""
        if texts.shape.rank == 2 and not isinstance(texts, tf.RaggedTensor):
            texts = tf.RaggedTensor.from_tensor(texts)  # a dense batch of word lists
        if isinstance(texts, tf.RaggedTensor):
            pieces = word_pieces_of(self.preprocessor, texts)
            length = tf.strings.length(texts.flat_values, unit="BYTE")
            cum = tf.cumsum(tf.cast(length + 1, tf.int64), exclusive=True)
            start = cum - tf.gather(cum, tf.gather(tf.concat(
                [texts.row_starts(), [0]], 0), texts.value_rowids()))
            starts = texts.with_flat_values(start)
            return pieces, starts, starts + tf.cast(texts.with_flat_values(length), tf.int64)
        return self.splitter(texts)

    def _encode(self, texts, tags=None, weights=None):
        """A batch of `(inputs, labels, weights)` (first pieces weigh 1, or the
        text's weight), cut to a bucket of its longest sequence."""
        pieces = self.word_pieces(texts)[0]
        if tags is None:
            return trim_to_bucket(pack_words(self.preprocessor, pieces))
        inputs, labels, first = weighted_labels(*pack_words(self.preprocessor, pieces,
                                                            self._ragged_tags(tags)))
        if weights is not None:
            first = first * tf.cast(weights, tf.float32)[:, None]
        return inputs, labels, first

    @staticmethod
    def _ragged_tags(tags):
        if tags is None:
            return None
        tags = tf.cast(tags, tf.int32)
        return tags if isinstance(tags, tf.RaggedTensor) else tf.RaggedTensor.from_tensor(tags)

    def _predict_inputs(self, texts):
        """`(inputs, words)`: the batch's ids and, per text, what `predict_step`
        reads back (first-piece position, piece count, byte offsets `[batch,
        words]`, padded) with the texts (word lists joined by spaces). Every
        tensor is batch-major, so a strategy splits the words with their texts."""
        pieces, starts, ends = self.word_pieces(texts)
        if texts.shape.rank == 2:
            texts = tf.strings.reduce_join(texts, axis=1, separator=" ")
        position = tf.RaggedTensor.from_row_splits(first_piece_positions(pieces),
                                                   pieces.row_splits)
        return trim_to_bucket(pack_words(self.preprocessor, pieces)), {
            "position": position.to_tensor(), "pieces": pieces.row_lengths(axis=2).to_tensor(),
            "num_words": pieces.row_lengths(), "start": starts.to_tensor(),
            "end": ends.to_tensor(), "text": texts}

    def _num_tokens(self, texts, *rest):
        return tf.reduce_sum(self.word_pieces(texts)[0].row_lengths(axis=2), axis=1)

    def text_batches(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False,
                     with_targets=True, seed=0, drop_remainder=False, encode=None):
        """A `tf.data.Dataset` of `(ids, labels, weights)` (or what `encode`
        makes of texts alone) from texts and tags, tokenized and aligned in
        its `map`. `shuffle`: the fine-tuning stream (`training_batches`)."""
        batch_size = check_batch_size(batch_size, 32)
        if self.windowed and encode is None:
            encode = self._windows if with_targets else self._window_inputs
        encode = self._traced(encode or self._encode)
        if isinstance(x, tf.data.Dataset):
            if y is not None or sample_weight is not None:
                raise ValueError("x is a tf.data.Dataset: its elements carry the tags; "
                                 "y and sample_weight must be None.")
            has_tags, batched = _dataset_kind(x.element_spec)
            if with_targets and not has_tags:
                raise ValueError("x is a dataset of texts only: fit and evaluate need "
                                 "(texts, tags) elements.")
            ds = x if batched else x.batch(batch_size)
            if has_tags and with_targets:
                ds = ds.map(lambda t, tags, *w: encode(t, self._checked_tags(tags), *w),
                            num_parallel_calls=tf.data.AUTOTUNE)
            elif has_tags:
                ds = ds.map(lambda t, *rest: encode(t), num_parallel_calls=tf.data.AUTOTUNE)
            else:
                ds = ds.map(encode, num_parallel_calls=tf.data.AUTOTUNE)
            if self.windowed:  # a batch of texts made a batch of windows: batch again
                ds = ds.unbatch().batch(batch_size).map(
                    _trim_windows if has_tags and with_targets else trim_to_bucket)
            return ds.prefetch(tf.data.AUTOTUNE)
        kind, texts = self.texts(x)
        n = len(texts)
        column = _column(kind, texts)
        parts = (column,)
        if with_targets:
            parts += (self.targets(y, kind, texts),)
            weights = check_weights(sample_weight, n)
            if weights is not None:
                parts += (weights,)
        ds = tf.data.Dataset.from_tensor_slices(parts if len(parts) > 1 else column)
        if self.windowed:
            windows = int(self.windows_per_text(kind, texts).sum())
            finish = _trim_windows if with_targets else trim_to_bucket
            if shuffle:
                return window_stream(ds, encode, batch_size, n, windows, seed, drop_remainder,
                                     finish, ragged=kind == "words")
            # A known length: Keras warns "ran out of data" after a dataset of unknown length.
            return window_stream(ds, encode, batch_size, finish=finish,
                                 ragged=kind == "words").apply(
                tf.data.experimental.assert_cardinality(-(-windows // batch_size)))
        if shuffle:
            ds = training_batches(ds, n, batch_size, seed, self._num_tokens, drop_remainder)
        else:
            ds = ds.batch(batch_size)
        return ds.map(encode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    def _checked_tags(self, tags):
        """Tag ids of a dataset, checked in the graph (a dataset is not read
        ahead); `fit` and `evaluate` turn a failed check into one line."""
        tags = tf.cast(tags, tf.int32)
        values = tags.flat_values if isinstance(tags, tf.RaggedTensor) else tags
        with tf.control_dependencies([
                tf.debugging.assert_less(values, self.num_classes, message=TAG_ID_CHECK),
                tf.debugging.assert_non_negative(values, message=TAG_ID_CHECK)]):
            values = tf.identity(values)
        return tags.with_flat_values(values) if isinstance(tags, tf.RaggedTensor) else values

    def dataset_checks(self):
        return {TAG_ID_CHECK: f"x: the dataset holds a tag id outside [0, {self.num_classes}) "
                              f"(label_list has {self.num_classes} tags)."}

    # === Training: compile() is the recipe (StringsModel) ===

    def default_loss(self):
        return tagging_loss()

    def default_metrics(self):
        return tagging_metrics()

    def best_epoch_monitor(self):
        return "val_accuracy", "max"  # per-word accuracy (tagging_metrics)

    # === Predictions ===

    def predict_step(self, data):
        if not (isinstance(data, tuple) and len(data) == 2 and isinstance(data[1], dict)
                and "pieces" in data[1]):
            return super().predict_step(data)  # the ids dict: per-position logits
        inputs, words = data
        word_logits, kept = logits_at_first_pieces(self(inputs, training=False),
                                                   words["position"], words["pieces"])
        return {**{k: words[k] for k in ("num_words", "start", "end", "text")},
                "word_logits": word_logits, "kept": kept}

    def predict(self, x, batch_size=None, return_logits=False, **kwargs):
        """Per text, a list of `{"word", "tag", "score", "start", "end"}` (see
        module doc); `return_logits=True`: per text, the words' first-piece
        logits `[words, num_classes]`. The ids dict (or a dataset of it) gives
        Keras' per-position logits."""
        return_logits = check_bool(return_logits, "return_logits")
        if holds_ids(x):
            return super().predict(x, batch_size=batch_size, **kwargs)
        if self.windowed:
            return self.window_predict(x, check_batch_size(batch_size, 32), return_logits,
                                       **kwargs)
        data = self.text_batches(x, batch_size=batch_size, with_targets=False,
                                 encode=self._predict_inputs)
        out = super().predict(data, **kwargs)
        return _per_text(out, self.label_list, return_logits)

    def window_predict(self, x, batch_size, return_logits=False, verbose=None):
        """`predict` with `long_text="windows"`: batches of texts whose windows add
        up to at most `batch_size` (a text with more is a call of its own), run by
        one traced function outside Keras' predict; the same per-text results."""
        if isinstance(x, tf.data.Dataset):
            raise TypeError("predict with long_text='windows' takes texts (strings or word "
                            "lists), not a tf.data.Dataset.")
        kind, texts = self.texts(x)
        words_of = self._traced(self._window_words)
        results = []
        for start, end in window_batches(self.windows_per_text(kind, texts), batch_size):
            out = words_of(_column(kind, texts[start:end]))
            results += _per_text({k: v.numpy() for k, v in out.items()}, self.label_list,
                                 return_logits)
        return results

    # === Ways out ===

    def export(self, filepath, format="tf_saved_model", jit_compile=False, **kwargs):
        """The strings-in SavedModel the tagging task writes (`tools/finetune.py
        --task=tagging`): `serving_default(text)` -> `tags`, `words`, `start`,
        `end` (byte offsets), `tag_ids`, `num_words`, `logits`,
        `probabilities`; `serving_ids` -> per-position `logits`,
        `probabilities`, `tag_ids`. Other `format`s go to Keras' `Model.export`."""
        if format != "tf_saved_model":
            return super().export(filepath, format=format, **kwargs)
        check_replaceable(filepath, "export")
        # export/ builds on models: imported here.
        from tfbert.export.compiled_call import compiled_call
        from tfbert.export.task_model import export_task_model

        call = compiled_call(self, jit_compile)

        def serve_text(texts):
            if self.windowed:
                return tag_strings_in_windows(call, self.splitter, self.preprocessor,
                                              self.label_list, texts["text"],
                                              self.preprocessor.seq_length, **self.window_args)
            return tag_strings(call, self.splitter, self.preprocessor, self.label_list,
                               texts["text"])

        return export_task_model(os.fspath(filepath), serve_text,
                                 lambda ids: ids_outputs(call(ids)), ("text",),
                                 track=[self, self.preprocessor],
                                 warmup_shapes=call.shapes(self.preprocessor.seq_length))

    def settings(self):
        """What `save_pretrained` writes beside the weights (config.json's
        `token_classifier` section)."""
        return checkpoint.TokenClassifierSettings(
            label_list=self.label_list, seq_length=self.preprocessor.seq_length,
            dropout=self.dropout, long_text=self.long_text, doc_stride=self.doc_stride,
            doc_overlap=self.doc_overlap, max_windows=self.max_windows)

    # === Keras plumbing ===

    def head_config(self):
        return {**super().head_config(), "label_list": self.label_list,
                "long_text": self.long_text, "doc_stride": self.doc_stride,
                "doc_overlap": self.doc_overlap, "max_windows": self.max_windows}


def _column(kind, texts):
    """A batch of texts as the graph reads them: strings `[batch]` or words
    `[batch, (words)]`."""
    if kind == "words":
        return tf.RaggedTensor.from_row_lengths(
            tf.constant([w for t in texts for w in t], tf.string),
            np.array([len(t) for t in texts], np.int64))
    return tf.constant(list(texts), tf.string)


def _trim_windows(inputs, labels, weights):
    """A batch of windows cut to a bucket of its longest (the cut columns are padding)."""
    inputs = trim_to_bucket(inputs)
    width = tf.shape(inputs["input_mask"])[1]
    return inputs, labels[:, :width], weights[:, :width]


def _dataset_kind(spec):
    """`(has tags, batched)` of a dataset of texts or `(texts, tags[, weights])`."""
    tags = None
    if isinstance(spec, tuple):
        if len(spec) not in (2, 3):
            raise TypeError(f"x: the dataset's elements must be texts or (texts, tags), got "
                            f"{spec}.")
        spec, tags = spec[0], spec[1]
    if not isinstance(spec, (tf.TensorSpec, tf.RaggedTensorSpec)) or spec.dtype != tf.string:
        raise TypeError(f"x: the dataset yields {getattr(spec, 'dtype', spec)!r} texts, not "
                        f"strings: {IDS_HINT}.")
    if tags is not None and (not isinstance(tags, (tf.TensorSpec, tf.RaggedTensorSpec))
                             or not tags.dtype.is_integer):
        raise TypeError(f"x: the dataset's tags must be integer tag ids, got {tags}.")
    rank = spec.shape.rank
    if tags is not None:
        batched = tags.shape.rank == 2
        words = rank == (2 if batched else 1)
    else:
        words = isinstance(spec, tf.RaggedTensorSpec)
        batched = rank == (2 if words else 1)
    if words and batched and not isinstance(spec, tf.RaggedTensorSpec):
        raise TypeError("x: a batched dataset of word lists must yield a tf.RaggedTensor "
                        "[batch, (words)].")
    return tags is not None, batched


def _char_offsets(text, byte_offsets):
    """Character offsets into `text` of byte offsets into its UTF-8."""
    raw = text.encode("utf-8")
    if len(raw) == len(text):
        return np.asarray(byte_offsets)
    char_starts = np.cumsum([0] + [len(c.encode("utf-8")) for c in text])
    return np.searchsorted(char_starts, byte_offsets, side="left")


def _per_text(out, label_list, return_logits):
    """`predict_step`'s outputs (`[texts, words]`, padded per batch; Keras
    gives a `tf.RaggedTensor` where batches differ in width) -> one list (or
    array) per text."""
    def padded(value):
        return np.asarray(value.to_tensor() if isinstance(value, tf.RaggedTensor) else value)

    labels = np.asarray(label_list, dtype=object)
    logits = padded(out["word_logits"]).astype(np.float32)
    kept = padded(out["kept"]).astype(bool)
    starts, ends = padded(out["start"]), padded(out["end"])
    probabilities = np.exp(logits - logits.max(-1, keepdims=True)) if logits.size else logits
    if logits.size:
        probabilities /= probabilities.sum(-1, keepdims=True)
    results = []
    for i, text in enumerate(np.asarray(out["text"]).tolist()):
        text = text.decode("utf-8") if isinstance(text, bytes) else text
        keep = np.flatnonzero(kept[i])
        if return_logits:
            results.append(logits[i, keep])
            continue
        start, end = _char_offsets(text, starts[i, keep]), _char_offsets(text, ends[i, keep])
        tag = probabilities[i, keep].argmax(-1) if len(keep) else np.zeros([0], int)
        results.append([{"word": text[s:e], "tag": labels[t], "score": float(p[t]),
                         "start": int(s), "end": int(e)}
                        for s, e, t, p in zip(start, end, tag, probabilities[i, keep])])
    return results
