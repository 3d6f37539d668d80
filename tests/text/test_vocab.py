"""Vocab loading and learning."""

import pytest
import tensorflow as tf

from tfbert.text import BertTokenizer, Vocab, load_vocab
from tfbert.text.vocab import learn_vocab

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Foxes are quick; dogs are lazy. The fox jumped!",
    "Jumping foxes and sleeping dogs: quickly, lazily.",
] * 20


def test_load_real_vocab(uncased_vocab_file):
    vocab = load_vocab(uncased_vocab_file)
    assert (vocab.vocab_size, vocab.pad_id, vocab.unk_id, vocab.cls_id, vocab.sep_id, vocab.mask_id) == (
        30522, 0, 100, 101, 102, 103)
    assert vocab.id_to_token(7592) == "hello" and vocab.token_to_id("hello") == 7592
    assert vocab.token_to_id("qwertyuiopasdf") == vocab.unk_id
    with pytest.raises(ValueError, match="outside the vocabulary"):
        vocab.id_to_token(30522)


def test_empty_token_is_an_error():
    with pytest.raises(ValueError, match="line 3: empty"):
        Vocab(["[PAD]", "[UNK]", "", "[CLS]", "[SEP]", "[MASK]"])


@pytest.mark.parametrize("lower_case", [True, False])
def test_learn_vocab(lower_case):
    tokens = learn_vocab(TEXTS, vocab_size=80, lower_case=lower_case)
    assert tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert len(tokens) <= 80 + 5 and len(set(tokens)) == len(tokens)
    assert ("The" in tokens or "T" in tokens) != lower_case
    tokenizer = BertTokenizer(vocabulary=tokens, lower_case=lower_case)
    ids = tokenizer.tokenize(tf.constant(["The lazy fox"])).flat_values.numpy()
    assert tokenizer.vocab.unk_id not in ids
