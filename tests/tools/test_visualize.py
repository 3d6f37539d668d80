"""tools/visualize.py writes real PNGs of a tiny tools/finetune.py run (training
curves and a confusion matrix) and prints their paths; missing inputs are one
line and exit code 1. (The drawing, attention maps too: tests/test_visualize.py.)"""

import os
import subprocess
import sys

import pytest
from fresh_python import python_command

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


def tool(name, *args, python=None):
    return subprocess.run([python or python_command(), os.path.join(ROOT, "tools", name), *args],
                          capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=600)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, uncased_vocab_file):
    run = tmp_path_factory.mktemp("viz") / "run"
    proc = tool("finetune.py", "--task=classification", "--config=configs/finetune_sentiment.yaml",
                f"--model_dir={run}", f"--set=vocab_file={uncased_vocab_file}",
                "--set=encoder.num_layers=1", "--set=encoder.hidden_size=64",
                "--set=encoder.num_heads=2", "--set=encoder.intermediate_size=128",
                "--set=train.epochs=3", "--set=train.steps_per_epoch=3", "--set=train.verbose=0",
                "--set=train.jit_compile=false", "--set=train.tensorboard=false")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run


def test_curves_and_confusion_from_a_run(tiny_run, tmp_path, assert_png):
    for kind in ("curves", "confusion"):
        out = tmp_path / f"{kind}.png"
        proc = tool("visualize.py", f"--kind={kind}", f"--model_dir={tiny_run}", f"--output={out}")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert proc.stdout.strip() == str(out)
        assert_png(out)
    header, *rows = (tiny_run / "dev_predictions.tsv").read_text().splitlines()
    assert header == "index\tgold\tpredicted" and len(rows) == 60


def test_missing_inputs_are_one_line_errors(tmp_path):
    proc = tool("visualize.py", "--kind=curves", f"--model_dir={tmp_path}",
                f"--output={tmp_path / 'x.png'}")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("visualize: error: No training log:")
    assert "Traceback" not in proc.stderr
    # A real interpreter: the whole of stderr is compared, and a child of the
    # fresh-Python server (TensorFlow imported) adds TensorFlow's own cuInit line.
    proc = tool("visualize.py", "--kind=attention", f"--checkpoint_dir={tmp_path}",
                f"--output={tmp_path / 'x.png'}", python=sys.executable)
    assert (proc.returncode, proc.stderr) == (
        1, "visualize: error: --kind=attention needs --checkpoint_dir and --text.\n")
