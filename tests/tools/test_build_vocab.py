"""tools/build_vocab.py: `--config` YAML, flags and `--set` (which wins), and
a one-line error with exit code 1. (The learning: tests/text/test_vocab_building.py.)"""

import os
import subprocess

from tfbert.text import load_vocab
from fresh_python import python_command

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_build_vocab_tool(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The quick brown fox jumps over the lazy dog.\n" * 20, encoding="utf-8")
    out = tmp_path / "vocab" / "vocab.txt"
    config = tmp_path / "vocab.yaml"
    config.write_text(f"input_files: {corpus}\nvocab_size: 500\nlower_case: false\n")
    result = subprocess.run(
        [python_command(), os.path.join(REPO, "tools", "build_vocab.py"), f"--config={config}",
         f"--output_file={out}", "--set", "lower_case=true"],
        capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    vocab = load_vocab(str(out))
    assert vocab.cls_id == 2 and "the" in vocab.tokens
    assert "The" not in vocab.tokens  # --set beat the YAML's lower_case: false
    bad = subprocess.run(
        [python_command(), os.path.join(REPO, "tools", "build_vocab.py"),
         f"--input_files={tmp_path / 'missing*.txt'}", f"--output_file={out}"],
        capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    assert bad.returncode == 1 and "no file matches" in bad.stderr
