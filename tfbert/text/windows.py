"""Overlapping windows over long texts: one mechanism for every task, graph ops only.

A text of any length becomes windows of at most `budget` wordpieces each. The
step between window starts comes in either of the two conventions that BERT
code uses:

- `doc_stride` (google-research/bert's `run_squad.py`): wordpieces between
  window starts; a window moves on by `min(budget, doc_stride)`;
- `doc_overlap` (Hugging Face's `stride`): wordpieces shared by neighbouring
  windows; windows start `budget - doc_overlap` apart.

Question answering windows its contexts with these functions (after the
question), classification, tagging and sentence embeddings window whole
texts. They are core TensorFlow ops (no tf-text custom ops, no Python per
text), so the same code runs in `tf.data`, in `predict` and inside exported
SavedModels.

Example: 11 wordpieces, windows of 4 starting 2 apart.
>>> spans = window_spans(tf.constant([11], tf.int64), 4, doc_stride=2)
>>> spans["window_start"].numpy().tolist(), spans["window_length"].numpy().tolist()
([0, 2, 4, 6, 8], [4, 4, 4, 4, 3])
>>> ids = tf.ragged.constant([[10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]], tf.int64)
>>> window_values(ids, spans)[1].numpy().tolist()
[12, 13, 14, 15]
"""

import numpy as np
import tensorflow as tf

WINDOW_MODES = ("truncate", "windows")  # `task.long_text`


def window_step(budget, doc_stride=None, doc_overlap=None):
    """Wordpieces between window starts for windows of `budget` wordpieces.
    `doc_overlap` (if set) wins over `doc_stride`; neither: half a window."""
    if doc_overlap is not None:
        return budget - doc_overlap
    if doc_stride is None:
        return tf.maximum(_floordiv(budget, 2), 1)
    return tf.minimum(budget, doc_stride)


def _floordiv(a, b):
    """Integer `a // b` computed in int32 (TFLite's FLOOR_DIV has no int64
    kernel; counts of wordpieces fit), returned in `a`'s dtype."""
    a = tf.convert_to_tensor(a)
    return tf.cast(tf.math.floordiv(tf.cast(a, tf.int32), tf.cast(b, tf.int32)), a.dtype)


def window_spans(num_pieces, budget, doc_stride=None, doc_overlap=None,
                 max_windows_per_text=None, max_windows=None, error=None):
    """Where the windows of each text start and how long they are.

    Args:
        num_pieces: int64 `[batch]`, wordpieces of each text.
        budget: wordpieces per window (int64 `[batch]` or a Python int), >= 1.
        doc_stride, doc_overlap: the step, in one of the two conventions
            (module docstring); neither: windows start half a window apart.
        max_windows_per_text: keep at most this many windows of a text (its
            first ones: the rest of a longer text is not read).
        max_windows: at most this many windows in the whole batch; more is an
            `InvalidArgumentError` with `error` as its message (memory bound).

    Returns a dict: int64 `[windows]` `row` (the text of each window),
    `window_start` and `window_length` (in the text's wordpieces); int64
    `[batch]` `first_window` (index of each text's first window) and
    `num_windows`. An empty text gets one empty window.
    """
    num_pieces = tf.cast(num_pieces, tf.int64)
    budget = tf.cast(tf.broadcast_to(budget, tf.shape(num_pieces)), tf.int64)
    step = tf.cast(window_step(budget, doc_stride, doc_overlap), tf.int64)
    extra = tf.maximum(num_pieces - budget, 0)
    num_windows = 1 + _floordiv(extra + step - 1, step)
    if max_windows_per_text is not None:
        num_windows = tf.minimum(num_windows, max_windows_per_text)
    total = tf.reduce_sum(num_windows)
    if max_windows is not None:
        check = tf.debugging.assert_less_equal(
            total, tf.constant(max_windows, tf.int64),
            message=error or f"more than max_windows={max_windows} windows in one call")
        with tf.control_dependencies([check]):  # stop before packing thousands of windows
            total = tf.identity(total)
    row = tf.repeat(tf.range(tf.shape(num_pieces, out_type=tf.int64)[0]), num_windows)
    first_window = tf.cumsum(num_windows, exclusive=True)
    index_in_row = tf.range(total) - tf.gather(first_window, row)
    window_start = index_in_row * tf.gather(step, row)
    window_length = tf.minimum(tf.gather(num_pieces, row) - window_start, tf.gather(budget, row))
    return {"row": row, "window_start": window_start, "window_length": window_length,
            "first_window": first_window, "num_windows": num_windows}


