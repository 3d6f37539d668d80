"""WordSplitter: CoNLL-like words of raw strings, with exact byte offsets."""

import tensorflow as tf

from tfbert.text.word_splitting import WordSplitter


def words(pre, text):
    pieces, starts, ends = WordSplitter(pre)(tf.constant(text))
    raw = [t.encode() for t in text]
    return [[r[s:e].decode() for s, e in zip(srow, erow)]
            for r, srow, erow in zip(raw, starts.to_list(), ends.to_list())]


def test_edge_punctuation_splits_inner_stays(uncased_vocab_file):
    from tfbert import BertPreprocessor

    pre = BertPreprocessor(vocab_file=uncased_vocab_file)
    got = words(pre, ["(Reuters), the U.S. didn't say.", "Café  au   lait", ""])
    assert got == [["(", "Reuters", ")", ",", "the", "U.S", ".", "didn't", "say", "."],
                   ["Café", "au", "lait"], []]
