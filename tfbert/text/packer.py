"""`BertPackInputs`: `[CLS] a [SEP] b [SEP]` packing (or RoBERTa's
`<s> a </s></s> b </s>`) with core TF ops only."""

import keras
import tensorflow as tf

TRUNCATIONS = ("round_robin", "waterfall", "longest_first")
LAYOUTS = ("bert", "roberta")
MAX_SEQ_LENGTH = 512  # BERT's max_position_embeddings


def pack_inputs(
    segments,
    seq_length,
    start_of_sequence_id,
    end_of_segment_id,
    padding_id=0,
    truncation="round_robin",
    max_seq_length=MAX_SEQ_LENGTH,
    layout="bert",
):
    """Packs 1..N token segments into the three BERT input tensors.

    Args:
        segments: list of int RaggedTensors `[batch, (tokens)]` (or
            `[batch, (words), (wordpieces)]`, flattened here).
        seq_length: the output length: a Python int, or an int32 scalar
            tensor (TF Hub's `bert_pack_inputs(..., seq_length=N)` on an
            exported preprocessor; checked in the graph then).
        truncation: "round_robin" (one token from each segment in turn
            until the budget is spent; tf-text's RoundRobinTrimmer) or
            "waterfall" (earlier segments first) or "longest_first"
            (transformers' `truncation=True`: a token at a time off the
            longest segment, of two equally long the later one).
        layout: "bert" (`[CLS] a [SEP] b [SEP]`) or "roberta" (`<s> a </s></s>
            b </s>`: a second separator opens every segment after the first;
            type ids all zero, as RoBERTa has none).

    Returns:
        dict of int32 `[batch, seq_length]` `input_word_ids`, `input_mask`,
        `input_type_ids`. Type id `i` for segment `i` and its `[SEP]`.

    Written with dense core ops (gather/where/minimum, no tf-text trimmer
    op): stock TF Serving lacks `RoundRobinTrim`, and TFLite converts these.
    """
    if isinstance(segments, (tf.Tensor, tf.RaggedTensor)):
        segments = [segments]
    segments = list(segments)
    num_segments = len(segments)
    if num_segments < 1:
        raise ValueError("pack_inputs needs at least one segment.")
    if truncation not in TRUNCATIONS:
        raise ValueError(f"truncation must be one of {TRUNCATIONS}, got {truncation!r}.")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}.")
    # [CLS] and one [SEP] per segment, and with RoBERTa's </s></s> one more per pair.
    num_special = 2 * num_segments if layout == "roberta" else num_segments + 1
    if isinstance(seq_length, tf.Tensor):
        seq_length = tf.cast(seq_length, tf.int32)
        with tf.control_dependencies([
            tf.debugging.assert_greater_equal(
                seq_length, num_special,
                message=f"seq_length is too short for {num_segments} segment(s)"),
            tf.debugging.assert_less_equal(
                seq_length, max_seq_length,
                message=f"seq_length exceeds max_position_embeddings ({max_seq_length})"),
        ]):
            seq_length = tf.identity(seq_length)
    elif int(seq_length) < num_special:
        raise ValueError(
            f"seq_length={seq_length} is too short for {num_segments} segment(s): it must "
            f"be at least {num_special} for the special tokens ({layout} layout)."
        )
    elif int(seq_length) > max_seq_length:
        raise ValueError(
            f"seq_length={seq_length} exceeds the encoder's max_position_embeddings "
            f"({max_seq_length})."
        )
    else:
        seq_length = int(seq_length)

    flat = []
    for i, segment in enumerate(segments):
        if not isinstance(segment, tf.RaggedTensor):
            segment = tf.convert_to_tensor(segment)
            if segment.shape.rank != 2:
                raise ValueError(f"Segment {i} must be [batch, tokens], got shape {segment.shape}.")
            segment = tf.RaggedTensor.from_tensor(segment)
        if not segment.dtype.is_integer:
            raise TypeError(f"Segment {i} must hold integer token ids, got {segment.dtype.name}.")
        if segment.ragged_rank > 1:
            segment = segment.merge_dims(1, -1)
        flat.append(tf.cast(segment, tf.int32))

    # === How many tokens each segment keeps ===
    lengths = tf.stack([tf.cast(s.row_lengths(), tf.int32) for s in flat], axis=1)  # [B, N]
    budget = seq_length - num_special
    if truncation == "waterfall" or num_segments == 1:  # same result for one segment
        before = tf.cumsum(lengths, axis=1, exclusive=True)
        kept = tf.clip_by_value(budget - before, 0, lengths)
    else:
        # Round robin: every segment gets min(len, t) for the largest level t
        # that fits, then the first segments still longer than t get one more.
        levels = tf.range(budget + 1, dtype=tf.int32)  # [T]
        used = tf.reduce_sum(tf.minimum(lengths[:, None, :], levels[None, :, None]), axis=2)  # [B, T]
        level = tf.reduce_sum(tf.cast(used <= budget, tf.int32), axis=1) - 1  # [B]
        base = tf.minimum(lengths, level[:, None])
        spare = budget - tf.reduce_sum(base, axis=1)
        longer = tf.cast(lengths > level[:, None], tf.int32)
        if truncation == "round_robin":  # the spare tokens to the first ones
            order = tf.cumsum(longer, axis=1)
        else:  # longest_first: to the longest ones, of equal ones the later
            ahead = (lengths[:, None, :] > lengths[:, :, None]) | (
                (lengths[:, None, :] == lengths[:, :, None])
                & (tf.range(num_segments)[None, None, :] > tf.range(num_segments)[None, :, None]))
            order = 1 + tf.reduce_sum(tf.cast(ahead, tf.int32) * longer[:, None, :], axis=2)
        extra = tf.cast(order <= spare[:, None], tf.int32) * longer
        kept = base + extra

    # === Dense layout: [CLS] seg0 [SEP] seg1 [SEP] ... padding ===
    positions = tf.range(seq_length, dtype=tf.int32)[None, :]  # [1, L]
    batch = tf.shape(lengths)[0]
    word_ids = tf.fill([batch, seq_length], tf.cast(padding_id, tf.int32))
    type_ids = tf.zeros([batch, seq_length], tf.int32)
    word_ids = tf.where(positions == 0, tf.cast(start_of_sequence_id, tf.int32), word_ids)
    start = tf.ones([batch, 1], tf.int32)
    for i, segment in enumerate(flat):
        if i and layout == "roberta":  # </s></s>: a second separator opens the segment
            word_ids = tf.where(positions == start, tf.cast(end_of_segment_id, tf.int32),
                                word_ids)
            start = start + 1
        count = kept[:, i : i + 1]
        offset = positions - start
        in_segment = (offset >= 0) & (offset < count)
        index = tf.cast(segment.row_starts(), tf.int32)[:, None] + tf.clip_by_value(
            offset, 0, tf.maximum(count - 1, 0)
        )
        num_values = tf.shape(segment.values)[0]
        tokens = tf.gather(
            tf.concat([segment.values, [0]], axis=0), tf.minimum(index, num_values)
        )
        word_ids = tf.where(in_segment, tokens, word_ids)
        is_sep = offset == count
        word_ids = tf.where(is_sep, tf.cast(end_of_segment_id, tf.int32), word_ids)
        if layout == "bert":
            type_ids = tf.where(in_segment | is_sep, i, type_ids)
        start = start + count + 1
    input_mask = tf.where(positions < start, 1, 0)
    return {
        "input_word_ids": word_ids,
        "input_mask": input_mask,
        "input_type_ids": type_ids,
    }


