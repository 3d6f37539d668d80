"""`tools/convert_checkpoint.py`, run as a user would: a fresh Python process."""

import importlib.util
import os
import pathlib
import subprocess

import pytest

from tfbert import checkpoint
from fresh_python import python_command

HERE = pathlib.Path(__file__).resolve().parent
TOOL = HERE.parents[1] / "tools" / "convert_checkpoint.py"


def make_google_dir(*args, **kwargs):
    """`test_google.make_google_dir` (pytest's importlib mode has no sibling imports)."""
    spec = importlib.util.spec_from_file_location("convert_test_google", HERE / "test_google.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_google_dir(*args, **kwargs)


def run_tool(*args):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run([python_command(), str(TOOL), *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_tool_converts_google(tmp_path):
    src = make_google_dir(tmp_path, name="chinese_L-2", optimizer_slots=False)
    out = tmp_path / "out"
    ok = run_tool("--source=google", f"--input_dir={src}", f"--output_dir={out}", "--lower_case")
    assert ok.returncode == 0, ok.stderr[-3000:]
    assert "hidden_act gelu_tanh" in ok.stdout and "heads ['mlm', 'nsp']" in ok.stdout
    ckpt = checkpoint.read_checkpoint(out)
    assert ckpt.lower_case is True and ckpt.config.hidden_act == "gelu_tanh"


@pytest.mark.slow
def test_tool_converts_huggingface(minilm_dir, tmp_path):
    out = tmp_path / "minilm"
    result = run_tool("--source=huggingface", f"--input_dir={minilm_dir}", f"--output_dir={out}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "6 layers, hidden 384" in result.stdout
    ckpt = checkpoint.read_checkpoint(out)
    assert ckpt.config.hidden_act == "gelu" and ckpt.lower_case is True


@pytest.mark.slow
def test_tool_reports_bad_input_without_traceback(tmp_path):
    src = make_google_dir(tmp_path, name="chinese_L-2", optimizer_slots=False)
    # No "cased"/"uncased" in the name: the tool asks for --lower_case.
    bad = run_tool("--source=google", f"--input_dir={src}", f"--output_dir={tmp_path / 'out'}")
    assert bad.returncode == 1
    assert "convert_checkpoint: error:" in bad.stderr and "lower_case" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert not (tmp_path / "out").exists()
