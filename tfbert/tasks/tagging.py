"""Token classification: named entities (IOB2, scored like seqeval) or any
per-word tag set such as part-of-speech (scored by per-token accuracy).

Labels live on words; BERT sees wordpieces. Each word's label goes on its
first wordpiece, the other pieces get weight 0 in the loss, and predictions
are read back from first pieces (`tfbert.tasks.word_labels`). A CoNLL token
that the BERT tokenizer splits further (`U.S.` -> `u . s .`) stays one word. For raw strings a word is a
whitespace-separated token with its leading and trailing punctuation split
off (found from the tokenizer's offsets), close to CoNLL's tokenization, so
serving sees the words training saw.

Example:
>>> task = TaggingTask(TaggingConfig(train_file="tests/data/finetune/ner_train.conll",
...                                  dev_file="tests/data/finetune/ner_dev.conll"))
>>> _ = task.prepare(BertPreprocessor(vocab_file="tests/data/pretraining/vocab.txt"))
>>> task.label_list, task.main_metric
(['O', 'B-LOC', 'B-ORG', 'B-PER', 'I-LOC', 'I-ORG', 'I-PER'], 'f1')

After `finetune`, `task.predict(model, ["Angela Merkel visited Paris ."])` gives
`[[('Angela', 'B-PER', 0, 6), ('Merkel', 'I-PER', 7, 13), ('visited', 'O', 14, 21), ...]]`.
"""

import dataclasses
from typing import Optional

import numpy as np
import tensorflow as tf

from tfbert.data import readers, validation_split
from tfbert.data.batching import epoch_batches, window_stream
from tfbert.config_loader import at_least, in_range, one_of, validate
from tfbert.export.compiled_call import compiled_call
from tfbert.export.task_model import export_task_model
from tfbert.metrics import seqeval
from tfbert.text.raw_texts import text_column
from tfbert.models.token_classifier import TokenClassifier
# IGNORE is imported from here too (tests, tagging users).
from tfbert.models.word_labels import (IGNORE, ids_outputs, pack_words,  # noqa: F401
                                       tag_strings, tag_strings_in_windows, tagging_loss,
                                       tagging_metrics, weighted_labels, window_word_labels,
                                       window_word_logits, word_pieces_of)
from tfbert.tasks.base import Task
from tfbert.text.windows import WINDOW_MODES, count_windows, window_batches
from tfbert.text.word_splitting import WordSplitter


@dataclasses.dataclass
class TaggingConfig:
    """Data and head settings (the `task:` section of a finetune YAML)."""

    train_file: str = ""
    dev_file: str = ""
    word_column: int = 0
    tag_column: int = -1  # CoNLL-2003: -1 (NER), 1 (POS), 2 (chunks)
    label_list: Optional[list] = None  # default: the training file's tags, "O" first
    seq_length: int = at_least(2, 128)
    dropout: float = in_range(0.0, 1.0, 0.1, high_open=True)
    main_metric: Optional[str] = None  # default: f1 for BIO tags, else accuracy
    # Training batches cut to their longest sentence, rounded up to a bucket
    # width (text/packer.py BUCKETS): padding costs nothing, shapes stay few.
    bucketing: bool = True
    # Texts longer than seq_length (`tfbert.text.windows`): "truncate" tags
    # the words of the first window only; "windows" tags every word, each
    # from the window where it has the most context on both sides.
    long_text: str = one_of(WINDOW_MODES, "truncate")
    doc_stride: Optional[int] = at_least(1, None)  # window step; None: half a window
    doc_overlap: Optional[int] = at_least(0, None)  # or: wordpieces shared by neighbours
    max_windows: int = at_least(1, 64)  # per text; words past them are not tagged

    def __post_init__(self):
        validate(self)


