"""`BertTokenizer`: reference-exact BERT WordPiece tokenization as graph ops."""

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from tfbert.text.normalizer import BertNormalizer, utf8_length
from tfbert.text.vocab import Vocab, load_vocab

MAX_CHARS_PER_WORD = 100  # the reference `max_input_chars_per_word`


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

        # === Normalization (reference-exact, core TF ops) ===
        self.normalizer = BertNormalizer(self.lower_case)

        # === WordPiece ===
        # Words are split by our table, so the tokenizer only does WordPiece.
        # Over 4 bytes per character: the 100-character limit is applied by us.
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=self.vocab.tokens,
            suffix_indicator="##",
            max_bytes_per_word=4 * MAX_CHARS_PER_WORD + 4,
            token_out_type=tf.int32,
            unknown_token="[UNK]",
            no_pretokenization=True,
            support_detokenization=False,
        )
        # Pure-ASCII texts (most text) skip the table: one tf-text op splits
        # them on whitespace and punctuation and WordPieces the words. On
        # ASCII its split is the reference's and 100 bytes are 100 characters
        # (tested on every ASCII byte against the reference).
        self._ascii_wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=self.vocab.tokens,
            suffix_indicator="##",
            max_bytes_per_word=MAX_CHARS_PER_WORD,
            token_out_type=tf.int32,
            unknown_token="[UNK]",
            no_pretokenization=False,
            support_detokenization=False,
        )
        # A word's first piece never starts with "##" (the reference splits
        # "#" off as punctuation), so pieces that do continue a word.
        self._is_continuation = tf.constant([t.startswith("##") for t in self.vocab.tokens])
        self._id_to_token = tf.constant(self.vocab.tokens)

    # === Tokenization ===

    def tokenize_with_offsets(self, strings):
        """`(ids, starts, limits)`: int32 RaggedTensors `[batch, (words), (wordpieces)]`.

        `starts`/`limits` are byte offsets of each wordpiece in the original
        string (through lower-casing, accent stripping and cleaning).
        """
        words = self.normalizer.split_words(strings)
        word_strings = words.word_strings
        word_cps = words.word_codepoints.values
        num_words = words.num_words
        word_chars = words.word_codepoints.row_lengths()

        # WordPiece on the flat words; too long words become [UNK].
        ids, piece_start, piece_limit = self._wordpiece.tokenize_with_offsets(word_strings)
        word_bytes = tf.strings.length(word_strings, unit="BYTE")
        too_long = word_chars > MAX_CHARS_PER_WORD
        # Too long words: drop their pieces, append one [UNK] over the word.
        keep_piece = tf.gather(~too_long, ids.value_rowids())
        unk_count = tf.cast(too_long, tf.int64)

        def replace_too_long(pieces, unk_value):
            pieces = tf.ragged.boolean_mask(pieces, pieces.with_flat_values(keep_piece))
            unk = tf.RaggedTensor.from_row_lengths(
                tf.boolean_mask(unk_value, too_long), unk_count
            )
            return tf.concat([pieces, unk], axis=1)

        ids = replace_too_long(ids, tf.fill([num_words], self.vocab.unk_id))
        piece_start = replace_too_long(tf.cast(piece_start, tf.int64), tf.zeros([num_words], tf.int64))
        piece_limit = replace_too_long(tf.cast(piece_limit, tf.int64), tf.cast(word_bytes, tf.int64))

        # Offsets back to the original bytes: normalized byte -> output
        # codepoint -> original character.
        cp_bytes = utf8_length(word_cps)
        cp_global_start = tf.cumsum(cp_bytes, exclusive=True)
        word_global_start = tf.gather(cp_global_start, words.word_codepoints.row_starts())
        piece_word = piece_start.value_rowids()
        g_start = tf.gather(word_global_start, piece_word) + piece_start.values
        g_last = tf.gather(word_global_start, piece_word) + piece_limit.values - 1
        first_cp = tf.searchsorted(cp_global_start, g_start, side="right") - 1
        last_cp = tf.searchsorted(cp_global_start, g_last, side="right") - 1
        orig_start = tf.gather(words.char_start, tf.gather(words.origin, first_cp))
        orig_limit = tf.gather(words.char_limit, tf.gather(words.origin, last_cp))

        def nest(flat_pieces):
            pieces = ids.with_flat_values(tf.cast(flat_pieces, tf.int32))
            return tf.RaggedTensor.from_row_lengths(pieces, words.words_per_string)

        return nest(ids.flat_values), nest(orig_start), nest(orig_limit)

    def call(self, strings):
        return self.tokenize(strings)

    def tokenize(self, strings):
        """int32 RaggedTensor `[batch, (words), (wordpieces)]` of token ids.

        Same ids as `tokenize_with_offsets`, by a faster route: the ids of
        `tokenize_flat`, grouped into words at every piece that does not
        continue a word.
        """
        ids = self.tokenize_flat(strings)
        starts = tf.cast(~tf.gather(self._is_continuation, ids.values), tf.int64)
        words = tf.RaggedTensor.from_value_rowids(
            ids.values, tf.cumsum(starts) - 1, nrows=tf.reduce_sum(starts))
        return tf.RaggedTensor.from_row_lengths(
            words, tf.math.unsorted_segment_sum(starts, ids.value_rowids(), ids.nrows()))

    def tokenize_flat(self, strings):
        """int32 RaggedTensor `[batch, (wordpieces)]`: the ids of `tokenize`
        without the word dimension, which is what packing needs.

        Pure-ASCII texts go through one tf-text op; the others through the
        normalizer's codepoint table, a split on spaces and WordPiece.
        """
        strings = self.normalizer.check_strings(strings)
        is_ascii = tf.strings.regex_full_match(strings, r"[\x00-\x7f]*")
        ascii_rows = tf.where(is_ascii)[:, 0]
        other_rows = tf.where(~is_ascii)[:, 0]
        ascii_ids = self._ascii_wordpiece.tokenize(
            self.normalizer.clean_ascii(tf.gather(strings, ascii_rows)))
        other_ids = self._tokenize_by_table(tf.gather(strings, other_rows))
        # Gathered rows back to input order: no tf.cond, whose untaken branch
        # still costs milliseconds per batch inside tf.data.
        order = tf.math.invert_permutation(tf.concat([ascii_rows, other_rows], axis=0))
        return tf.gather(tf.concat([ascii_ids, other_ids], axis=0), order)

    def _tokenize_by_table(self, strings):
        """`[batch, (wordpieces)]` of any texts by the codepoint table."""
        words = tf.strings.split(self.normalizer.normalize(strings))
        # A word over 100 characters becomes one [UNK], as in the reference:
        # a stand-in longer than `max_bytes_per_word` is WordPiece's [UNK].
        too_long = tf.strings.length(words.values, unit="UTF8_CHAR") > MAX_CHARS_PER_WORD
        flat = tf.where(too_long, "#" * (4 * MAX_CHARS_PER_WORD + 5), words.values)
        return words.with_values(self._wordpiece.tokenize(flat)).merge_dims(1, 2)

    # === Tokens as strings ===

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