def window_values(values, spans):
    """The windows' slices of a ragged `[batch, (pieces)]` tensor (ids,
    offsets, labels): ragged `[windows, (window_length)]`."""
    # A dense gather then a mask, not tf.ragged.range: RaggedRange has no
    # TFLite kernel, and this runs in the strings-in TFLite export too.
    length = spans["window_length"]
    flat_start = tf.gather(values.row_starts(), spans["row"]) + spans["window_start"]
    offset = tf.range(tf.reduce_max(tf.concat([length, [0]], 0)))[None, :]
    inside = offset < length[:, None]
    spare = tf.shape(values.values, out_type=tf.int64)[0]  # index of a padding element
    index = tf.where(inside, flat_start[:, None] + offset, spare)
    padded = tf.concat([values.values, tf.zeros([1], values.dtype)], 0)
    return tf.RaggedTensor.from_tensor(tf.gather(padded, index), lengths=length)


def pair_separators(preprocessor):
    """Special tokens between a pair's two texts: 1 (BERT's `[SEP]`) or 2
    (RoBERTa's `</s></s>`). The second text starts `1 + this` tokens after
    the first one's end."""
    return 2 if getattr(preprocessor, "layout", "bert") == "roberta" else 1


def pair_specials(preprocessor):
    """Special tokens of a packed pair: 3 (`[CLS] a [SEP] b [SEP]`) or 4
    (`<s> a </s></s> b </s>`); a single text has 2 either way."""
    return 2 + pair_separators(preprocessor)


def check_pair_length(preprocessor, seq_length, key=None):
    """A packed pair's special tokens fit: `seq_length` at least `pair_specials`
    (3 for BERT, 4 for RoBERTa). One line otherwise, naming `key` (a config's
    `Class.seq_length`) or the keyword argument, before any text is packed."""
    need = pair_specials(preprocessor)
    if seq_length < need:
        what = f"{key}: {seq_length}" if key else f"seq_length={seq_length}"
        layout = "<s> a </s></s> b </s>" if need == 4 else "[CLS] a [SEP] b [SEP]"
        raise ValueError(f"{what} must be >= {need} for pairs, the special tokens of {layout}.")


def first_text_length(preprocessor, seq_length):
    """Wordpieces kept of a windowed pair's first text: half of what the
    special tokens leave (3 for BERT's packing, 4 for RoBERTa's), as
    transformers' `truncation=True` splits a pair of two long texts."""
    return (seq_length - pair_specials(preprocessor)) // 2


def smallest_window(preprocessor, seq_length, pairs):
    """Wordpieces of text in the smallest window (pairs: after the longest kept first text)."""
    if pairs:
        return seq_length - pair_specials(preprocessor) - first_text_length(preprocessor,
                                                                            seq_length)
    return seq_length - 2


def check_doc_overlap(doc_overlap, preprocessor, seq_length, pairs=False, key=None):
    """Each window must move on: `doc_overlap` (None: unset) below the text
    wordpieces of the smallest window, which `preprocessor`'s special tokens
    decide. One line otherwise, naming `key` (a config's `Class.doc_overlap`)
    or the keyword argument (`doc_overlap=N`)."""
    if doc_overlap is None:
        return
    room = smallest_window(preprocessor, seq_length, pairs)
    if doc_overlap >= room:
        what = f"{key}: {doc_overlap}" if key else f"doc_overlap={doc_overlap}"
        after = " after the first text" if pairs else ""
        raise ValueError(f"{what} must be < {room}, the text wordpieces of a window{after} at "
                         f"seq_length={seq_length}.")


def pack_windows(preprocessor, pieces, seq_length, prefix=None, **window_args):
    """Windows of ragged wordpiece ids `pieces` `[batch, (pieces)]`, packed as
    `[CLS] window [SEP]`, or `[CLS] prefix [SEP] window [SEP]` (RoBERTa's
    `<s> prefix </s></s> window </s>` by a byte-level BPE preprocessor) with `prefix`
    `[batch, (ids)]` (a question, the first text of a pair) before each window
    of its row. `window_args` go to `window_spans`. Returns `(spans, inputs)`:
    the spans and the three int32 `[windows, seq_length]` encoder inputs."""
    budget = seq_length - 2
    if prefix is not None:
        budget = seq_length - 2 - pair_separators(preprocessor) - prefix.row_lengths()
    spans = window_spans(pieces.row_lengths(), budget, **window_args)
    segments = [window_values(pieces, spans)]
    if prefix is not None:
        segments.insert(0, tf.gather(prefix, spans["row"]))
    return spans, preprocessor.bert_pack_inputs(segments, seq_length=seq_length)


