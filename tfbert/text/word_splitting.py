"""Words of raw strings as CoNLL tokenizes them, with wordpieces and offsets (graph ops).

A word is a whitespace-separated token with its leading and trailing
punctuation split off: `(Reuters),` -> `(`, `Reuters`, `)`, `,`; `U.S.` ->
`U.S`, `.`; inner punctuation stays (`didn't`). Tagging serves raw strings
with these words, so the words a served model tags are those it trained on.

WordPiece takes the words from its tokenizer's words (which split every
punctuation character) and keeps their pieces. Byte-level BPE (RoBERTa) marks
a word's first piece by its leading space ('Ġ'), not by '##', and its
pre-tokenizer keeps runs of punctuation together (` (`, `),`), so there the
words are found from the characters, and each word is tokenized as if after
a space: the pieces of transformers' `is_split_into_words=True` with
`add_prefix_space=True` (how RoBERTa is fine-tuned on CoNLL words), whether
the words come as a list or are split from a raw string.

Example:
>>> pre = BertPreprocessor(vocab_file="tests/data/pretraining/vocab.txt")
>>> pieces, starts, ends = WordSplitter(pre)(tf.constant(["Open (the) file."]))
>>> starts.to_list(), ends.to_list()
([[0, 5, 6, 9, 11, 15]], [[4, 6, 9, 10, 15, 16]])
"""

import functools

import numpy as np
import tensorflow as tf

from tfbert.text.char_table import is_punctuation

# Unicode White_Space (byte_level_bpe.WHITE_SPACE as code points): where raw strings split.
WHITE_SPACE = np.array([9, 10, 11, 12, 13, 32, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
                        0x2028, 0x2029, 0x202F, 0x205F, 0x3000], np.int32)


@functools.lru_cache(maxsize=1)
def punctuation_ranges():
    """`(first, last)` int32 arrays of the runs of code points BERT's rule calls
    punctuation (`char_table.is_punctuation`; no code point past plane 1 is)."""
    flags = np.array([is_punctuation(chr(cp)) for cp in range(0x20000)] + [False])
    change = np.flatnonzero(np.diff(np.concatenate([[False], flags]).astype(np.int8)))
    return change[0::2].astype(np.int32), (change[1::2] - 1).astype(np.int32)


def word_pieces(preprocessor, words):
    """Ids `[n, (pieces)]` of flat words `[n]` (tf.string), each word whole:
    WordPiece's pieces of the word; byte-level BPE's of the word after a space
    (transformers' `add_prefix_space`, so every word starts with a 'Ġ' piece)."""
    if preprocessor.tokenizer_kind == "byte_level_bpe":
        words = tf.strings.join([" ", words])
    return preprocessor.tokenize(words).merge_dims(1, 2)