@keras.saving.register_keras_serializable(package="tfbert")
def check_packing(seq_length, truncation, max_seq_length=MAX_SEQ_LENGTH):
    """Validates packer settings with errors that name the setting."""
    if truncation not in TRUNCATIONS:
        raise ValueError(f"truncation must be one of {TRUNCATIONS}, got {truncation!r}.")
    if not 2 <= int(seq_length) <= int(max_seq_length):
        raise ValueError(f"seq_length={seq_length} must be in [2, {max_seq_length}] "
                         f"(the encoder's max_position_embeddings).")


class BertPackInputs(keras.layers.Layer):
    """Keras layer form of `pack_inputs` (the TF Hub `bert_pack_inputs`).

    Example:
    >>> packer = BertPackInputs(seq_length=8, start_of_sequence_id=101,
    ...                         end_of_segment_id=102)
    >>> a = tf.ragged.constant([[7, 8, 9]])
    >>> b = tf.ragged.constant([[4, 5]])
    >>> packer([a, b])["input_word_ids"].numpy().tolist()
    [[101, 7, 8, 9, 102, 4, 5, 102]]
    """

    def __init__(
        self,
        seq_length=128,
        start_of_sequence_id=101,
        end_of_segment_id=102,
        padding_id=0,
        truncation="round_robin",
        max_seq_length=MAX_SEQ_LENGTH,
        **kwargs,
    ):
        kwargs.setdefault("trainable", False)
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        check_packing(seq_length, truncation, max_seq_length)
        self.seq_length = int(seq_length)
        self.start_of_sequence_id = int(start_of_sequence_id)
        self.end_of_segment_id = int(end_of_segment_id)
        self.padding_id = int(padding_id)
        self.truncation = truncation
        self.max_seq_length = int(max_seq_length)

    def call(self, segments, seq_length=None):
        return pack_inputs(
            segments,
            seq_length or self.seq_length,
            self.start_of_sequence_id,
            self.end_of_segment_id,
            self.padding_id,
            self.truncation,
            self.max_seq_length,
        )

    def build(self, input_shape=None):
        self.built = True  # no weights: the tables are constants

    def compute_output_spec(self, segments, seq_length=None):
        first = segments[0] if isinstance(segments, (list, tuple)) else segments
        shape = (first.shape[0], seq_length or self.seq_length)
        return {
            name: keras.KerasTensor(shape, dtype="int32")
            for name in ("input_word_ids", "input_mask", "input_type_ids")
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "seq_length": self.seq_length,
                "start_of_sequence_id": self.start_of_sequence_id,
                "end_of_segment_id": self.end_of_segment_id,
                "padding_id": self.padding_id,
                "truncation": self.truncation,
                "max_seq_length": self.max_seq_length,
            }
        )
        return config