def is_max_context(spans, position, piece_row_starts, num_pieces_total):
    """True where a wordpiece is in the window that gives it the most context.

    google-research's `_check_is_max_context`: a piece's score in a window is
    `min(pieces left of it, pieces right of it) + 0.01 * window length`; each
    piece counts in its best window only (ties: the first). `position` is
    int64 `[windows, L]`, the index of a window's piece at each column (out of
    `[0, window_length)` where no piece is); `piece_row_starts` the ragged
    pieces' `row_starts()` and `num_pieces_total` their total count. Returns
    bool `[windows, L]`.
    """
    p = position
    length = spans["window_length"][:, None]
    in_window = (p >= 0) & (p < length)
    score = tf.cast(tf.minimum(p, length - 1 - p), tf.float32) + 0.01 * tf.cast(
        length, tf.float32)
    piece = tf.where(in_window, tf.gather(piece_row_starts, spans["row"])[:, None]
                     + spans["window_start"][:, None] + p, num_pieces_total)  # spare slot
    best = tf.math.unsorted_segment_max(tf.where(in_window, score, -1.0), piece,
                                        num_pieces_total + 1)
    is_best = in_window & (score == tf.gather(best, piece))
    n_windows = tf.shape(p, out_type=tf.int64)[0]
    window_id = tf.broadcast_to(tf.range(n_windows)[:, None], tf.shape(piece))
    first = tf.math.unsorted_segment_min(tf.where(is_best, window_id, n_windows), piece,
                                         num_pieces_total + 1)
    return is_best & (window_id == tf.gather(first, piece))


def pool_windows(values, spans, pooling="mean", weights=None):
    """One row per text from one row per window (`values` `[windows, ...]`).

    `mean` (weighted by `weights` `[windows]` when given), `max` (elementwise)
    or `first` (the text's first window).
    """
    row = spans["row"]
    nrows = tf.shape(spans["num_windows"], out_type=tf.int64)[0]
    if pooling == "first":
        return tf.gather(values, spans["first_window"])
    if pooling == "max":
        return tf.math.unsorted_segment_max(values, row, nrows)
    if weights is None:
        weights = tf.ones_like(row, values.dtype)
    weights = tf.reshape(tf.cast(weights, values.dtype),
                         tf.concat([[-1], tf.ones([tf.rank(values) - 1], tf.int32)], 0))
    total = tf.math.unsorted_segment_sum(weights, row, nrows)
    return tf.math.unsorted_segment_sum(values * weights, row, nrows) / tf.maximum(total, 1e-9)


def count_windows(preprocessor, texts, seq_length, doc_stride=None, doc_overlap=None,
                  max_windows=None, chunk=4096):
    """`(wordpieces, windows)` per text of a list of strings, as NumPy int64
    (tokenized in chunks; windows of `[CLS] window [SEP]` at `seq_length`)."""
    counts = [np.zeros(0, np.int64)]
    for start in range(0, len(texts), chunk):
        ids = preprocessor.tokenize(tf.constant(texts[start:start + chunk], tf.string))
        counts.append(ids.merge_dims(1, -1).row_lengths().numpy())
    counts = np.concatenate(counts)
    windows = window_spans(counts, seq_length - 2, doc_stride, doc_overlap,
                           max_windows_per_text=max_windows)["num_windows"].numpy()
    return counts, windows


def window_batches(num_windows, batch_size):
    """`[(start, end), ...]`: consecutive items whose windows add up to at most
    `batch_size` per batch (an item with more is a batch of its own), so a call
    holds the windows of several texts and memory stays bounded."""
    done = np.concatenate([[0], np.cumsum(num_windows)])
    batches, start = [], 0
    while start < len(num_windows):
        end = max(start + 1, int(np.searchsorted(done, done[start] + batch_size, "right")) - 1)
        batches.append((start, end))
        start = end
    return batches
