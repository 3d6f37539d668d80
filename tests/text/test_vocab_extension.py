"""tfbert.text.vocab_extension: domain words into [unusedN] slots or a grown vocab."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

from tfbert import checkpoint
from tfbert.models.pretrainer import BertPretrainer
from tfbert.text.tokenizer import BertTokenizer
from tfbert.text.vocab_extension import extend_vocab

CORPUS = pathlib.Path(__file__).parents[1] / "data" / "pretraining" / "corpus.txt"
WORDS = ["docstring", "serializable"]


def pieces(vocab_file, word):
    tok = BertTokenizer(vocab_file=vocab_file, lower_case=True)
    return tok.tokenize(tf.constant([word])).merge_dims(1, 2).to_list()[0]


def test_unused_slots_keep_the_vocab_size(pretraining_checkpoint, tmp_path, capsys):
    old = checkpoint.read_checkpoint(pretraining_checkpoint)
    old_pieces = {w: pieces(old.vocab_file, w) for w in WORDS}
    assert all(len(p) > 1 for p in old_pieces.values())
    out = str(tmp_path / "unused")
    added = extend_vocab(pretraining_checkpoint, out, words=WORDS, mode="unused")
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"Added 2 words (unused); vocab size {old.config.vocab_size}; wrote {out}")
    new = checkpoint.read_checkpoint(out)
    assert new.config.vocab_size == old.config.vocab_size
    key = "embeddings/word_embeddings/embeddings"
    emb_old, emb_new = old.encoder_weights()[key], new.encoder_weights()[key]
    for word in WORDS:
        ids = pieces(new.vocab_file, word)
        assert ids == [added[word]]  # now one token
        assert open(new.vocab_file).read().split("\n")[ids[0]] == word
        np.testing.assert_allclose(emb_new[ids[0]], emb_old[old_pieces[word]].mean(0), rtol=1e-6)


def test_grow_appends_tokens_embeddings_and_bias(pretraining_checkpoint, tmp_path):
    added = extend_vocab(pretraining_checkpoint, str(tmp_path / "grow"), words=WORDS, mode="grow")
    old = checkpoint.read_checkpoint(pretraining_checkpoint)
    new = checkpoint.read_checkpoint(str(tmp_path / "grow"))
    assert new.config.vocab_size == old.config.vocab_size + 2
    assert sorted(added.values()) == [old.config.vocab_size, old.config.vocab_size + 1]
    assert new.prefixed_weights("mlm")["output_bias"].shape == (new.config.vocab_size,)
    model = BertPretrainer.from_checkpoint(str(tmp_path / "grow"))
    assert model.encoder.token_embedding.shape[0] == new.config.vocab_size


def test_words_mined_from_a_corpus(pretraining_checkpoint, tmp_path):
    added = extend_vocab(pretraining_checkpoint, str(tmp_path / "mined"), corpus=str(CORPUS),
                         max_new_words=5, min_count=3, mode="unused")
    assert len(added) == 5


def test_errors(pretraining_checkpoint, tmp_path):
    out = str(tmp_path / "x")
    with pytest.raises(ValueError, match="unusedN"):
        extend_vocab(pretraining_checkpoint, out, corpus=str(CORPUS), max_new_words=50,
                     min_count=1, mode="unused")
    with pytest.raises(ValueError, match="not one word"):
        extend_vocab(pretraining_checkpoint, out, words=["doc-string"])
    with pytest.raises(ValueError, match="No new words"):
        extend_vocab(pretraining_checkpoint, out, words=["the"])
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        extend_vocab(pretraining_checkpoint, out, words_file=str(tmp_path / "nope.txt"))
    with pytest.raises(ValueError, match="mode must be one of"):
        extend_vocab(pretraining_checkpoint, out, words=WORDS, mode="append")
