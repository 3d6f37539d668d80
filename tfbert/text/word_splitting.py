"""Words of raw strings as CoNLL tokenizes them, with wordpieces and offsets (graph ops).

A word is a whitespace-separated token with its leading and trailing
punctuation split off: `(Reuters),` -> `(`, `Reuters`, `)`, `,`; `U.S.` ->
`U.S`, `.`; inner punctuation stays (`didn't`). Tagging serves raw strings
with these words, so the words a served model tags are those it trained on.

Example:
>>> pre = BertPreprocessor(vocab_file="tests/data/pretraining/vocab.txt")
>>> pieces, starts, ends = WordSplitter(pre)(tf.constant(["Open (the) file."]))
>>> starts.to_list(), ends.to_list()
([[0, 5, 6, 9, 11, 15]], [[4, 6, 9, 10, 15, 16]])
"""

import numpy as np
import tensorflow as tf

from tfbert.text.char_table import is_punctuation


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
        (which split every punctuation character) and their offsets.
        """
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
