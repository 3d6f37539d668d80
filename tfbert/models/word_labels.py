"""Labels on words, the model on wordpieces: the first-piece rule of BERT's
tagging (google-research/bert's NER convention), graph ops only. Shared by
the tagging task (`tfbert.tasks.tagging`) and `tfbert.TokenClassifier`: the
packing of words and their labels, the loss and metrics, and the strings-in
outputs of the export (`tag_text`).

Each word's label goes on its first wordpiece and `IGNORE` on the others (and
on [CLS], [SEP] and padding), so the loss sees one label per word; a word's
prediction is read back from its first piece, in one packed sequence
(`first_piece_positions`) or, for texts longer than one window, from the
window where that piece has the most context (`best_window_word_logits`).

Example: the words "a", "bcd" (pieces b ##c ##d) labelled 1 and 2.
>>> word_pieces = tf.RaggedTensor.from_nested_row_lengths([5, 6, 7, 8], [[2], [1, 3]])
>>> labels = piece_labels(word_pieces, tf.ragged.constant([[1, 2]]))
>>> labels.to_list(), packed_labels(labels, 7).numpy().tolist()
([[1, 2, -1, -1]], [[-1, 1, 2, -1, -1, -1, -1]])
>>> first_piece_positions(word_pieces).numpy().tolist()
[1, 2]
"""

import keras
import tensorflow as tf

from tfbert.text.packer import trim_to_bucket
from tfbert.text.windows import is_max_context, pack_windows, window_values
from tfbert.text.word_splitting import word_pieces

IGNORE = -1  # label of positions without a word label ([CLS], [SEP], later pieces, padding)


def piece_labels(word_pieces, word_labels):
    """int32 ragged `[batch, (pieces)]`: each word's label on its first
    wordpiece, `IGNORE` on the others (`word_labels` `[batch, (words)]`)."""
    words = word_pieces.values  # [total words, (pieces)]
    piece_word = words.value_rowids()
    first = tf.range(tf.shape(piece_word, out_type=tf.int64)[0]) == tf.gather(
        words.row_starts(), piece_word)
    labels = tf.where(first, tf.gather(tf.cast(word_labels.flat_values, tf.int32), piece_word),
                      IGNORE)
    return word_pieces.with_flat_values(labels).merge_dims(1, 2)


def packed_labels(labels, seq_length):
    """int32 `[batch, seq_length]`: ragged piece labels (already cut to fit)
    laid out as the packer lays out the pieces: [CLS] pieces [SEP] padding,
    `IGNORE` on all but the pieces."""
    edge = tf.fill([labels.nrows(), 1], IGNORE)
    labels = tf.concat([edge, labels, edge], axis=1)
    return labels.to_tensor(default_value=IGNORE, shape=[None, seq_length])


def first_piece_positions(word_pieces):
    """int64 `[words]` over the batch's flat words: the sequence position of
    each word's first piece in its text's packed sequence (after [CLS],
    before truncation)."""
    counts = word_pieces.row_lengths(axis=2).flat_values
    cum = tf.cumsum(counts, exclusive=True)
    cum = tf.concat([cum, [tf.reduce_sum(counts)]], axis=0)
    word_row = word_pieces.value_rowids()
    return 1 + cum[:-1] - tf.gather(cum, tf.gather(word_pieces.row_starts(), word_row))


def best_window_word_logits(word_pieces, spans, logits):
    """`(logits [words, classes], covered [words])` over the batch's flat
    words: the logits of each word's first piece from the window where that
    piece has the most context (google-research's rule). `spans` and
    `logits` `[windows, seq, classes]` are the windows' (`pack_windows`,
    [CLS] window [SEP]); `covered` is False for words no window reached."""
    pieces = word_pieces.merge_dims(1, 2)
    n_pieces = tf.shape(pieces.values, out_type=tf.int64)[0]
    position = tf.range(tf.shape(logits, out_type=tf.int64)[1])[None, :] - 1  # after [CLS]
    position = tf.broadcast_to(position, tf.shape(logits, out_type=tf.int64)[:2])
    best = is_max_context(spans, position, pieces.row_starts(), n_pieces)
    piece = tf.where(best, tf.gather(pieces.row_starts(), spans["row"])[:, None]
                     + spans["window_start"][:, None] + position, n_pieces)
    # One best window per piece: the sum over windows is that window's logits.
    per_piece = tf.math.unsorted_segment_sum(logits, piece, n_pieces + 1)
    covered = tf.math.unsorted_segment_max(tf.cast(best, tf.int32), piece, n_pieces + 1) > 0
    first_piece = word_pieces.values.row_starts()  # flat index of each word's first piece
    first_piece = tf.where(word_pieces.values.row_lengths() > 0, first_piece, n_pieces)
    return tf.gather(per_piece, first_piece), tf.gather(covered, first_piece)