class TaggingTask(Task):
    """Per-word tagging with a dense layer over the sequence output."""

    name = "tagging"
    config_class = TaggingConfig

    def __init__(self, config=None):
        super().__init__(config)
        config = self.config
        self.label_list = list(config.label_list) if config.label_list else None
        self.main_metric = config.main_metric
        self.windowed = config.long_text == "windows"
        self._word_logits = {}
        self._num_windows = {}

    @property
    def is_bio(self):
        return seqeval.is_bio_tag_set(self.label_list)

    # === Data ===

    def read(self, path):
        return readers.read_conll(path, self.config.word_column, self.config.tag_column)

    def prepare(self, preprocessor):
        """Sets the preprocessor; without a label list, takes the training file's tags."""
        self.preprocessor = preprocessor
        if self.label_list is None:
            if not self.config.train_file:
                raise ValueError("Tagging needs `label_list` or a `train_file` to read the tags from.")
            tags = {t for seq in self.read(self.config.train_file).tags for t in seq}
            self.label_list = (["O"] if "O" in tags else []) + sorted(tags - {"O"})
        self.main_metric = self.config.main_metric or ("f1" if self.is_bio else "accuracy")
        return self

    def word_pieces(self, words):
        """Wordpiece ids `[batch, (words), (pieces)]` of words `[batch, (words)]`
        (tf.string ragged); all pieces of one word stay together."""
        return word_pieces_of(self.preprocessor, words)

    def pack(self, word_pieces, word_labels=None):
        """The three int32 encoder inputs; with `word_labels` `[batch, (words)]`
        also int32 `[batch, seq]` labels at first pieces and `IGNORE` elsewhere."""
        return pack_words(self.preprocessor, word_pieces, word_labels)

    def _train_example(self, words, word_labels):
        return self._weighted(*self.pack(self.word_pieces(words), word_labels))

    def _weighted(self, inputs, labels):
        """`(inputs, labels, weights)`: weight 1 where a label is (bucketed if set)."""
        return weighted_labels(inputs, labels, self.config.bucketing)

    def pack_windows(self, word_pieces, word_labels=None):
        """`(spans, inputs[, labels])`: windows of the texts' wordpieces
        (`tfbert.text.windows`), packed `[CLS] window [SEP]`; labels as in
        `pack` (each window labels the first pieces of the words in it)."""
        return window_word_labels(self.preprocessor, word_pieces, word_labels,
                                  self.config.seq_length, **self.window_args)

    @property
    def window_args(self):
        c = self.config
        return dict(doc_stride=c.doc_stride, doc_overlap=c.doc_overlap,
                    max_windows_per_text=c.max_windows)

    def word_logits(self, model, word_pieces, call=None):
        """Graph ops, windows: logits of every word's first piece, each from the
        window where that piece has the most context (google-research's rule).
        Returns `(logits [words, classes], covered [words])` over the batch's
        flat words; `covered` is False for words past `max_windows`."""
        return window_word_logits(call or compiled_call(model, jit_compile=False),
                                  self.preprocessor, word_pieces, self.config.seq_length,
                                  **self.window_args)

    def dataset(self, path, batch_size, training=False, seed=0):
        """`(inputs, labels, sample_weights)` batches; weight 1 on each word's first piece."""
        sentences = self.read(path)
        tag_ids = readers.encode_tags(sentences, self.label_list)
        ds = tf.data.Dataset.from_tensor_slices(
            (tf.ragged.constant(sentences.words), tf.ragged.constant(tag_ids, dtype=tf.int32)))
        if self.windowed:
            return self._window_dataset(ds, path, batch_size, training, seed)
        if training:
            ds = epoch_batches(ds, len(sentences), batch_size, seed, batch=lambda d: d.ragged_batch(
                batch_size, drop_remainder=self.drop_remainder))
        else:
            ds = ds.ragged_batch(batch_size)
        ds = ds.map(self._train_example, num_parallel_calls=tf.data.AUTOTUNE)
        return ds.prefetch(tf.data.AUTOTUNE)

    def _window_dataset(self, ds, path, batch_size, training, seed):
        """Batches of windows (one window is one example)."""
        def to_windows(words, word_labels):
            return self.pack_windows(self.word_pieces(words), word_labels)[1:]

        if not training:
            return window_stream(ds, to_windows, batch_size, finish=self._weighted, ragged=True)
        return window_stream(ds, to_windows, batch_size, len(self.read(path)),
                             self.num_examples(path), seed, self.drop_remainder,
                             self._weighted, ragged=True)

    def num_examples(self, path):
        """Training examples in `path`: sentences, or with windows, their windows."""
        sentences = self.read(path)
        if not self.windowed:
            return len(sentences)
        if path not in self._num_windows:
            words = tf.data.Dataset.from_tensor_slices(tf.ragged.constant(sentences.words))
            self._num_windows[path] = int(sum(
                int(tf.reduce_sum(self.pack_windows(self.word_pieces(w))[0]["num_windows"]))
                for w in words.ragged_batch(256)))
        return self._num_windows[path]

    def split_validation(self, path, out_dir, fraction, seed):
        return validation_split.split_conll(path, out_dir, fraction, seed)

    # === Model, loss, metrics ===

    def build_model(self, encoder):
        """The `TokenClassifier` a user's `fit` trains (same head, same outputs)."""
        return TokenClassifier(encoder, self.preprocessor, label_list=self.label_list,
                               dropout=self.config.dropout)

    def loss(self):
        return tagging_loss()

    def metrics(self):
        return tagging_metrics()

    # === Evaluation ===

    def eval_data(self, path, batch_size):
        """`(inputs dataset, reference)`; reference holds the gold tags and the
        position of each word's first piece (-1: truncated away)."""
        sentences = self.read(self.require_dev_file(path))
        batch_size = self.check_batch_size(batch_size)
        readers.encode_tags(sentences, self.label_list)  # unknown tags: error with file and line
        words = tf.data.Dataset.from_tensor_slices(tf.ragged.constant(sentences.words))
        if self.windowed:  # `evaluate` tags whole texts from their windows
            return words.ragged_batch(batch_size), {"tags": sentences.tags}
        pieces = words.ragged_batch(batch_size).map(self.word_pieces)
        inputs = pieces.map(self.pack, num_parallel_calls=tf.data.AUTOTUNE)
        counts = [c for batch in pieces.map(lambda p: p.row_lengths(axis=2))
                  for c in batch.to_list()]
        positions = [self._first_positions(np.asarray(c, np.int64)) for c in counts]
        return inputs.prefetch(tf.data.AUTOTUNE), {"tags": sentences.tags, "positions": positions}

    def _first_positions(self, piece_counts):
        positions = 1 + np.concatenate([[0], np.cumsum(piece_counts)[:-1]]).astype(np.int64)
        valid = (piece_counts > 0) & (positions < self.preprocessor.seq_length - 1)
        return np.where(valid, positions, -1)

    def decode(self, logits, positions):
        """Word tags from `[batch, seq, classes]` logits; truncated words get "O"
        (or the first label for non-BIO sets), so they count as misses."""
        ids = np.asarray(logits).argmax(-1)
        fallback = "O" if "O" in self.label_list else self.label_list[0]
        return [[self.label_list[ids[i, p]] if p >= 0 else fallback for p in pos]
                for i, pos in enumerate(positions)]

    def evaluate(self, model, dev):
        if not self.windowed:
            return super().evaluate(model, dev)
        words, reference = self.check_dev(dev)
        key = id(model)
        if key not in self._word_logits:
            self._word_logits[key] = tf.function(
                lambda w: self.word_logits(model, self.word_pieces(w)),
                input_signature=[tf.RaggedTensorSpec([None, None], tf.string, 1, tf.int64)])
        fallback = "O" if "O" in self.label_list else self.label_list[0]
        predicted = []
        for batch in words:
            logits, covered = self._word_logits[key](batch)
            tags = np.where(covered.numpy(), np.asarray(self.label_list, object)[
                logits.numpy().argmax(-1)], fallback)
            for n in batch.row_lengths().numpy():
                predicted.append(tags[:n].tolist())
                tags = tags[n:]
        return self.score_tags(reference["tags"], predicted)

    def score(self, logits, reference):
        return self.score_tags(reference["tags"], self.decode(logits, reference["positions"]))

    def score_tags(self, gold, predicted):
        """Accuracy (and BIO: entity precision, recall, F1) of word tags."""
        scores = {"accuracy": seqeval.token_accuracy(gold, predicted)}
        if self.is_bio:
            report = seqeval.f1_report(gold, predicted)
            scores.update(precision=report["precision"], recall=report["recall"],
                          f1=report["f1"], per_type=report["per_type"])
        return scores

    # === Raw strings: prediction and export ===

    def text_words(self, text):
        """Words of raw strings with their wordpieces and byte offsets
        (`tfbert.text.word_splitting.WordSplitter`: CoNLL-like words)."""
        if getattr(self, "_splitter", None) is None:
            self._splitter = WordSplitter(self.preprocessor)
        return self._splitter(text)

    def tag_text(self, model, text, call=None):
        """Graph function: raw strings -> dict of named outputs (used by
        `predict` and by the export, so both give the same tags). `call`:
        how the model runs (`tfbert.export.compiled_call`; default the plain call)."""
        call = call or compiled_call(model, jit_compile=False)
        if getattr(self, "_splitter", None) is None:
            self._splitter = WordSplitter(self.preprocessor)
        if not self.windowed:  # one packed sequence a text (tfbert.models.word_labels)
            return tag_strings(call, self._splitter, self.preprocessor, self.label_list, text)
        return tag_strings_in_windows(call, self._splitter, self.preprocessor, self.label_list,
                                      text, self.config.seq_length, **self.window_args)

    def predict(self, model, text, batch_size=64):
        """`[[(word, tag, start, end), ...] per string]` with character offsets.
        With `long_text=windows`, `batch_size` counts windows (a text with more
        is a call of its own)."""
        text = text_column(text, "text").tolist()  # one clear line for None, one str, ...
        batch_size = self.check_batch_size(batch_size)
        batches = [(i, min(i + batch_size, len(text))) for i in range(0, len(text), batch_size)]
        if self.windowed:
            c = self.config
            batches = window_batches(count_windows(self.preprocessor, text, c.seq_length,
                                                   c.doc_stride, c.doc_overlap,
                                                   c.max_windows)[1], batch_size)
        results = []
        for first, last in batches:
            chunk = text[first:last]
            out = self.tag_text(model, tf.constant(chunk))
            for j, string in enumerate(chunk):
                raw = string.encode("utf-8")
                n = int(out["num_words"][j])
                row = []
                for w in range(n):
                    s, e = int(out["start"][j, w]), int(out["end"][j, w])
                    row.append((raw[s:e].decode("utf-8", "replace"),
                                out["tags"][j, w].numpy().decode(),
                                len(raw[:s].decode("utf-8", "ignore")),
                                len(raw[:e].decode("utf-8", "ignore"))))
                results.append(row)
        return results

    def export(self, model, export_dir, jit_compile=False):
        """SavedModel: `serving_default(text)` -> `tags`, `words`, `start`,
        `end` (byte offsets), `tag_ids`, `num_words`, `logits`, `probabilities`;
        `serving_ids` -> per-position `logits`, `probabilities`, `tag_ids`.
        `jit_compile=True`: small batches run the model under XLA at bucketed
        shapes (`tfbert.export.compiled_call`; TF Serving needs
        `--xla_cpu_compilation_enabled=true`)."""
        call = compiled_call(model, jit_compile)

        def serve_ids(inputs):
            return ids_outputs(call(inputs))

        def serve_text(texts):
            return self.tag_text(model, texts["text"], call=call)

        return export_task_model(export_dir, serve_text, serve_ids, self.text_inputs,
                                 track=[model, self.preprocessor],
                                 warmup_shapes=call.shapes(self.preprocessor.seq_length))
