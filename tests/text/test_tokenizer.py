"""BertTokenizer: offsets, tokens as strings, bad input, vocab checks."""

import numpy as np
import pytest
import tensorflow as tf

from tfbert.text import BertTokenizer

OFFSET_TEXTS = [
    "Hello, World! The naïve CAFÉ's crème brûlée costs $5.",
    "Straße ΟΔΟΣ İstanbul ﬁne … Ⅻ",
    "東京は日本の首都です。 한국어 텍스트",
    "e\u0301t\u0301e\u0301 zero\u200bwidth\u00a0nbsp\ttab\ncontrol\x07bell",
    "emoji 😀👍🏽 mixed-scripts abcабвαβγ",
    "x" * 120 + " tail",
]


@pytest.fixture(scope="module")
def uncased(uncased_vocab_file):
    return BertTokenizer(vocab_file=uncased_vocab_file, lower_case=True)


@pytest.fixture(scope="module")
def reference(uncased_vocab_file):
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

    return BertTokenizerLegacy(uncased_vocab_file, do_lower_case=True)


def test_offsets_map_words_back_to_the_original(uncased, reference):
    ids, starts, limits = uncased.tokenize_with_offsets(tf.constant(OFFSET_TEXTS))
    pieces = uncased.id_to_token(ids).to_list()
    for text, words, word_starts, word_limits in zip(
        OFFSET_TEXTS, pieces, starts.to_list(), limits.to_list()
    ):
        raw = text.encode("utf-8")
        for word, s, l in zip(words, word_starts, word_limits):
            assert all(0 <= a <= b <= len(raw) for a, b in zip(s, l))
            assert s == sorted(s) and l == sorted(l)
            span = raw[s[0] : l[-1]].decode("utf-8")
            if word == [b"[UNK]"]:
                assert len(reference.basic_tokenizer.tokenize(span)) == 1
                continue
            # The original bytes of a word normalize to exactly that word.
            joined = "".join(p.decode().removeprefix("##") for p in word)
            assert reference.basic_tokenizer.tokenize(span) == [joined], (text, span, word)


def test_offsets_of_pieces(uncased):
    ids, starts, limits = uncased.tokenize_with_offsets(tf.constant(["Unbelievably Naïve!"]))
    raw = "Unbelievably Naïve!".encode()
    spans = [raw[s:l].decode() for s, l in zip(starts.flat_values.numpy(), limits.flat_values.numpy())]
    tokens = [t.decode() for t in uncased.id_to_token(ids.flat_values).numpy()]
    assert tokens == ["un", "##bel", "##ie", "##va", "##bly", "naive", "!"]
    assert spans == ["Un", "bel", "ie", "va", "bly", "Naïve", "!"]


def test_cased_nfc_offsets(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "café", "Ω"]) + "\n")
    tokenizer = BertTokenizer(vocab_file=str(vocab), lower_case=False)
    text = "cafe\u0301 \u2126"  # decomposed é, OHM SIGN: NFC gives café, Ω
    ids, starts, limits = tokenizer.tokenize_with_offsets(tf.constant([text]))
    assert ids.to_list() == [[[5], [6]]] == tokenizer.tokenize(tf.constant([text])).to_list()
    assert starts.to_list() == [[[0], [7]]] and limits.to_list() == [[[6], [10]]]


def test_tokens_as_strings(uncased):
    assert uncased.id_to_token(tf.constant([101, 7592])).numpy().tolist() == [b"[CLS]", b"hello"]
    assert uncased.token_to_id(tf.constant(["hello", "##s", "not-a-token"])).numpy().tolist() == [
        7592, 2015, 100]
    pieces = uncased.wordpieces(tf.constant(["Tokenization rocks"])).to_list()
    assert pieces == [[[b"token", b"##ization"], [b"rocks"]]]
    packed = tf.constant([[101, 19204, 3989, 5749, 102, 0, 0]])
    assert uncased.detokenize(packed).numpy().tolist() == [b"tokenization rocks"]
    assert uncased.detokenize(uncased.tokenize(tf.constant(["A fill-mask, test!"]))).numpy().tolist() == [
        b"a fill - mask , test !"]


def test_empty_and_whitespace_and_zero_batch(uncased):
    ids = uncased.tokenize(tf.constant(["", " \t\n ", "\u200b\u00a0", "a"]))
    assert ids.to_list() == [[], [], [], [[1037]]]
    with_offsets = uncased.tokenize_with_offsets(tf.constant(["", " \t\n ", "\u200b\u00a0", "a"]))[0]
    assert with_offsets.to_list() == ids.to_list()
    for fn in (uncased.tokenize, lambda s: uncased.tokenize_with_offsets(s)[0]):
        empty = fn(tf.constant([], tf.string))
        assert empty.shape[0] == 0 and empty.dtype == tf.int32
    assert uncased.tokenize(tf.constant([""])).to_list() == [[]]


def test_invalid_utf8_bytes_are_dropped(uncased):
    # As the reference: bytes.decode("utf-8", "ignore").
    texts = [b"caf\xc3", b"ab\xffcd ok", b"\xe2\x82", b"\xc3\xa9t\xc3\xa9"]
    ids, starts, limits = uncased.tokenize_with_offsets(tf.constant(texts))
    fast = uncased.tokenize(tf.constant(texts))
    assert fast.to_list() == ids.to_list()
    expected = [uncased.tokenize(tf.constant([t.decode("utf-8", "ignore")])).to_list()[0] for t in texts]
    assert ids.to_list() == expected
    assert ids.to_list()[2] == []
    # Offsets still point into the original bytes: "abcd" spans b"ab\xffcd".
    assert starts.to_list()[1][0][0] == 0 and limits.to_list()[1][-2][-1] == 5


def test_input_checks(uncased):
    with pytest.raises(TypeError, match="tf.string"):
        uncased.tokenize(tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"1-D batch"):
        uncased.tokenize(tf.constant([["a", "b"]]))
    with pytest.raises(ValueError, match=r"1-D batch"):
        uncased.tokenize(tf.constant("a"))
    # keras.Input(shape=(1,)) gives [batch, 1]: accepted.
    assert uncased.tokenize(tf.constant([["hello"]])).to_list() == [[[7592]]]


def test_vocab_errors(tmp_path):
    missing = tmp_path / "no_mask.txt"
    missing.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello"]) + "\n")
    with pytest.raises(ValueError, match=r"no_mask.txt.*\[MASK\]"):
        BertTokenizer(vocab_file=str(missing))
    duplicate = tmp_path / "dup.txt"
    duplicate.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "a"]) + "\n")
    with pytest.raises(ValueError, match="line 7: duplicate token 'a'"):
        BertTokenizer(vocab_file=str(duplicate))
    with pytest.raises(FileNotFoundError, match="nowhere.txt"):
        BertTokenizer(vocab_file=str(tmp_path / "nowhere.txt"))


def test_graph_mode_and_tf_data(uncased):
    ds = tf.data.Dataset.from_tensor_slices(["Hello there", "Straße"]).batch(2)
    ds = ds.map(lambda s: uncased.tokenize(s).merge_dims(1, 2).to_tensor())
    np.testing.assert_array_equal(next(iter(ds)), [[7592, 2045], [2358, 27807]])
