"""Token classification: named entities (IOB2, scored like seqeval) or any
per-word tag set such as part-of-speech (scored by per-token accuracy).

Labels live on words; BERT sees wordpieces. Each word's label goes on its
first wordpiece, the other pieces get weight 0 in the loss, and predictions
are read back from first pieces. A CoNLL token that the BERT tokenizer splits
further (`U.S.` -> `u . s .`) stays one word. For raw strings a word is a
whitespace-separated token with its leading and trailing punctuation split
off (found from the tokenizer's offsets), close to CoNLL's tokenization, so
serving sees the words training saw.

Example:
>>> task = TaggingTask(TaggingConfig(train_file="tests/data/finetune/ner_train.conll",
...                                  dev_file="tests/data/finetune/ner_dev.conll"))
>>> task.prepare(preprocessor)  # doctest: +SKIP
>>> task.predict(model, ["Angela Merkel visited Paris ."])  # doctest: +SKIP
[[('Angela', 'B-PER', 0, 6), ('Merkel', 'I-PER', 7, 13), ('visited', 'O', 14, 21), ...]]
"""

import dataclasses
from typing import Optional

import keras
import numpy as np
import tensorflow as tf

from tfbert.data import readers
from tfbert.export.task_model import export_task_model
from tfbert.metrics import seqeval
from tfbert.models.token_classifier import BertTokenClassifier
from tfbert.text.char_table import is_punctuation

IGNORE = -1  # label of positions without a word label ([CLS], [SEP], later pieces, padding)


@dataclasses.dataclass
class TaggingConfig:
    """Data and head settings (the `task:` section of a finetune YAML)."""

    train_file: str = ""
    dev_file: str = ""
    word_column: int = 0
    tag_column: int = -1  # CoNLL-2003: -1 (NER), 1 (POS), 2 (chunks)
    label_list: Optional[list] = None  # default: the training file's tags, "O" first
    seq_length: int = 128
    dropout: float = 0.1
    main_metric: Optional[str] = None  # default: f1 for BIO tags, else accuracy


