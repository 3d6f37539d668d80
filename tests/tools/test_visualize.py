"""tools/visualize.py writes real PNGs: attention maps of a checkpoint,
training curves and a confusion matrix of a tiny tools/finetune.py run."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def tool(name, *args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "tools", name), *args],
                          capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=600)


def assert_png(path):
    from PIL import Image  # matplotlib's own dependency

    data = open(path, "rb").read()
    assert data.startswith(PNG_MAGIC) and len(data) > 2000
    with Image.open(path) as image:
        image.verify()
        assert min(image.size) >= 100


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


def test_curves_and_confusion_from_a_run(tiny_run, tmp_path):
    for kind in ("curves", "confusion"):
        out = tmp_path / f"{kind}.png"
        proc = tool("visualize.py", f"--kind={kind}", f"--model_dir={tiny_run}", f"--output={out}")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert proc.stdout.strip() == str(out)
        assert_png(out)
    header, *rows = (tiny_run / "dev_predictions.tsv").read_text().splitlines()
    assert header == "index\tgold\tpredicted" and len(rows) == 60


def test_attention_grid(tmp_path, uncased_vocab_file, tiny_config):
    from tfbert import BertEncoder, checkpoint

    encoder = BertEncoder(tiny_config)
    ckpt = checkpoint.save_checkpoint(str(tmp_path / "ckpt"), tiny_config,
                                      encoder.get_named_weights(), uncased_vocab_file, True)
    out = tmp_path / "attention.png"
    proc = tool("visualize.py", "--kind=attention", f"--checkpoint_dir={ckpt}",
                "--text=The cat sat on the mat.", "--text_b=It purred.", f"--output={out}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_png(out)


def test_missing_inputs_are_one_line_errors(tmp_path):
    proc = tool("visualize.py", "--kind=curves", f"--model_dir={tmp_path}",
                f"--output={tmp_path / 'x.png'}")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("visualize: error: No training log:")
    assert "Traceback" not in proc.stderr
