"""`BertNormalizer`: the reference BERT normalization and word split as core TF ops."""

import collections

import tensorflow as tf

from tfbert.text.char_table import (
    CASE_IGNORABLE,
    CASED,
    IDENTITY,
    PADDED,
    SPACE,
    build_casing_table,
    build_char_table,
)

CAPITAL_SIGMA = 0x3A3
FINAL_SIGMA = 0x3C2

Words = collections.namedtuple(
    "Words",
    [
        "word_strings",  # tf.string [num_words]: normalized words of the batch
        "word_codepoints",  # int32 RaggedTensor [num_words, (chars)]
        "words_per_string",  # int64 [batch]
        "num_words",  # int64 scalar
        "origin",  # int64 [num word chars]: index of the source char in char_start
        "char_start",  # int64 [num input chars]: byte offset of every input char
        "char_limit",  # int64 [num input chars]: byte limit of every input char
    ],
)


class BertNormalizer:
    """Cleans, (lower-cases and strips accents), splits text into words.

    Exactly the reference BasicTokenizer, as core TF ops: a per-codepoint
    table from `char_table.py` applied with `searchsorted` + `gather`, plus
    the one context rule of `str.lower` (final sigma). Keeps, for every
    output character, the input character it came from, for offsets.

    Example:
    >>> words = BertNormalizer(lower_case=True).split_words(tf.constant(["Héllo, WORLD"]))
    >>> words.word_strings.numpy().tolist()
    [b'hello', b',', b'world']
    """

    def __init__(self, lower_case=True):
        self.lower_case = bool(lower_case)
        starts, rows = build_char_table(self.lower_case)
        self._range_starts = tf.constant(starts)
        self._range_rows = tf.constant(rows)
        self._width = rows.shape[1]
        if self.lower_case:
            casing_starts, casing_classes = build_casing_table()
            self._casing_starts = tf.constant(casing_starts)
            self._casing_classes = tf.constant(casing_classes)

    def check_strings(self, strings):
        strings = tf.convert_to_tensor(strings)
        if strings.dtype != tf.string:
            raise TypeError(
                f"BertTokenizer takes a tf.string tensor of texts, got dtype "
                f"{strings.dtype.name}."
            )
        if strings.shape.rank == 2 and strings.shape[1] == 1:
            strings = tf.squeeze(strings, axis=1)  # keras.Input(shape=(1,))
        if strings.shape.rank != 1:
            raise ValueError(
                f"BertTokenizer takes a 1-D batch of strings [batch], got shape "
                f"{strings.shape}."
            )
        return strings

    def split_words(self, strings):
        """`Words` of a 1-D tf.string batch (see the `Words` fields)."""
        strings = self.check_strings(strings)
        num_strings = tf.shape(strings, out_type=tf.int64)[0]

        # Codepoints with their byte offsets; invalid UTF-8 is skipped.
        codepoints, char_starts = tf.strings.unicode_decode_with_offsets(
            strings, "UTF-8", errors="ignore"
        )
        cps = codepoints.values
        char_row = codepoints.value_rowids()
        char_start = char_starts.values
        char_limit = char_start + utf8_length(cps)
        if self.lower_case:
            cps = tf.cond(
                tf.reduce_any(tf.equal(cps, CAPITAL_SIGMA)),
                lambda: self._final_sigma(cps, char_row),
                lambda: cps,
            )

        # Normalize: every codepoint -> 0..width output codepoints.
        rng = tf.searchsorted(self._range_starts, cps, side="right") - 1
        rows = tf.gather(self._range_rows, rng)
        first = rows[:, :1]
        cp_col = cps[:, None]
        space = tf.fill(tf.shape(cp_col), SPACE)
        none = tf.fill([tf.shape(cps)[0], self._width], -1)
        identity = tf.concat([cp_col, none[:, 1:]], axis=1)
        padded = tf.concat([space, cp_col, space, none[:, 3:]], axis=1)
        rows = tf.where(first == IDENTITY, identity, tf.where(first == PADDED, padded, rows))
        keep = rows >= 0
        out_cps = tf.boolean_mask(rows, keep)
        origin = tf.boolean_mask(
            tf.broadcast_to(tf.range(tf.shape(cps, out_type=tf.int64)[0])[:, None], tf.shape(rows, out_type=tf.int64)),
            keep,
        )
        out_row = tf.gather(char_row, origin)

        # Words: maximal runs of non-space codepoints within a string.
        is_space = tf.equal(out_cps, SPACE)
        prev_space = tf.concat([[True], is_space[:-1]], axis=0)
        row_start = tf.concat([[True], out_row[1:] != out_row[:-1]], axis=0)
        word_start = ~is_space & (prev_space | row_start)
        word_id = tf.cumsum(tf.cast(word_start, tf.int64)) - 1
        in_word = ~is_space
        word_cps = tf.boolean_mask(out_cps, in_word)
        word_origin = tf.boolean_mask(origin, in_word)
        word_of_cp = tf.boolean_mask(word_id, in_word)
        num_words = tf.reduce_sum(tf.cast(word_start, tf.int64))
        words = tf.RaggedTensor.from_value_rowids(word_cps, word_of_cp, nrows=num_words)
        words_per_string = tf.math.unsorted_segment_sum(
            tf.cast(word_start, tf.int64), out_row, num_strings
        )

        return Words(
            word_strings=tf.strings.unicode_encode(words, "UTF-8"),
            word_codepoints=words,
            words_per_string=words_per_string,
            num_words=num_words,
            origin=word_origin,
            char_start=char_start,
            char_limit=char_limit,
        )

    def split_words_ragged(self, strings):
        """tf.string RaggedTensor `[batch, (words)]` of normalized words."""
        words = self.split_words(strings)
        return tf.RaggedTensor.from_row_lengths(words.word_strings, words.words_per_string)

    def _final_sigma(self, cps, char_row):
        """Capital sigma -> final ς where Python's `str.lower` does so: a
        cased letter before it and none after it in the same word, skipping
        case-ignorable characters (a context rule no per-character table has)."""
        classes = tf.gather(
            self._casing_classes, tf.searchsorted(self._casing_starts, cps, side="right") - 1
        )
        significant = tf.not_equal(classes, CASE_IGNORABLE)
        positions = tf.boolean_mask(tf.range(tf.size(cps, out_type=tf.int64)), significant)
        num_significant = tf.size(positions, out_type=tf.int64)
        count_incl = tf.cumsum(tf.cast(significant, tf.int64))
        count_excl = count_incl - tf.cast(significant, tf.int64)
        prev = tf.gather(positions, tf.maximum(count_excl - 1, 0))
        prev_cased = (
            (count_excl > 0)
            & tf.equal(tf.gather(char_row, prev), char_row)
            & tf.equal(tf.gather(classes, prev), CASED)
        )
        nxt = tf.gather(positions, tf.minimum(count_incl, num_significant - 1))
        next_cased = (
            (count_incl < num_significant)
            & tf.equal(tf.gather(char_row, nxt), char_row)
            & tf.equal(tf.gather(classes, nxt), CASED)
        )
        final = tf.equal(cps, CAPITAL_SIGMA) & prev_cased & ~next_cased
        return tf.where(final, FINAL_SIGMA, cps)


def utf8_length(codepoints):
    """Bytes of each codepoint in UTF-8 (int64)."""
    cps = tf.cast(codepoints, tf.int64)
    return (
        1
        + tf.cast(cps >= 0x80, tf.int64)
        + tf.cast(cps >= 0x800, tf.int64)
        + tf.cast(cps >= 0x10000, tf.int64)
    )