class TaggingTask:
    """Per-word tagging with a dense layer over the sequence output."""

    text_inputs = ("text",)

    def __init__(self, config):
        if isinstance(config, dict):
            config = TaggingConfig(**config)
        self.config = config
        self.label_list = list(config.label_list) if config.label_list else None
        self.preprocessor = None
        self.main_metric = config.main_metric

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
        pieces = self.preprocessor.tokenize(words.flat_values).merge_dims(1, 2)
        return tf.RaggedTensor.from_row_splits(pieces, words.row_splits)

    def pack(self, word_pieces, word_labels=None):
        """The three int32 encoder inputs; with `word_labels` `[batch, (words)]`
        also int32 `[batch, seq]` labels at first pieces and `IGNORE` elsewhere."""
        inputs = self.preprocessor.bert_pack_inputs([word_pieces])
        if word_labels is None:
            return inputs
        words = word_pieces.values  # [total words, (pieces)]
        piece_word = words.value_rowids()
        first = tf.range(tf.shape(piece_word, out_type=tf.int64)[0]) == tf.gather(
            words.row_starts(), piece_word)
        labels = tf.where(first, tf.gather(tf.cast(word_labels.flat_values, tf.int32), piece_word),
                          IGNORE)
        labels = word_pieces.with_flat_values(labels).merge_dims(1, 2)  # [batch, (pieces)]
        # Same layout as the packer: [CLS] pieces (truncated) [SEP] padding.
        seq_length = self.preprocessor.seq_length
        labels = labels[:, : seq_length - 2]
        edge = tf.fill([labels.nrows(), 1], IGNORE)
        labels = tf.concat([edge, labels, edge], axis=1)
        labels = labels.to_tensor(default_value=IGNORE, shape=[None, seq_length])
        return inputs, labels

    def _train_example(self, words, word_labels):
        inputs, labels = self.pack(self.word_pieces(words), word_labels)
        weights = tf.cast(labels != IGNORE, tf.float32)
        return inputs, tf.maximum(labels, 0), weights

    def dataset(self, path, batch_size, training=False, seed=0):
        """`(inputs, labels, sample_weights)` batches; weight 1 on each word's first piece."""
        sentences = self.read(path)
        tag_ids = readers.encode_tags(sentences, self.label_list)
        ds = tf.data.Dataset.from_tensor_slices(
            (tf.ragged.constant(sentences.words), tf.ragged.constant(tag_ids, dtype=tf.int32)))
        if training:
            ds = ds.shuffle(len(sentences), seed=seed, reshuffle_each_iteration=True).repeat()
        ds = ds.ragged_batch(batch_size, drop_remainder=training)
        ds = ds.map(self._train_example, num_parallel_calls=tf.data.AUTOTUNE)
        return ds.prefetch(tf.data.AUTOTUNE)

    def num_examples(self, path):
        return len(self.read(path))

    # === Model, loss, metrics ===

    def build_model(self, encoder):
        return BertTokenClassifier(encoder, num_classes=len(self.label_list),
                                   dropout=self.config.dropout)

    def loss(self):
        # Mean over labelled positions only (not over all padded positions).
        return keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight")

    def metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    # === Evaluation ===

    def eval_data(self, path, batch_size):
        """`(inputs dataset, reference)`; reference holds the gold tags and the
        position of each word's first piece (-1: truncated away)."""
        sentences = self.read(path)
        readers.encode_tags(sentences, self.label_list)  # unknown tags: error with file and line
        words = tf.data.Dataset.from_tensor_slices(tf.ragged.constant(sentences.words))
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

    def score(self, logits, reference):
        predicted = self.decode(logits, reference["positions"])
        scores = {"accuracy": seqeval.token_accuracy(reference["tags"], predicted)}
        if self.is_bio:
            report = seqeval.f1_report(reference["tags"], predicted)
            scores.update(precision=report["precision"], recall=report["recall"],
                          f1=report["f1"], per_type=report["per_type"])
        return scores

    # === Raw strings: prediction and export ===

    def text_words(self, text):
        """Words of raw strings with their wordpieces and byte offsets.

        Returns `(word_pieces [batch, (words), (pieces)], starts, ends)`, the
        last two `[batch, (words)]` int64. A word is a whitespace-separated
        token with leading and trailing punctuation split off, as in CoNLL
        files: `(Reuters),` -> `(`, `Reuters`, `)`, `,`; `U.S.` -> `U.S`, `.`;
        inner punctuation stays (`didn't`). Found from the tokenizer's words
        (which split every punctuation character) and their offsets.
        """
        ids, starts, limits = self.preprocessor.tokenize_with_offsets(text)
        batch = tf.shape(text, out_type=tf.int64)[0]
        tw_row = ids.value_rowids()  # string of each tokenizer word
        tw_start = tf.cast(tf.gather(starts.values.flat_values, starts.values.row_starts()), tf.int64)
        tw_end = tf.cast(tf.gather(limits.values.flat_values, limits.values.row_limits() - 1),
                         tf.int64)
        num_tw = tf.shape(tw_row, out_type=tf.int64)[0]
        # Whitespace tokens: a new one where the string changes or a gap opens.
        prev_row = tf.concat([[-1], tw_row[:-1]], axis=0)
        prev_end = tf.concat([[-1], tw_end[:-1]], axis=0)
        new_token = (tw_row != prev_row) | (tw_start > prev_end)
        token = tf.cumsum(tf.cast(new_token, tf.int64)) - 1
        num_tokens = tf.reduce_sum(tf.cast(new_token, tf.int64))
        # Punctuation words (one piece, a punctuation character) at the edges
        # of their whitespace token become words of their own.
        punct = (ids.values.row_lengths() == 1) & tf.gather(
            self._punctuation_ids(), tf.gather(ids.flat_values, ids.values.row_starts()))
        content = tf.cast(~punct, tf.int64)
        before = tf.cumsum(content, exclusive=True)  # content words before, over all tokens
        token_first = tf.boolean_mask(tf.range(num_tw), new_token)
        before_in_token = before - tf.gather(tf.gather(before, token_first), token)
        total_in_token = tf.gather(tf.math.unsorted_segment_sum(content, token, num_tokens), token)
        edge = punct & ((before_in_token == 0) | (before_in_token == total_in_token))
        prev_edge = tf.concat([[False], edge[:-1]], axis=0)
        new_word = new_token | edge | prev_edge
        word_of_tw = tf.cumsum(tf.cast(new_word, tf.int64)) - 1
        num_words = tf.reduce_sum(tf.cast(new_word, tf.int64))
        pieces = tf.RaggedTensor.from_value_rowids(
            ids.flat_values, tf.gather(word_of_tw, ids.values.value_rowids()), nrows=num_words)
        words_per_text = tf.math.unsorted_segment_sum(tf.cast(new_word, tf.int64), tw_row, batch)
        word_pieces = tf.RaggedTensor.from_row_lengths(pieces, words_per_text)
        word_start = tf.boolean_mask(tw_start, new_word)
        word_end = tf.math.unsorted_segment_max(tw_end, word_of_tw, num_words)
        return (word_pieces, word_pieces.with_values(word_start),
                word_pieces.with_values(word_end))

    def _punctuation_ids(self):
        """bool `[vocab_size]`: the token is a single punctuation character."""
        # Cached as NumPy: a tensor made inside one traced function is not
        # usable from another.
        if getattr(self, "_punct_table", None) is None:
            self._punct_table = np.array(
                [len(t) == 1 and is_punctuation(t) for t in self.preprocessor.vocab.tokens])
        return tf.constant(self._punct_table)

    def tag_text(self, model, text):
        """Graph function: raw strings -> dict of named outputs (used by
        `predict` and by the export, so both give the same tags)."""
        text = tf.convert_to_tensor(text)
        word_pieces, starts, ends = self.text_words(text)
        logits = model(self.pack(word_pieces), training=False)
        seq_length = self.preprocessor.seq_length
        counts = word_pieces.row_lengths(axis=2).flat_values
        cum = tf.cumsum(counts, exclusive=True)
        cum = tf.concat([cum, [tf.reduce_sum(counts)]], axis=0)
        word_row = word_pieces.value_rowids()
        position = 1 + cum[:-1] - tf.gather(cum, tf.gather(word_pieces.row_starts(), word_row))
        # Words whose first piece was truncated away are not returned.
        keep = position < seq_length - 1
        row = tf.boolean_mask(word_row, keep)
        position = tf.boolean_mask(position, keep)
        tag_id = tf.gather_nd(tf.argmax(logits, axis=-1, output_type=tf.int32),
                              tf.stack([row, position], axis=1))
        start = tf.boolean_mask(starts.flat_values, keep)
        end = tf.boolean_mask(ends.flat_values, keep)
        word = tf.strings.substr(tf.gather(text, row), start, end - start, unit="BYTE")
        nrows = tf.shape(text, out_type=tf.int64)[0]

        def per_text(values, default):
            return tf.RaggedTensor.from_value_rowids(values, row, nrows=nrows).to_tensor(default)

        return {
            "logits": logits,
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "tag_ids": per_text(tag_id, -1),
            "tags": per_text(tf.gather(tf.constant(self.label_list), tag_id), ""),
            "words": per_text(word, ""),
            "start": per_text(start, -1),
            "end": per_text(end, -1),
            "num_words": tf.cast(tf.math.bincount(tf.cast(row, tf.int32), minlength=tf.cast(
                nrows, tf.int32), maxlength=tf.cast(nrows, tf.int32)), tf.int32),
        }

    def predict(self, model, text, batch_size=64):
        """`[[(word, tag, start, end), ...] per string]` with character offsets."""
        text = list(text)
        results = []
        for i in range(0, len(text), batch_size):
            chunk = text[i: i + batch_size]
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

    def export(self, model, export_dir):
        """SavedModel: `serving_default(text)` -> `tags`, `words`, `start`,
        `end` (byte offsets), `tag_ids`, `num_words`, `logits`, `probabilities`;
        `serving_ids` -> per-position `logits`, `probabilities`, `tag_ids`."""

        def serve_ids(inputs):
            logits = model(inputs, training=False)
            return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1),
                    "tag_ids": tf.argmax(logits, axis=-1, output_type=tf.int32)}

        def serve_text(texts):
            return self.tag_text(model, texts["text"])

        return export_task_model(export_dir, serve_text, serve_ids, self.text_inputs,
                                 track=[model, self.preprocessor])