def window_word_labels(preprocessor, word_pieces, word_labels, seq_length, **window_args):
    """`(spans, inputs, labels)` of the windows of texts longer than one
    sequence (`pack_windows`, `[CLS] window [SEP]`; `window_args` go to
    `window_spans`): one row a window, each window labelling the first pieces
    of the words in it (`word_labels` `[batch, (words)]`, or None: no labels)."""
    spans, inputs = pack_windows(preprocessor, word_pieces.merge_dims(1, 2), seq_length,
                                 **window_args)
    if word_labels is None:
        return spans, inputs
    labels = window_values(piece_labels(word_pieces, word_labels), spans)
    return spans, inputs, packed_labels(labels, seq_length)


def window_word_logits(call, preprocessor, word_pieces, seq_length, **window_args):
    """`(logits [words, classes], covered [words])` over the batch's flat words
    of texts read in windows: `call` (the model on the three id tensors) runs
    on every window, cut to the longest, and each word is read from its best
    window (`best_window_word_logits`); `covered` is False past `max_windows`."""
    spans, inputs = window_word_labels(preprocessor, word_pieces, None, seq_length,
                                       **window_args)
    longest = tf.reduce_max(tf.concat([tf.reduce_sum(inputs["input_mask"], 1), [2]], 0))
    logits = call({k: v[:, :longest] for k, v in inputs.items()})
    return best_window_word_logits(word_pieces, spans, logits)


def word_pieces_of(preprocessor, words):
    """Wordpiece ids `[batch, (words), (pieces)]` of words `[batch, (words)]`
    (tf.string ragged); all pieces of one word stay together (byte-level
    BPE: each word as after a space, `word_splitting.word_pieces`)."""
    return tf.RaggedTensor.from_row_splits(word_pieces(preprocessor, words.flat_values),
                                           words.row_splits)


def pack_words(preprocessor, word_pieces, word_labels=None):
    """The three int32 encoder inputs `[batch, seq_length]`; with `word_labels`
    `[batch, (words)]` also int32 `[batch, seq_length]` labels at first pieces
    and `IGNORE` elsewhere."""
    inputs = preprocessor.bert_pack_inputs([word_pieces])
    if word_labels is None:
        return inputs
    seq_length = preprocessor.seq_length
    labels = piece_labels(word_pieces, word_labels)[:, : seq_length - 2]  # as truncated
    return inputs, packed_labels(labels, seq_length)


def weighted_labels(inputs, labels, bucketing=True):
    """`(inputs, labels, weights)`: weight 1 where a label is, labels >= 0;
    `bucketing`: inputs and labels cut to a bucket of the batch's longest
    sequence (the cut columns hold only padding, labelled `IGNORE`)."""
    if bucketing:
        inputs = trim_to_bucket(inputs)
        labels = labels[:, :tf.shape(inputs["input_mask"])[1]]
    weights = tf.cast(labels != IGNORE, tf.float32)
    return inputs, tf.maximum(labels, 0), weights


def tagging_loss():
    """Cross-entropy over the labelled positions only (not over all padded ones)."""
    return keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="mean_with_sample_weight")


def tagging_metrics():
    """Per-word accuracy (`WordAccuracy`: over the positions with a weight)."""
    return [WordAccuracy(name="accuracy")]


