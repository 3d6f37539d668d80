"""The first-piece rule without a model: labels on first pieces, laid out as
packed, and each word read back from its first piece (in one sequence or from
its best window). Through a task and a model: tests/tasks/test_tagging*.py."""

import numpy as np
import tensorflow as tf

from tfbert.models.word_labels import (IGNORE, best_window_word_logits, first_piece_positions,
                                       packed_labels, piece_labels)
from tfbert.text.windows import window_spans

# Two texts: words of 2, 1, 3 pieces, then of 1, 2 pieces (piece ids do not matter).
WORD_PIECES = tf.RaggedTensor.from_nested_row_lengths(
    tf.range(9, dtype=tf.int64), [[3, 2], [2, 1, 3, 1, 2]])


def test_labels_on_first_pieces_packed_like_the_inputs():
    labels = piece_labels(WORD_PIECES, tf.ragged.constant([[4, 5, 6], [7, 8]]))
    assert labels.to_list() == [[4, IGNORE, 5, 6, IGNORE, IGNORE], [7, 8, IGNORE]]
    packed = packed_labels(labels[:, :4], 7).numpy().tolist()  # cut to seq_length - 2 (+1)
    assert packed == [[IGNORE, 4, IGNORE, 5, 6, IGNORE, IGNORE],
                      [IGNORE, 7, 8, IGNORE, IGNORE, IGNORE, IGNORE]]


def test_first_piece_positions_count_from_each_texts_cls():
    assert first_piece_positions(WORD_PIECES).numpy().tolist() == [1, 3, 4, 1, 2]


def test_each_word_from_the_window_with_the_most_context():
    pieces = WORD_PIECES.merge_dims(1, 2)
    spans = window_spans(pieces.row_lengths(), 2, doc_stride=1, max_windows_per_text=2)
    n_windows = int(tf.reduce_sum(spans["num_windows"]))
    # Logits that name their window and sequence position: 100 * window + position.
    logits = tf.constant(100.0 * np.arange(n_windows)[:, None, None]
                         + np.arange(4)[None, :, None], tf.float32)  # [CLS] 2 pieces [SEP]
    got, covered = best_window_word_logits(WORD_PIECES, spans, logits)
    starts = spans["window_start"].numpy().tolist()
    rows = spans["row"].numpy().tolist()
    sizes = spans["window_length"].numpy().tolist()
    first_pieces = [(0, 0), (0, 2), (0, 3), (1, 0), (1, 1)]  # (text, piece) of each word
    for word, (row, piece) in enumerate(first_pieces):
        score = [min(piece - s, s + n - 1 - piece) + 0.01 * n
                 if r == row and s <= piece < s + n else -1
                 for r, s, n in zip(rows, starts, sizes)]
        if max(score) < 0:  # past max_windows_per_text
            assert not covered[word]
            continue
        best = int(np.argmax(score))  # ties: the first window
        assert covered[word]
        assert float(got[word, 0]) == 100 * best + 1 + piece - starts[best]
    assert covered.numpy().tolist() == [True, True, False, True, True]
