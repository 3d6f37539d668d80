"""Extractive question answering in graph ops: the windows of (question,
context) pairs, the training targets, the span search over all windows of a
question and the answer function of raw strings. Shared by the QA task
(`tfbert.tasks.question_answering`) and `tfbert.models.question_answerer.
QuestionAnswerer`, so `tf.data`, `predict`, dev evaluation and the exported
SavedModel run one implementation.

Windows are `[CLS] question [SEP] context window [SEP]` (a byte-level BPE
preprocessor: RoBERTa's `<s> question </s></s> context window </s>`): the
question is cut to `max_query_length` wordpieces, and a long context is
covered by windows of `seq_length - 3 - len(question)` wordpieces (RoBERTa:
`- 4`; `tfbert.text.windows`: the `doc_stride` or `doc_overlap` convention). A window's training target is the
gold answer's first and last wordpiece inside it, or [CLS] (position 0) when
the answer is not wholly inside it or the question has none (SQuAD v2.0).

The span search: spans `start <= end`, at most `max_answer_length`
wordpieces, both inside the context; a start counts only in the window where
it has the most context (`tfbert.text.windows.is_max_context`,
google-research's rule), so each span appears once. Score = start logit +
end logit; the top `n_best_size` are kept. The answer text is the exact byte
range of the original context from the first wordpiece's start to the last
one's end. v2.0: the null score is the smallest [CLS] start+end over the
windows; the answer is "" when `null - best > null_score_diff_threshold`.

Example:
>>> pre = BertPreprocessor(vocab_file="tests/data/pretraining/vocab.txt")
>>> w = question_windows(pre, tf.constant(["Who?"]), tf.constant(
...     ["one two three four five six seven eight nine ten eleven"]), seq_length=16,
...     max_query_length=4, doc_stride=4)
>>> w["window_start"].numpy().tolist(), w["window_length"].numpy().tolist()
([0, 4, 8, 12, 16], [10, 10, 10, 10, 8])
"""

import keras
import numpy as np
import tensorflow as tf

from tfbert.models.span_labeler import MASKED_LOGIT
from tfbert.text.windows import is_max_context, pack_windows, pair_separators

# The graph check's message, matched in the error (no quote marks: TensorFlow escapes them).
ANSWER_NOT_AT_START = "tfbert: an answer text is not in its context at its answer_start"

NO_SPAN_SCORE = 2 * MASKED_LOGIT  # `score` when a question has no candidate span at all
# BERT's loss is the mean of the start and end cross-entropies.
SPAN_LOSS_WEIGHTS = {"start_logits": 0.5, "end_logits": 0.5}


def span_loss():
    """The loss of the span head (per output; weighted by `SPAN_LOSS_WEIGHTS`)."""
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return {"start_logits": loss, "end_logits": loss}


