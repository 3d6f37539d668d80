"""Span search for extractive question answering: the n-best answers of each
question over all the windows of its context, in graph ops.

Spans `start <= end`, at most `max_answer_length` wordpieces, both inside the
context; a start counts only in the window where it has the most context
(`tfbert.text.windows.is_max_context`, google-research's rule), so each span
appears once. Score = start logit + end logit; the top `n_best_size` are kept.
The answer text is the exact byte range of the original context from the
first wordpiece's start to the last one's end. v2.0: the null score is the
smallest [CLS] start+end over the windows; the answer is "" when
`null - best > null_score_diff_threshold`.
"""

import numpy as np
import tensorflow as tf

from tfbert.models.span_labeler import MASKED_LOGIT
from tfbert.text.windows import is_max_context

NO_SPAN_SCORE = 2 * MASKED_LOGIT  # `score` when a question has no candidate span at all


def search_spans(w, start_logits, end_logits, context, max_answer_length, n_best_size,
                 version_2=False, null_score_diff_threshold=0.0):
    """The n-best answer spans of each question over all its windows (graph ops).

    `w`: the windows (`QuestionAnsweringTask.windows`); `start_logits` and
    `end_logits` `[windows, length]`; `context` the tf.string contexts
    `[batch]`. Returns the dict of named outputs that `QuestionAnsweringTask.
    export` documents (`answer`, `score`, `start_char`, `end_char`, the
    `nbest_*` fields, `num_windows`; v2.0 also `no_answer_score`, `null_score`).
    """
    batch = tf.shape(context, out_type=tf.int64)[0]
    n_windows = tf.shape(start_logits, out_type=tf.int64)[0]
    length = tf.shape(start_logits, out_type=tf.int64)[1]
    K = max_answer_length

    # === Which positions may start / end a span ===
    position = tf.range(length)[None, :]
    p = position - w["context_offset"][:, None]  # context piece index in the window
    in_context = (p >= 0) & (p < w["window_length"][:, None])
    # A start counts only in the window where it has the most context.
    n_pieces = tf.shape(w["piece_start"].values, out_type=tf.int64)[0]
    can_start = is_max_context(w, p, w["piece_start"].row_starts(), n_pieces)

    # === Span scores [windows, length, K]: start at s, end at s + k ===
    end_position = tf.range(length)[:, None] + tf.range(K, dtype=tf.int64)[None, :]
    end_index = tf.minimum(end_position, length - 1)
    end_scores = tf.gather(end_logits, end_index, axis=1)
    can_end = tf.gather(in_context, end_index, axis=1) & (end_position < length)[None]
    ok = can_start[:, :, None] & can_end
    span = tf.where(ok, start_logits[:, :, None] + end_scores, -np.inf)

    # === n-best per question over all its windows ===
    per_window = tf.reshape(span, [n_windows, -1])
    width = length * K
    grouped = tf.RaggedTensor.from_value_rowids(per_window, w["row"], nrows=batch)
    dense = grouped.merge_dims(1, 2).to_tensor(default_value=-np.inf)
    dense = tf.concat([dense, tf.fill([batch, n_best_size], -np.inf)], axis=1)
    top_score, top_index = tf.math.top_k(dense, k=n_best_size)
    top_index = tf.cast(top_index, tf.int64)
    found = top_score > -np.inf
    rows = tf.broadcast_to(tf.range(batch)[:, None], tf.shape(top_index))
    window = tf.where(found, tf.gather(w["first_window"], rows) + top_index // width, 0)
    start_pos = tf.where(found, (top_index % width) // K, 0)
    k = top_index % K
    piece_first = tf.gather(w["window_start"], window) + start_pos - tf.gather(
        w["context_offset"], window) + tf.gather(w["piece_start"].row_starts(), rows)
    piece_last = piece_first + k
    spare = tf.concat([w["piece_start"].values, [0]], 0), tf.concat(
        [w["piece_limit"].values, [0]], 0)
    byte_start = tf.where(found, tf.gather(spare[0], tf.where(found, piece_first, n_pieces)), 0)
    byte_end = tf.where(found, tf.gather(spare[1], tf.where(found, piece_last, n_pieces)), 0)
    flat = lambda logits, pos: tf.gather(tf.reshape(logits, [-1]), window * length + pos)
    start_logit = tf.where(found, flat(start_logits, start_pos), 0.0)
    end_logit = tf.where(found, flat(end_logits, tf.where(found, start_pos + k, 0)), 0.0)
    text_of = tf.gather(context, rows)
    text = tf.where(found, tf.strings.substr(text_of, byte_start, byte_end - byte_start,
                                             unit="BYTE"), "")

    def chars(byte):  # character offset of a byte offset
        return tf.cast(tf.strings.length(tf.strings.substr(text_of, tf.zeros_like(byte), byte,
                                                           unit="BYTE"),
                                         unit="UTF8_CHAR"), tf.int32)

    start_char = tf.where(found, chars(byte_start), -1)
    end_char = tf.where(found, chars(byte_end), -1)
    score = tf.where(found, top_score, NO_SPAN_SCORE)

    # === The answer (v2.0: null when [CLS] beats the best span) ===
    null = tf.math.unsorted_segment_min(start_logits[:, 0] + end_logits[:, 0], w["row"],
                                        batch)
    outputs = {"answer": text[:, 0], "score": score[:, 0], "start_char": start_char[:, 0],
               "end_char": end_char[:, 0]}
    if version_2:
        no_answer = null - score[:, 0]
        is_null = (~found[:, 0]) | (no_answer > null_score_diff_threshold)
        outputs.update(
            answer=tf.where(is_null, "", text[:, 0]),
            start_char=tf.where(is_null, -1, start_char[:, 0]),
            end_char=tf.where(is_null, -1, end_char[:, 0]),
            no_answer_score=no_answer, null_score=null)
    outputs.update(nbest_answers=text, nbest_scores=score, nbest_start_logits=start_logit,
                   nbest_end_logits=end_logit, nbest_start_char=start_char,
                   nbest_end_char=end_char, num_windows=tf.cast(w["num_windows"], tf.int32))
    return outputs