@keras.saving.register_keras_serializable(package="tfbert")
class WordAccuracy(keras.metrics.Metric):
    """Accuracy over the labelled positions: the sum of `sample_weight` where
    the argmax of `y_pred` `[batch, seq, classes]` is `y_true` `[batch, seq]`,
    over the sum of `sample_weight`. Keras' `SparseCategoricalAccuracy` with
    `[batch, seq]` weights averages each sequence over its padded width
    first, so its value depends on the batches' widths; this one is the
    fraction of tagged words whatever the batching."""

    def __init__(self, name="accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.correct = self.add_variable(shape=(), initializer="zeros", name="correct")
        self.words = self.add_variable(shape=(), initializer="zeros", name="words")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = keras.ops.cast(y_true, "int32")
        predicted = keras.ops.cast(keras.ops.argmax(y_pred, axis=-1), "int32")
        hit = keras.ops.cast(predicted == y_true, self.dtype)
        weight = (keras.ops.ones_like(hit) if sample_weight is None
                  else keras.ops.cast(sample_weight, self.dtype))
        self.correct.assign_add(keras.ops.sum(hit * weight))
        self.words.assign_add(keras.ops.sum(weight))

    def result(self):
        return keras.ops.divide_no_nan(self.correct, self.words)

    def reset_state(self):
        self.correct.assign(0.0)
        self.words.assign(0.0)


def first_piece_logits(word_pieces, logits):
    """`(logits [words, classes], kept [words])` over the batch's flat words:
    each word's first-piece logits in one packed sequence (`logits` `[batch,
    seq, classes]`, possibly cut to a bucket); `kept` is False for words whose
    first piece was truncated away (or that have no piece)."""
    return logits_at_first_pieces(logits, first_piece_positions(word_pieces),
                                  word_pieces.row_lengths(axis=2).flat_values,
                                  word_row=word_pieces.value_rowids())


def logits_at_first_pieces(logits, position, num_pieces, word_row=None):
    """`first_piece_logits` from each word's first-piece position
    (`first_piece_positions`) and piece count: over the batch's words `[words]`
    with each word's text row `word_row`, or without it per text `[batch,
    words]` (padding words have no pieces: never kept)."""
    last = tf.shape(logits, out_type=tf.int64)[1] - 1
    kept = (position < last) & (num_pieces > 0)
    position = tf.minimum(position, last)
    if word_row is None:
        return tf.gather(logits, position, batch_dims=1), kept
    return tf.gather_nd(logits, tf.stack([word_row, position], axis=1)), kept


def word_outputs(text, starts, ends, word_logits, kept, label_list):
    """The named per-word outputs of tagging raw strings `text` `[batch]`
    (graph ops): `tag_ids`, `tags`, `words`, `start`, `end` (byte offsets)
    `[batch, words]` padded with -1 / "", and `num_words` `[batch]`; only the
    `kept` words. `starts`, `ends` `[batch, (words)]`; `word_logits`, `kept`
    over the batch's flat words."""
    row = tf.boolean_mask(starts.value_rowids(), kept)
    tag_id = tf.argmax(tf.boolean_mask(word_logits, kept), axis=-1, output_type=tf.int32)
    start = tf.boolean_mask(starts.flat_values, kept)
    end = tf.boolean_mask(ends.flat_values, kept)
    word = tf.strings.substr(tf.gather(text, row), start, end - start, unit="BYTE")
    nrows = tf.shape(text, out_type=tf.int64)[0]

    def per_text(values, default):
        return tf.RaggedTensor.from_value_rowids(values, row, nrows=nrows).to_tensor(default)

    return {
        "tag_ids": per_text(tag_id, -1),
        "tags": per_text(tf.gather(tf.constant(label_list), tag_id), ""),
        "words": per_text(word, ""),
        "start": per_text(start, -1),
        "end": per_text(end, -1),
        "num_words": tf.cast(tf.math.bincount(tf.cast(row, tf.int32), minlength=tf.cast(
            nrows, tf.int32), maxlength=tf.cast(nrows, tf.int32)), tf.int32),
    }


def tag_strings(call, splitter, preprocessor, label_list, text):
    """Graph ops: raw strings `[batch]` -> the tagging export's named outputs
    (one packed sequence a text: words past `seq_length` pieces are not
    returned): `logits`, `probabilities` `[batch, seq, classes]` and
    `word_outputs`'s. `call`: the model on the three id tensors; `splitter`:
    a `tfbert.text.word_splitting.WordSplitter`."""
    text = tf.convert_to_tensor(text)
    word_pieces, starts, ends = splitter(text)
    logits = call(pack_words(preprocessor, word_pieces))
    word_logits, kept = first_piece_logits(word_pieces, logits)
    return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1),
            **word_outputs(text, starts, ends, word_logits, kept, label_list)}


def tag_strings_in_windows(call, splitter, preprocessor, label_list, text, seq_length,
                           **window_args):
    """`tag_strings` for texts longer than one sequence: every word tagged from
    its best window (`window_word_logits`; words past `max_windows` are not
    returned), with `word_probabilities` `[batch, words, classes]` in place of
    the per-position outputs (a position of one window means nothing to the caller)."""
    text = tf.convert_to_tensor(text)
    word_pieces, starts, ends = splitter(text)
    word_logits, kept = window_word_logits(call, preprocessor, word_pieces, seq_length,
                                           **window_args)
    probabilities = tf.RaggedTensor.from_value_rowids(
        tf.nn.softmax(tf.boolean_mask(word_logits, kept), axis=-1),
        tf.boolean_mask(starts.value_rowids(), kept), nrows=tf.shape(text, out_type=tf.int64)[0])
    return {"word_probabilities": probabilities.to_tensor(0.0),
            **word_outputs(text, starts, ends, word_logits, kept, label_list)}


def ids_outputs(logits):
    """The tagging export's `serving_ids` outputs from per-position logits."""
    return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1),
            "tag_ids": tf.argmax(logits, axis=-1, output_type=tf.int32)}