def span_metrics():
    """How often a window's start / end target is the arg-max position
    (Keras reports them as `start_logits_accuracy`, `end_logits_accuracy`)."""
    return {"start_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
            "end_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}


def question_windows(preprocessor, question, context, seq_length, max_query_length,
                     doc_stride=128, doc_overlap=None, max_windows=None, error=None):
    """Windows of a batch of (question, context) strings, graph ops only.

    Returns a dict: `inputs` (the three int32 `[windows, seq_length]`),
    int64 `[windows]` `row` (question of each window), `window_start`
    and `window_length` (in context wordpieces), `context_offset`
    (sequence position of the window's first context wordpiece), int64
    `[batch]` `first_window` and `num_windows`, and the context wordpieces'
    byte offsets `piece_start` / `piece_limit` (int64 ragged `[batch, (pieces)]`).
    More than `max_windows` windows in the batch: an `InvalidArgumentError`
    saying `error`.
    """
    tf.debugging.assert_equal(tf.shape(question), tf.shape(context), message=(
        "`question` and `context` must have the same batch size"))
    q_ids = preprocessor.tokenize(question).merge_dims(1, 2)[:, :max_query_length]
    ids, starts, limits = preprocessor.tokenize_with_offsets(context)
    c_ids = ids.merge_dims(1, 2)
    piece_start = tf.cast(starts.merge_dims(1, 2), tf.int64)
    piece_limit = tf.cast(limits.merge_dims(1, 2), tf.int64)

    # === Windows: [CLS] question [SEP] window [SEP] (run_squad.py's doc_spans) ===
    if max_windows is not None and error is None:
        error = (f"the contexts need more than max_windows={max_windows} windows; send "
                 "fewer or shorter contexts per call (or raise max_windows)")
    spans, inputs = pack_windows(preprocessor, c_ids, seq_length, prefix=q_ids,
                                 doc_stride=doc_stride, doc_overlap=doc_overlap,
                                 max_windows=max_windows, error=error)
    # The context follows [CLS] q [SEP] (RoBERTa: <s> q </s></s>).
    context_offset = 1 + pair_separators(preprocessor) + tf.gather(q_ids.row_lengths(),
                                                                  spans["row"])
    return {**spans, "inputs": inputs, "context_offset": context_offset,
            "piece_start": piece_start, "piece_limit": piece_limit}


def answer_byte_range(context, answer_start, answer_text):
    """int64 `[batch]` byte `(start, end)` in the UTF-8 `context` of answers
    given as a character `answer_start` and their text; `(-1, -1)` for no
    answer (a negative start or an empty text). An answer whose text is not
    at its start is an `InvalidArgumentError`."""
    answer_start = tf.cast(answer_start, tf.int64)
    none = (answer_start < 0) | (tf.strings.length(answer_text) == 0)
    char_start = tf.where(none, tf.zeros_like(answer_start), answer_start)
    before = tf.strings.substr(context, tf.zeros_like(char_start), char_start, unit="UTF8_CHAR")
    byte_start = tf.cast(tf.strings.length(before), tf.int64)
    byte_length = tf.cast(tf.strings.length(answer_text), tf.int64)
    found = tf.strings.substr(context, byte_start, byte_length) == answer_text
    check = tf.debugging.assert_equal(none | found, True, message=ANSWER_NOT_AT_START)
    with tf.control_dependencies([check]):
        byte_start = tf.identity(byte_start)
    no_answer = tf.constant(-1, tf.int64)
    return (tf.where(none, no_answer, byte_start),
            tf.where(none, no_answer, byte_start + byte_length))


def window_targets(w, answer_start, answer_end):
    """Start/end positions `[windows]` of the answer (byte range `answer_start`,
    `answer_end` `[batch]`) in each window of `w` (`question_windows`); 0
    ([CLS]) outside it or for no answer (start -1). The dict the span head's
    loss takes: `{"start_logits": int32, "end_logits": int32}`."""
    starts = w["piece_start"].to_tensor(default_value=np.iinfo(np.int64).max)
    limits = w["piece_limit"].to_tensor(default_value=np.iinfo(np.int64).max)
    answer_start = tf.cast(answer_start, tf.int64)
    answer_end = tf.cast(answer_end, tf.int64)
    # First piece ending after the answer start; last piece starting before its end.
    first = tf.searchsorted(limits, answer_start[:, None], side="right",
                            out_type=tf.int64)[:, 0]
    last = tf.searchsorted(starts, answer_end[:, None], side="left", out_type=tf.int64)[:, 0] - 1
    has_answer = (answer_start >= 0) & (last >= first)
    row = w["row"]
    s = tf.gather(first, row) - w["window_start"]
    e = tf.gather(last, row) - w["window_start"]
    inside = tf.gather(has_answer, row) & (s >= 0) & (e < w["window_length"])
    offset = w["context_offset"]
    start = tf.where(inside, offset + s, 0)
    end = tf.where(inside, offset + e, 0)
    return {"start_logits": tf.cast(start, tf.int32), "end_logits": tf.cast(end, tf.int32)}


def search_spans(w, start_logits, end_logits, context, max_answer_length, n_best_size,
                 version_2=False, null_score_diff_threshold=0.0):
    """The n-best answer spans of each question over all its windows (graph ops).

    `w`: the windows (`question_windows`); `start_logits` and `end_logits`
    `[windows, length]`; `context` the tf.string contexts `[batch]`. Returns
    the dict of named outputs that `QuestionAnsweringTask.export` documents
    (`answer`, `score`, `start_char`, `end_char`, the `nbest_*` fields,
    `num_windows`; v2.0 also `no_answer_score`, `null_score`).
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


def answer_strings(call, preprocessor, question, context, window_settings, search_settings):
    """The answer function: raw strings `[batch]` -> `search_spans`' dict of
    answers. `call(inputs)` runs the span model (`tfbert.export.compiled_call`
    in exports); `window_settings` and `search_settings` are the keyword
    arguments of `question_windows` and `search_spans`."""
    question = tf.convert_to_tensor(question, tf.string)
    context = tf.convert_to_tensor(context, tf.string)
    w = question_windows(preprocessor, question, context, **window_settings)
    # Pad to the longest window of this call, not to seq_length (the
    # extra positions are padding; their logits are masked anyway).
    inputs = w["inputs"]
    longest = tf.reduce_max(tf.concat([tf.reduce_sum(inputs["input_mask"], 1), [1]], 0))
    out = call({k: v[:, :longest] for k, v in inputs.items()})
    return search_spans(w, out["start_logits"], out["end_logits"], context, **search_settings)
