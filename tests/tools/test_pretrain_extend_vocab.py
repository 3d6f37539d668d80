"""tools/extend_vocab.py: domain words into [unusedN] slots or a grown vocab."""

import functools
import importlib.util
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertConfig, BertEncoder, checkpoint
from tfbert.models.pretrainer import BertPretrainer
from tfbert.text.tokenizer import BertTokenizer

ROOT = pathlib.Path(__file__).parents[2]
TOOL = ROOT / "tools" / "extend_vocab.py"
VOCAB = ROOT / "tests" / "data" / "pretraining" / "vocab.txt"
WORDS = ["docstring", "serializable"]


@functools.lru_cache(maxsize=None)  # absl flags may be defined once per process
def load_tool():
    spec = importlib.util.spec_from_file_location("extend_vocab", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def base_ckpt(tmp_path_factory):
    tokens = VOCAB.read_text().split("\n")
    config = BertConfig.from_preset("tiny", vocab_size=len([t for t in tokens if t]), num_layers=1)
    path = tmp_path_factory.mktemp("base") / "ckpt"
    BertPretrainer(BertEncoder(config)).save_checkpoint(str(path), str(VOCAB), lower_case=True)
    return str(path)


def pieces(vocab_file, word):
    tok = BertTokenizer(vocab_file=vocab_file, lower_case=True)
    return tok.tokenize(tf.constant([word])).merge_dims(1, 2).to_list()[0]


def test_unused_slots_keep_the_vocab_size(base_ckpt, tmp_path):
    old = checkpoint.read_checkpoint(base_ckpt)
    old_pieces = {w: pieces(old.vocab_file, w) for w in WORDS}
    assert all(len(p) > 1 for p in old_pieces.values())
    out = str(tmp_path / "unused")
    result = subprocess.run(
        [sys.executable, str(TOOL), f"--checkpoint_dir={base_ckpt}", f"--output_dir={out}",
         f"--words={','.join(WORDS)}", "--mode=unused"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    new = checkpoint.read_checkpoint(out)
    assert new.config.vocab_size == old.config.vocab_size
    key = "embeddings/word_embeddings/embeddings"
    emb_old, emb_new = old.encoder_weights()[key], new.encoder_weights()[key]
    for word in WORDS:
        ids = pieces(new.vocab_file, word)
        assert len(ids) == 1  # now one token
        assert open(new.vocab_file).read().split("\n")[ids[0]] == word
        np.testing.assert_allclose(emb_new[ids[0]], emb_old[old_pieces[word]].mean(0), rtol=1e-6)
    # Continued pretraining loads it (heads included).
    model = BertPretrainer.from_checkpoint(out)
    assert model.config.vocab_size == old.config.vocab_size


def test_grow_appends_tokens_embeddings_and_bias(base_ckpt, tmp_path):
    tool = load_tool()
    added = tool.run(base_ckpt, str(tmp_path / "grow"), words=WORDS, mode="grow")
    old = checkpoint.read_checkpoint(base_ckpt)
    new = checkpoint.read_checkpoint(str(tmp_path / "grow"))
    assert new.config.vocab_size == old.config.vocab_size + 2
    assert sorted(added.values()) == [old.config.vocab_size, old.config.vocab_size + 1]
    assert new.prefixed_weights("mlm")["output_bias"].shape == (new.config.vocab_size,)
    model = BertPretrainer.from_checkpoint(str(tmp_path / "grow"))
    assert model.encoder.token_embedding.shape[0] == new.config.vocab_size


def test_words_mined_from_a_corpus(base_ckpt, tmp_path):
    tool = load_tool()
    corpus = ROOT / "tests" / "data" / "pretraining" / "corpus.txt"
    added = tool.run(base_ckpt, str(tmp_path / "mined"), corpus=str(corpus),
                     max_new_words=5, min_count=3, mode="unused")
    assert len(added) == 5


def test_errors(base_ckpt, tmp_path):
    tool = load_tool()
    with pytest.raises(ValueError, match="unusedN"):
        tool.run(base_ckpt, str(tmp_path / "x"), corpus=str(ROOT / "tests/data/pretraining/corpus.txt"),
                 max_new_words=50, min_count=1, mode="unused")
    with pytest.raises(ValueError, match="not one word"):
        tool.run(base_ckpt, str(tmp_path / "x"), words=["doc-string"])
    with pytest.raises(ValueError, match="No new words"):
        tool.run(base_ckpt, str(tmp_path / "x"), words=["the"])
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        tool.run(base_ckpt, str(tmp_path / "x"), words_file=str(tmp_path / "nope.txt"))