class WordSplitter:
    """`splitter(text)` -> `(word_pieces [batch, (words), (pieces)], starts, ends)`,
    the last two int64 byte offsets `[batch, (words)]` into the original strings."""

    def __init__(self, preprocessor):
        self.preprocessor = preprocessor
        # bool [vocab_size]: the token is a single punctuation character. Kept
        # as NumPy: a tensor made inside one traced function is not usable
        # from another.
        self._punctuation_table = np.array(
            [len(t) == 1 and is_punctuation(t) for t in preprocessor.vocab.tokens])

    @property
    def _punctuation_ids(self):
        return tf.constant(self._punctuation_table)

    def __call__(self, text):
        """Words of raw strings with their wordpieces and byte offsets.

        Returns `(word_pieces [batch, (words), (pieces)], starts, ends)`, the
        last two `[batch, (words)]` int64. A word is a whitespace-separated
        token with leading and trailing punctuation split off, as in CoNLL
        files: `(Reuters),` -> `(`, `Reuters`, `)`, `,`; `U.S.` -> `U.S`, `.`;
        inner punctuation stays (`didn't`). Found from the tokenizer's words
        (which split every punctuation character) and their offsets; for
        byte-level BPE from the characters (module doc).
        """
        if self.preprocessor.tokenizer_kind == "byte_level_bpe":
            return self.split_characters(text)
        ids, starts, limits = self.preprocessor.tokenize_with_offsets(text)
        batch = tf.shape(text, out_type=tf.int64)[0]
        tw_row = ids.value_rowids()  # string of each tokenizer word
        tw_start = tf.cast(tf.gather(starts.values.flat_values, starts.values.row_starts()), tf.int64)
        tw_end = tf.cast(tf.gather(limits.values.flat_values, limits.values.row_limits() - 1),
                         tf.int64)
        num_tw = tf.shape(tw_row, out_type=tf.int64)[0]
        # Whitespace tokens: a new one where the string changes or a gap opens.
        prev_row = tf.concat([[-1], tw_row[:-1]], axis=0)
        prev_end = tf.concat([[-1], tw_end[:-1]], axis=0)
        new_token = (tw_row != prev_row) | (tw_start > prev_end)
        token = tf.cumsum(tf.cast(new_token, tf.int64)) - 1
        num_tokens = tf.reduce_sum(tf.cast(new_token, tf.int64))
        # Punctuation words (one piece, a punctuation character) at the edges
        # of their whitespace token become words of their own.
        punct = (ids.values.row_lengths() == 1) & tf.gather(
            self._punctuation_ids, tf.gather(ids.flat_values, ids.values.row_starts()))
        content = tf.cast(~punct, tf.int64)
        before = tf.cumsum(content, exclusive=True)  # content words before, over all tokens
        token_first = tf.boolean_mask(tf.range(num_tw), new_token)
        before_in_token = before - tf.gather(tf.gather(before, token_first), token)
        total_in_token = tf.gather(tf.math.unsorted_segment_sum(content, token, num_tokens), token)
        edge = punct & ((before_in_token == 0) | (before_in_token == total_in_token))
        prev_edge = tf.concat([[False], edge[:-1]], axis=0)
        new_word = new_token | edge | prev_edge
        word_of_tw = tf.cumsum(tf.cast(new_word, tf.int64)) - 1
        num_words = tf.reduce_sum(tf.cast(new_word, tf.int64))
        pieces = tf.RaggedTensor.from_value_rowids(
            ids.flat_values, tf.gather(word_of_tw, ids.values.value_rowids()), nrows=num_words)
        words_per_text = tf.math.unsorted_segment_sum(tf.cast(new_word, tf.int64), tw_row, batch)
        word_pieces = tf.RaggedTensor.from_row_lengths(pieces, words_per_text)
        word_start = tf.boolean_mask(tw_start, new_word)
        word_end = tf.math.unsorted_segment_max(tw_end, word_of_tw, num_words)
        return (word_pieces, word_pieces.with_values(word_start),
                word_pieces.with_values(word_end))

    def split_characters(self, text):
        """`__call__`'s words found from the characters of `text` (code points
        and their byte offsets), each word tokenized whole by `word_pieces`."""
        text = tf.convert_to_tensor(text, tf.string)
        chars, starts = tf.strings.unicode_decode_with_offsets(text, "UTF-8")
        cp, row = chars.flat_values, chars.value_rowids()
        start = starts.flat_values
        # A character's end: the next one's start, or its text's end.
        last = tf.concat([row[1:] != row[:-1], [True]], axis=0)
        text_end = tf.cast(tf.strings.length(text), tf.int64)
        end = tf.where(last, tf.gather(text_end, row), tf.concat([start[1:], [0]], axis=0))
        space = tf.reduce_any(cp[:, None] == tf.constant(WHITE_SPACE)[None, :], axis=1)
        first, final = (tf.constant(a) for a in punctuation_ranges())
        run = tf.searchsorted(first[None, :], cp[None, :], side="right")[0] - 1
        punct = (run >= 0) & (cp <= tf.gather(final, tf.maximum(run, 0)))
        # Whitespace tokens: a new one at a text's first character or after a space.
        first_char = tf.concat([[True], row[1:] != row[:-1]], axis=0)
        prev_space = tf.concat([[True], space[:-1]], axis=0)
        new_token = ~space & (first_char | prev_space)
        token = tf.cumsum(tf.cast(new_token, tf.int64)) - 1
        num_tokens = tf.reduce_sum(tf.cast(new_token, tf.int64))
        token = tf.where(space, num_tokens, token)  # spaces: a spare segment
        # Punctuation before the token's first or after its last other character
        # is a word of its own, one character each.
        content = tf.cast(~space & ~punct, tf.int64)
        before = tf.cumsum(content, exclusive=True)
        token_first = tf.boolean_mask(tf.range(tf.shape(cp, out_type=tf.int64)[0]), new_token)
        token_first = tf.concat([token_first, [0]], axis=0)
        before_in_token = before - tf.gather(tf.gather(before, token_first), token)
        total_in_token = tf.gather(
            tf.math.unsorted_segment_sum(content, token, num_tokens + 1), token)
        edge = punct & ((before_in_token == 0) | (before_in_token == total_in_token))
        prev_edge = tf.concat([[False], edge[:-1]], axis=0)
        new_word = ~space & (new_token | edge | prev_edge)
        kept = ~space
        word_of_char = tf.boolean_mask(tf.cumsum(tf.cast(new_word, tf.int64)) - 1, kept)
        num_words = tf.reduce_sum(tf.cast(new_word, tf.int64))
        word_start = tf.boolean_mask(start, new_word)
        word_end = tf.math.unsorted_segment_max(tf.boolean_mask(end, kept), word_of_char,
                                                num_words)
        word_row = tf.boolean_mask(row, new_word)
        words = tf.strings.substr(tf.gather(text, word_row), word_start, word_end - word_start,
                                  unit="BYTE")
        per_text = tf.math.unsorted_segment_sum(tf.cast(new_word, tf.int64), row,
                                                tf.shape(text, out_type=tf.int64)[0])
        pieces = tf.RaggedTensor.from_row_lengths(word_pieces(self.preprocessor, words),
                                                  per_text)
        return pieces, pieces.with_values(word_start), pieces.with_values(word_end)