# Bucket widths for length bucketing: a batch is cut to the first one that
# holds its longest sequence, so a model sees at most one shape per bucket up
# to its seq_length (7 for 128; XLA compiles one program per shape). Steps of
# 1.5x waste at most a third of a batch; powers of two wasted 47% of the
# width of length-grouped batches of real sentences (README, Length bucketing).
BUCKETS = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


def trim_to_bucket(inputs, buckets=BUCKETS):
    """Cuts the padding columns of packed inputs (dict of `[batch, width]`
    with a left-aligned `input_mask`) to the batch's longest sequence rounded
    up to a bucket width, or `width` when no bucket is smaller. Padding
    positions change nothing in BERT's outputs (masked attention), so the
    results equal the fully padded batch's; short batches cost far less.

    Core ops only: it runs inside exported graphs (the op rule).

    Example:
    >>> mask = tf.constant([[1, 1, 1] + [0] * 37, [1] * 20 + [0] * 20])
    >>> x = {"input_word_ids": mask, "input_mask": mask, "input_type_ids": 0 * mask}
    >>> trim_to_bucket(x)["input_mask"].shape
    TensorShape([2, 24])
    """
    mask = inputs["input_mask"]
    width = tf.shape(mask)[1]
    longest = tf.reduce_max(tf.reduce_sum(tf.cast(mask, tf.int32), axis=1))
    widths = tf.concat([tf.constant(buckets, tf.int32), [width]], axis=0)
    fits = tf.logical_and(widths >= longest, widths <= width)
    target = tf.reduce_min(tf.where(fits, widths, width))
    return {name: value[:, :target] for name, value in inputs.items()}


def trim_to_longest(inputs):
    """Cuts packed inputs (dict of `[batch, width]` with a left-aligned
    `input_mask`) to the batch's longest sequence (at least the 2 columns of
    `[CLS] [SEP]`): exact lengths, for paths without XLA. Core ops only.

    Example:
    >>> mask = tf.constant([[1, 1, 1] + [0] * 37, [1] * 20 + [0] * 20])
    >>> x = {"input_word_ids": mask, "input_mask": mask, "input_type_ids": 0 * mask}
    >>> trim_to_longest(x)["input_mask"].shape
    TensorShape([2, 20])
    """
    longest = tf.maximum(tf.reduce_max(tf.reduce_sum(inputs["input_mask"], axis=1)), 2)
    return {name: value[:, :longest] for name, value in inputs.items()}

