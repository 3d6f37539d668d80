"""Vocab loading and tools/build_vocab.py."""

import os
import subprocess
import sys

import pytest
import tensorflow as tf

from tfbert.text import BertTokenizer, Vocab, load_vocab
from tfbert.text.vocab import learn_vocab

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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


def test_build_vocab_tool(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    out = tmp_path / "vocab" / "vocab.txt"
    config = tmp_path / "vocab.yaml"
    config.write_text(f"input_files: {corpus}\nvocab_size: 500\nlower_case: true\n")
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "tools", "build_vocab.py"), f"--config={config}",
         f"--output_file={out}", "--set", "vocab_size=60"],
        capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    vocab = load_vocab(str(out))
    assert vocab.cls_id == 2 and "the" in vocab.tokens and vocab.vocab_size < 100  # --set beat the YAML 500
    bad = subprocess.run(
        [sys.executable, os.path.join(REPO, "tools", "build_vocab.py"),
         f"--input_files={tmp_path / 'missing*.txt'}", f"--output_file={out}"],
        capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert bad.returncode == 1 and "no file matches" in bad.stderr
