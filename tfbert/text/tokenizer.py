"""`BertTokenizer`: reference-exact BERT WordPiece tokenization as graph ops."""

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from tfbert.text.char_table import (
    CASE_IGNORABLE,
    CASED,
    IDENTITY,
    PADDED,
    SPACE,
    build_casing_table,
    build_char_table,
)
from tfbert.text.vocab import Vocab, load_vocab

MAX_CHARS_PER_WORD = 100  # the reference `max_input_chars_per_word`
CAPITAL_SIGMA = 0x3A3
FINAL_SIGMA = 0x3C2


@keras.saving.register_keras_serializable(package="tfbert")
class BertTokenizer(keras.layers.Layer):
    """Splits strings into WordPiece ids exactly like the reference BERT tokenizer.

    Normalization (cleaning, lower-casing and accent stripping for uncased
    vocabs, CJK and punctuation splitting) is a per-codepoint table applied
    with core TF ops (see `char_table.py`); the WordPiece step is tf-text's
    `FastWordpieceTokenizer` (op `FastWordpieceTokenizeWithOffsets`). Words
    longer than 100 characters become `[UNK]`, as in the reference.

    Input bytes that are not valid UTF-8 are dropped, as the reference does
    (`bytes.decode("utf-8", "ignore")`); U+FFFD and control characters are
    dropped too. Empty and whitespace-only strings give no tokens.

    Args:
        vocab_file: path of a `vocab.txt`; or
        vocabulary: the list of tokens (used by `get_config`).
        lower_case: True for uncased vocabularies (lower-case + strip accents).

    Example:
    >>> tokenizer = BertTokenizer(vocabulary=["[PAD]", "[UNK]", "[CLS]",
    ...     "[SEP]", "[MASK]", "hello", "world", "##s", "!"])
    >>> tokenizer(tf.constant(["Hello worlds!"])).to_list()
    [[[5], [6, 7], [8]]]
    """

    def __init__(self, vocab_file=None, vocabulary=None, lower_case=True, **kwargs):
        kwargs.setdefault("trainable", False)
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        if (vocab_file is None) == (vocabulary is None):
            raise ValueError("BertTokenizer needs exactly one of `vocab_file` or `vocabulary`.")
        self.vocab = load_vocab(vocab_file) if vocab_file is not None else Vocab(vocabulary)
        self.lower_case = bool(lower_case)

        # === Normalization table (constants in the graph) ===
        starts, rows = build_char_table(self.lower_case)
        self._range_starts = tf.constant(starts)
        self._range_rows = tf.constant(rows)
        self._width = rows.shape[1]
        if self.lower_case:
            casing_starts, casing_classes = build_casing_table()
            self._casing_starts = tf.constant(casing_starts)
            self._casing_classes = tf.constant(casing_classes)

        # === WordPiece ===
        # Words are split by our table, so the tokenizer only does WordPiece.
        # 4 bytes per character: the 100-character limit is applied by us.
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=self.vocab.tokens,
            suffix_indicator="##",
            max_bytes_per_word=4 * MAX_CHARS_PER_WORD,
            token_out_type=tf.int32,
            unknown_token="[UNK]",
            no_pretokenization=True,
            support_detokenization=True,
        )
        self._id_to_token = tf.constant(self.vocab.tokens)

    # --- graph pieces ---

    def _check_strings(self, strings):
        strings = tf.convert_to_tensor(strings)
        if strings.dtype != tf.string:
            raise TypeError(
                f"{self.__class__.__name__} takes a tf.string tensor of texts, got dtype "
                f"{strings.dtype.name}."
            )
        if strings.shape.rank == 2 and strings.shape[1] == 1:
            strings = tf.squeeze(strings, axis=1)  # keras.Input(shape=(1,))
        if strings.shape.rank != 1:
            raise ValueError(
                f"{self.__class__.__name__} takes a 1-D batch of strings [batch], got shape "
                f"{strings.shape}."
            )
        return strings

    def tokenize_with_offsets(self, strings):
        """`(ids, starts, limits)`: int32 RaggedTensors `[batch, (words), (wordpieces)]`.

        `starts`/`limits` are byte offsets of each wordpiece in the original
        string (through lower-casing, accent stripping and cleaning).
        """
        strings = self._check_strings(strings)
        num_strings = tf.shape(strings, out_type=tf.int64)[0]

        # 1. Codepoints with their byte offsets; invalid UTF-8 is skipped.
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

        # 2. Normalize: every codepoint -> 0..width output codepoints.
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

        # 3. Words: maximal runs of non-space codepoints within a string.
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

        # 4. WordPiece on the flat words; too long words become [UNK].
        word_strings = tf.strings.unicode_encode(words, "UTF-8")
        ids, piece_start, piece_limit = self._wordpiece.tokenize_with_offsets(word_strings)
        word_chars = words.row_lengths()
        word_bytes = tf.strings.length(word_strings, unit="BYTE")
        too_long = word_chars > MAX_CHARS_PER_WORD
        ids = tf.where(too_long[:, None], tf.fill([num_words, 1], self.vocab.unk_id), ids)
        piece_start = tf.where(too_long[:, None], tf.zeros([num_words, 1], tf.int64), tf.cast(piece_start, tf.int64))
        piece_limit = tf.where(
            too_long[:, None], tf.cast(word_bytes, tf.int64)[:, None], tf.cast(piece_limit, tf.int64)
        )

        # 5. Offsets back to the original bytes: normalized byte -> output
        # codepoint -> original character.
        cp_bytes = utf8_length(word_cps)
        cp_global_start = tf.cumsum(cp_bytes, exclusive=True)
        word_global_start = tf.gather(cp_global_start, words.row_starts())
        piece_word = piece_start.value_rowids()
        g_start = tf.gather(word_global_start, piece_word) + piece_start.values
        g_last = tf.gather(word_global_start, piece_word) + piece_limit.values - 1
        first_cp = tf.searchsorted(cp_global_start, g_start, side="right") - 1
        last_cp = tf.searchsorted(cp_global_start, g_last, side="right") - 1
        orig_start = tf.gather(char_start, tf.gather(word_origin, first_cp))
        orig_limit = tf.gather(char_limit, tf.gather(word_origin, last_cp))

        def nest(flat_pieces):
            pieces = ids.with_flat_values(tf.cast(flat_pieces, tf.int32))
            return tf.RaggedTensor.from_row_lengths(pieces, words_per_string)

        return nest(ids.flat_values), nest(orig_start), nest(orig_limit)

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

    def call(self, strings):
        return self.tokenize(strings)

    def tokenize(self, strings):
        """int32 RaggedTensor `[batch, (words), (wordpieces)]` of token ids."""
        return self.tokenize_with_offsets(strings)[0]

    # --- tokens as strings ---

    def id_to_token(self, ids):
        """Token strings of int ids (any shape, dense or ragged)."""
        if isinstance(ids, tf.RaggedTensor):
            return ids.with_flat_values(self.id_to_token(ids.flat_values))
        return tf.gather(self._id_to_token, tf.convert_to_tensor(ids))

    def token_to_id(self, tokens):
        """int32 ids of token strings; unknown tokens give the `[UNK]` id."""
        return tf.cast(
            self._token_lookup().lookup(tf.convert_to_tensor(tokens)), tf.int32
        )

    def _token_lookup(self):
        if not hasattr(self, "_lookup_table"):
            self._lookup_table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    self._id_to_token, tf.range(self.vocab.vocab_size, dtype=tf.int64)
                ),
                default_value=self.vocab.unk_id,
            )
        return self._lookup_table

    def wordpieces(self, strings):
        """The wordpiece strings of texts: tf.string `[batch, (words), (wordpieces)]`."""
        return self.id_to_token(self.tokenize(strings))

    def detokenize(self, ids):
        """Text from ids `[batch, (tokens)]` (or `[batch, (words), (pieces)]`):
        wordpieces joined, `##` continuations glued, special tokens and
        padding dropped. Lower-casing and accent stripping are not undone."""
        if isinstance(ids, tf.RaggedTensor) and ids.ragged_rank == 2:
            ids = ids.merge_dims(1, 2)
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(tf.convert_to_tensor(ids))
        ids = tf.cast(ids, tf.int32)
        special = tf.constant(
            [self.vocab.pad_id, self.vocab.cls_id, self.vocab.sep_id, self.vocab.mask_id], tf.int32
        )
        keep = tf.reduce_all(tf.not_equal(ids.flat_values[:, None], special[None, :]), axis=1)
        ids = tf.ragged.boolean_mask(ids, ids.with_flat_values(keep))
        tokens = self.id_to_token(ids)
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(text, " ##", "")

    def build(self, input_shape=None):
        self.built = True  # no weights: the tables are constants

    def get_config(self):
        config = super().get_config()
        config.update({"vocabulary": list(self.vocab.tokens), "lower_case": self.lower_case})
        return config

    def compute_output_spec(self, strings):
        return keras.KerasTensor(shape=(strings.shape[0], None, None), dtype="int32", ragged=True)


def utf8_length(codepoints):
    """Bytes of each codepoint in UTF-8 (int64)."""
    cps = tf.cast(codepoints, tf.int64)
    return (
        1
        + tf.cast(cps >= 0x80, tf.int64)
        + tf.cast(cps >= 0x800, tf.int64)
        + tf.cast(cps >= 0x10000, tf.int64)
    )
