"""`BertNormalizer`: the reference BERT normalization and word split as core TF ops."""

import collections

import tensorflow as tf

from tfbert.text.char_table import (
    BMP_SIZE,
    CASE_IGNORABLE,
    CASED,
    IDENTITY,
    PADDED,
    SPACE,
    build_casing_table,
    build_char_table,
    build_nfc_tables,
    resolve_bmp,
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
    table from `char_table.py` (a dense `gather` for the BMP, `searchsorted`
    over ranges beyond), plus the context rules no table can hold: final
    sigma of `str.lower` (uncased) and NFC composition (cased). `split_words`
    keeps, for every output character, the input bytes it came from.

    Example:
    >>> words = BertNormalizer(lower_case=True).split_words(tf.constant(["Héllo, WORLD"]))
    >>> words.word_strings.numpy().tolist()
    [b'hello', b',', b'world']
    """

    def __init__(self, lower_case=True):
        self.lower_case = bool(lower_case)
        starts, rows = build_char_table(self.lower_case)
        self._table = CharTable(starts, rows)
        if not self.lower_case:
            nfc_starts, nfc_rows, pair_keys, pair_values, seconds = build_nfc_tables()
            self._nfc_table = CharTable(nfc_starts, nfc_rows)
            self._pair_keys = tf.constant(pair_keys)
            self._pair_values = tf.constant(pair_values)
            self._pair_seconds = tf.constant(seconds)
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
        cps, char_row, char_start, char_limit = self._context_rules(
            cps, char_row, char_start, char_limit
        )

        # Normalize: every codepoint -> 0..width output codepoints.
        out_cps, origin = self._table.expand(cps)
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

    def clean_ascii(self, strings):
        """The reference's cleaning of ASCII text: control characters dropped,
        (lower-cased). \t \n \r stay: they split words, as in the reference."""
        text = tf.strings.regex_replace(strings, r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", "")
        return tf.strings.lower(text) if self.lower_case else text

    def normalize(self, strings):
        """tf.string `[batch]`: the reference-normalized texts, words
        separated by whitespace, through the codepoint table (faster than
        `split_words`; no offsets). The tokenizer sends pure-ASCII texts
        elsewhere: `clean_ascii` and tf-text's own word split."""
        strings = self.check_strings(strings)
        codepoints = tf.strings.unicode_decode(strings, "UTF-8", errors="ignore")
        cps = codepoints.values
        char_row = codepoints.value_rowids()
        zeros = tf.zeros_like(char_row)
        cps, char_row, _, _ = self._context_rules(cps, char_row, zeros, zeros)
        out_cps, origin = self._table.expand(cps)
        out = tf.RaggedTensor.from_value_rowids(
            out_cps, tf.gather(char_row, origin), nrows=tf.shape(strings, out_type=tf.int64)[0]
        )
        return tf.strings.unicode_encode(out, "UTF-8")

    def split_words_ragged(self, strings):
        """tf.string RaggedTensor `[batch, (words)]` of normalized words."""
        words = self.split_words(strings)
        return tf.RaggedTensor.from_row_lengths(words.word_strings, words.words_per_string)

    def _context_rules(self, cps, char_row, char_start, char_limit):
        """The steps that look beyond one character: final sigma (uncased)
        or NFC composition (cased). Returns the four arrays updated."""
        if self.lower_case:
            cps = tf.cond(
                tf.reduce_any(tf.equal(cps, CAPITAL_SIGMA)),
                lambda: self._final_sigma(cps, char_row),
                lambda: cps,
            )
            return cps, char_row, char_start, char_limit
        return self._nfc(cps, char_row, char_start, char_limit)

    def _nfc(self, cps, char_row, char_start, char_limit):
        """Unicode NFC, as the cased reference applies it after cleaning:
        per-character NFC (and the cleaning's deletions) from a table, then
        canonical composition of adjacent pairs, three times (base + 3 marks,
        Hangul L+V+T). Merged characters span the bytes of both sources."""
        out, source = self._nfc_table.expand(cps)
        row = tf.gather(char_row, source)
        start = tf.gather(char_start, source)
        limit = tf.gather(char_limit, source)

        def compose(out, row, start, limit):
            for _ in range(3):
                key = tf.cast(out[:-1], tf.int64) * 0x110000 + tf.cast(out[1:], tf.int64)
                index = tf.minimum(
                    tf.searchsorted(self._pair_keys, key), tf.size(self._pair_keys) - 1
                )
                hit = tf.equal(tf.gather(self._pair_keys, index), key) & tf.equal(row[:-1], row[1:])
                # A character composes with its left neighbour only if that
                # neighbour did not just compose with its own left neighbour.
                hit &= ~tf.concat([[False], hit[:-1]], axis=0)
                first = tf.concat([hit, [False]], axis=0)
                second = tf.concat([[False], hit], axis=0)
                composite = tf.concat([tf.gather(self._pair_values, index), [0]], axis=0)
                out = tf.where(first, composite, out)
                limit = tf.where(first, tf.concat([limit[1:], [0]], axis=0), limit)
                keep = ~second
                out, row = tf.boolean_mask(out, keep), tf.boolean_mask(row, keep)
                start, limit = tf.boolean_mask(start, keep), tf.boolean_mask(limit, keep)
            return out, row, start, limit

        # Skip the composition unless some character can be a second.
        is_second = tf.equal(
            tf.gather(
                self._pair_seconds,
                tf.minimum(tf.searchsorted(self._pair_seconds, out), tf.size(self._pair_seconds) - 1),
            ),
            out,
        )
        return tf.cond(
            tf.reduce_any(is_second),
            lambda: compose(out, row, start, limit),
            lambda: (out, row, start, limit),
        )

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


class CharTable:
    """A `char_table.py` range table as graph constants, applied by `expand`."""

    def __init__(self, starts, rows):
        self.dense = tf.constant(resolve_bmp(starts, rows))
        self.starts = tf.constant(starts)
        self.rows = tf.constant(rows)

    def expand(self, cps):
        """`(out_cps, source)`: the output codepoints (int32) and, for each,
        the index of the input codepoint it came from (int64)."""
        rows = tf.gather(self.dense, tf.minimum(cps, BMP_SIZE - 1))
        rows = tf.cond(
            tf.reduce_all(cps < BMP_SIZE),
            lambda: rows,
            lambda: tf.where((cps < BMP_SIZE)[:, None], rows, self._from_ranges(cps)),
        )
        keep = rows >= 0
        source = tf.broadcast_to(
            tf.range(tf.shape(cps, out_type=tf.int64)[0])[:, None], tf.shape(rows, out_type=tf.int64)
        )
        return tf.boolean_mask(rows, keep), tf.boolean_mask(source, keep)

    def _from_ranges(self, cps):
        rows = tf.gather(self.rows, tf.searchsorted(self.starts, cps, side="right") - 1)
        width = rows.shape[1]
        first = rows[:, :1]
        cp_col = cps[:, None]
        space = tf.fill(tf.shape(cp_col), SPACE)
        none = tf.fill([tf.shape(cps)[0], width], -1)
        identity = tf.concat([cp_col, none[:, 1:]], axis=1)
        padded = tf.concat([space, cp_col, space, none[:, 3:]], axis=1)
        return tf.where(first == IDENTITY, identity, tf.where(first == PADDED, padded, rows))


def utf8_length(codepoints):
    """Bytes of each codepoint in UTF-8 (int64)."""
    cps = tf.cast(codepoints, tf.int64)
    return (
        1
        + tf.cast(cps >= 0x80, tf.int64)
        + tf.cast(cps >= 0x800, tf.int64)
        + tf.cast(cps >= 0x10000, tf.int64)
    )
