"""Standalone preprocessor SavedModel: fresh-process load, identical outputs, op rule."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tfbert.export.op_check import check_op_rule
from tfbert.export.preprocessor import export_preprocessor, load_preprocessor
from tfbert.text import BertPreprocessor

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXTS = [
    "Hello, World! The naïve café's crème brûlée.",
    "東京は日本の首都です。 한국어 텍스트",
    "ΟΔΟΣ Straße ﬁne \u200bzero\u00a0width",
    "",
    "   ",
    "x" * 120,
]
PAIRS_B = ["second segment", "b", "", "Ünïcödé", "c", "d"]


@pytest.fixture(scope="module")
def exported(uncased_vocab_file, tmp_path_factory):
    pre = BertPreprocessor(uncased_vocab_file, lower_case=True, seq_length=24)
    path = export_preprocessor(pre, str(tmp_path_factory.mktemp("export") / "preprocessor"))
    return pre, path


def test_layout_and_op_rule(exported):
    _, path = exported
    assert sorted(os.listdir(path)) == ["assets", "fingerprint.pb", "saved_model.pb", "variables"]
    with open(os.path.join(path, "assets", "vocab.txt"), encoding="utf-8") as f:
        assert f.read().splitlines()[101:103] == ["[CLS]", "[SEP]"]
    ops = check_op_rule(path)
    assert "FastWordpieceTokenizeWithOffsets" in ops
    assert not {"RoundRobinTrim", "EagerPyFunc", "RegexSplitWithOffsets"} & set(ops)


def test_fresh_process_gives_identical_outputs(exported, tmp_path):
    pre, path = exported
    script = f"""
import json, sys
import tensorflow as tf
import tensorflow_text  # registers the tokenizer ops
m = tf.saved_model.load({path!r})
texts = tf.constant({TEXTS!r})
b = tf.constant({PAIRS_B!r})
out = {{k: v.numpy().tolist() for k, v in m(texts).items()}}
pairs = {{k: v.numpy().tolist() for k, v in m.signatures["pairs"](text_a=texts, text_b=b).items()}}
ids, starts, limits = m.tokenize_with_offsets(texts)
tok = m.tokenize(texts)
packed = m.bert_pack_inputs([tok, m.tokenize(b)], seq_length=24)
print(json.dumps({{"single": out, "pairs": pairs, "tokens": tok.to_list(),
                  "starts": starts.to_list(), "limits": limits.to_list(),
                  "packed": packed["input_word_ids"].numpy().tolist(),
                  "special": {{k: int(v) for k, v in m.get_special_tokens_dict().items()}},
                  "signatures": sorted(m.signatures)}}))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])

    texts, b = tf.constant(TEXTS), tf.constant(PAIRS_B)
    for key, value in pre(texts).items():
        assert got["single"][key] == value.numpy().tolist(), key
    for key, value in pre([texts, b]).items():
        assert got["pairs"][key] == value.numpy().tolist(), key
    ids, starts, limits = pre.tokenize_with_offsets(texts)
    assert got["tokens"] == pre.tokenize(texts).to_list() == ids.to_list()
    assert got["starts"] == starts.to_list() and got["limits"] == limits.to_list()
    assert got["packed"] == pre.bert_pack_inputs([pre.tokenize(texts), pre.tokenize(b)])[
        "input_word_ids"].numpy().tolist()
    assert got["special"] == pre.vocab.special_tokens_dict()
    assert got["signatures"] == ["bert_pack_inputs", "pairs", "serving_default", "tokenize",
                                 "tokenize_with_offsets"]


def test_serving_signatures_dense(exported):
    pre, path = exported
    loaded = load_preprocessor(path)
    texts = tf.constant(TEXTS[:3])
    parts = loaded.signatures["tokenize"](text=texts)
    ragged = tf.RaggedTensor.from_nested_row_splits(
        parts["token_ids"], [parts["word_row_splits"], parts["piece_row_splits"]]
    )
    assert ragged.to_list() == pre.tokenize(texts).to_list()
    a, b = pre.tokenize(texts).merge_dims(1, 2), pre.tokenize(tf.constant(PAIRS_B[:3])).merge_dims(1, 2)
    packed = loaded.signatures["bert_pack_inputs"](
        ids_a=a.flat_values, row_lengths_a=tf.cast(a.row_lengths(), tf.int32),
        ids_b=b.flat_values, row_lengths_b=tf.cast(b.row_lengths(), tf.int32),
    )
    np.testing.assert_array_equal(packed["input_type_ids"], pre([texts, tf.constant(PAIRS_B[:3])])["input_type_ids"])


@pytest.mark.slow
def test_export_tool_and_check(exported, uncased_vocab_file, tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "vocab.txt").write_bytes(open(uncased_vocab_file, "rb").read())
    (ckpt / "config.json").write_text(json.dumps({"format": "tfbert-checkpoint", "lower_case": True}))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    out_dir = tmp_path / "out"
    run = lambda *args: subprocess.run([sys.executable, os.path.join(REPO, "tools", "export.py"), *args],
                                       capture_output=True, text=True, env=env)
    result = run(f"--checkpoint_dir={ckpt}", "--kind=preprocessor", "--format=saved_model",
                 f"--output_dir={out_dir}", "--seq_length=16")
    assert result.returncode == 0, result.stderr[-3000:]
    result = run(f"--check={out_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "FastWordpieceTokenizeWithOffsets" in result.stdout and "op rule: OK" in result.stdout
    assert "serving_default: ['text']" in result.stdout
    result = run(f"--checkpoint_dir={ckpt}", "--kind=preprocessor", "--format=tflite",
                 f"--output_dir={out_dir}")
    assert result.returncode != 0 and "TFLite has no kernels" in result.stderr


def test_seq_length_override(uncased_vocab_file, tmp_path):
    pre = BertPreprocessor(uncased_vocab_file, seq_length=8)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        export_preprocessor(pre, str(tmp_path / "bad"), seq_length=600)
    assert not (tmp_path / "bad").exists()
