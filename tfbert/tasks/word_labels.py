"""Labels on words, the model on wordpieces: the first-piece rule of BERT's
tagging (google-research/bert's NER convention), graph ops only.

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

import tensorflow as tf

from tfbert.text.windows import is_max_context

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
