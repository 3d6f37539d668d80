"""tfbert.text.windows: window starts in both stride conventions, caps, max context, pooling."""

import numpy as np
import pytest
import tensorflow as tf

from tfbert.text.windows import (is_max_context, pool_windows, window_spans, window_step,
                                 window_values)


def spans_of(lengths, budget, **kwargs):
    spans = window_spans(tf.constant(lengths, tf.int64), budget, **kwargs)
    return {k: v.numpy().tolist() for k, v in spans.items()}


def test_doc_stride_is_google_research_rule():
    # run_squad.py: start += min(length, doc_stride) until the end is covered.
    s = spans_of([10, 3, 0], 4, doc_stride=3)
    assert s["row"] == [0, 0, 0, 1, 2]
    assert s["window_start"] == [0, 3, 6, 0, 0]
    assert s["window_length"] == [4, 4, 4, 3, 0]  # an empty text gets one empty window
    assert s["num_windows"] == [3, 1, 1] and s["first_window"] == [0, 3, 4]
    # A stride above the budget is cut to it: no piece is skipped.
    assert spans_of([10], 4, doc_stride=9)["window_start"] == [0, 4, 8]


def test_doc_overlap_is_hugging_face_rule():
    # Neighbouring windows share doc_overlap pieces; doc_overlap wins over doc_stride.
    s = spans_of([10], 4, doc_stride=1, doc_overlap=1)
    assert s["window_start"] == [0, 3, 6] and s["window_length"] == [4, 4, 4]
    assert int(window_step(tf.constant(8), None, None)) == 4  # default: half a window


def test_every_piece_covered_and_values_sliced():
    lengths = [0, 1, 7, 23, 64]
    ids = tf.ragged.constant([list(range(100 * i, 100 * i + n)) for i, n in enumerate(lengths)],
                             tf.int64)
    for kwargs in ({"doc_stride": 2}, {"doc_overlap": 0}, {"doc_overlap": 4}, {}):
        spans = window_spans(ids.row_lengths(), 6, **kwargs)
        windows = window_values(ids, spans).to_list()
        for row, n in enumerate(lengths):
            covered = sorted({v for w, r in zip(windows, spans["row"].numpy()) if r == row
                              for v in w})
            assert covered == list(range(100 * row, 100 * row + n)), (kwargs, row)
            assert all(len(w) <= 6 for w in windows)


def test_caps():
    # Per text: the first windows only (the rest of the text is not read).
    s = spans_of([1000, 5], 10, doc_stride=10, max_windows_per_text=3)
    assert s["num_windows"] == [3, 1] and s["window_start"] == [0, 10, 20, 0]
    # Per call: an error naming the limit, before anything is packed.
    with pytest.raises(tf.errors.InvalidArgumentError, match="too many: max_windows=4"):
        spans_of([1000], 10, max_windows=4, error="too many: max_windows=4")


def test_max_context_picks_one_window_per_piece():
    # 10 pieces, windows of 4 starting 2 apart: [0-3] [2-5] [4-7] [6-9].
    spans = window_spans(tf.constant([10], tf.int64), 4, doc_stride=2)
    position = tf.broadcast_to(tf.range(6, dtype=tf.int64)[None] - 1, [4, 6])  # [CLS] first
    mask = is_max_context(spans, position, tf.constant([0], tf.int64), 10).numpy()
    owner = {}
    for w in range(4):
        for column in range(6):
            if mask[w, column]:
                piece = 2 * w + column - 1
                assert piece not in owner
                owner[piece] = w
    assert sorted(owner) == list(range(10))
    # A piece in the middle of a window wins over the same piece at a window's edge.
    assert owner[2] == 0 and owner[3] == 1 and owner[4] == 1 and owner[9] == 3


def test_pooling():
    spans = window_spans(tf.constant([5, 1], tf.int64), 2, doc_stride=2)  # 3 + 1 windows
    values = tf.constant([[1.0, 0.0], [3.0, 4.0], [5.0, -2.0], [7.0, 7.0]])
    np.testing.assert_allclose(pool_windows(values, spans, "mean"), [[3, 2 / 3], [7, 7]],
                               rtol=1e-6)
    np.testing.assert_allclose(pool_windows(values, spans, "max"), [[5, 4], [7, 7]])
    np.testing.assert_allclose(pool_windows(values, spans, "first"), [[1, 0], [7, 7]])
    weighted = pool_windows(values, spans, "mean", weights=spans["window_length"])
    np.testing.assert_allclose(weighted, [[(2 + 6 + 5) / 5, (0 + 8 - 2) / 5], [7, 7]],
                               rtol=1e-6)


def test_window_batches_bound_each_call():
    from tfbert.text.windows import window_batches

    windows = [1, 3, 2, 9, 1, 1, 4]
    batches = window_batches(windows, 4)
    assert batches == [(0, 2), (2, 3), (3, 4), (4, 6), (6, 7)]  # the 9-window text alone
    assert [(a, b) for a, b in batches if sum(windows[a:b]) > 4] == [(3, 4)]
    assert window_batches([1] * 10, 3)[-1] == (9, 10) and window_batches([], 3) == []


def test_count_windows_of_raw_texts():
    from tfbert import BertPreprocessor
    from tfbert.text.windows import count_windows

    pre = BertPreprocessor(vocab_file="tests/data/pretraining/vocab.txt", seq_length=8)
    texts = ["", "open the file", " ".join(["open the file and read it"] * 5)]
    counts, windows = count_windows(pre, texts, 8, doc_stride=3, max_windows=4, chunk=2)
    lengths = pre.tokenize(tf.constant(texts)).merge_dims(1, 2).row_lengths().numpy()
    np.testing.assert_array_equal(counts, lengths)
    assert windows.tolist() == [1, 1, min(4, 1 + -(-(lengths[2] - 6) // 3))]
