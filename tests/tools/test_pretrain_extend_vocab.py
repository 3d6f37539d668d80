"""tools/extend_vocab.py: flags in, an extended checkpoint that continued
pretraining loads; bad flags are one line and exit code 1. (The extension
itself: tests/text/test_vocab_extension.py.)"""

import pathlib
import re
import subprocess

from tfbert import checkpoint
from tfbert.models.pretrainer import BertPretrainer
from fresh_python import python_command

TOOL = pathlib.Path(__file__).parents[2] / "tools" / "extend_vocab.py"
# TensorFlow's C++ log lines (absl's format), which a child forked from the
# fresh-python server can print (a "failed call to cuInit" line, once in a two-worker run):
# not the tool's output.
TF_LOG_LINE = re.compile(r"^([IWEF]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ \S+:\d+\] "
                         r"|WARNING: All log messages before absl)")


def extend_vocab(*args):
    return subprocess.run([python_command(), str(TOOL), *args], capture_output=True, text=True,
                          timeout=300)


def test_unused_words_then_continued_pretraining(pretraining_checkpoint, tmp_path):
    out = str(tmp_path / "unused")
    result = extend_vocab(f"--checkpoint_dir={pretraining_checkpoint}", f"--output_dir={out}",
                          "--words=docstring,serializable", "--mode=unused")
    assert result.returncode == 0, result.stderr[-2000:]
    size = checkpoint.read_checkpoint(pretraining_checkpoint).config.vocab_size
    assert result.stdout.splitlines() == [
        "       5 'docstring' (was doc ##st ##ring)",
        "       6 'serializable' (was se ##ri ##al ##i ##z ##able)",
        f"Added 2 words (unused); vocab size {size}; wrote {out}"]
    # Continued pretraining loads it (heads included).
    model = BertPretrainer.from_checkpoint(out)
    assert model.config.vocab_size == size


def test_bad_flags_are_one_line(pretraining_checkpoint, tmp_path):
    result = extend_vocab("--words=docstring")
    assert result.returncode == 1
    assert [line for line in result.stderr.strip().splitlines()
            if not TF_LOG_LINE.match(line)] == [
        "extend_vocab: error: --checkpoint_dir and --output_dir are required."]
    result = extend_vocab(f"--checkpoint_dir={pretraining_checkpoint}",
                          f"--output_dir={tmp_path / 'x'}", "--words=doc-string")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(
        "extend_vocab: error: 'doc-string' is not one word")
