"""tools/finetune.py as users run it: a grid on the shipped CoNLL data with a
tiny random encoder, the exported model served in a fresh process; bad
configs and bad data exit with a clear message."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "finetune.py")


def run_tool(*args, timeout=600):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=timeout)


@pytest.mark.slow
def test_grid_trains_reports_and_exports(tmp_path, uncased_vocab_file, run_python):
    proc = run_tool("--task=tagging", "--config=configs/finetune_tiny_ner.yaml",
                    f"--model_dir={tmp_path}", f"--set=vocab_file={uncased_vocab_file}",
                    "--set=grid.learning_rate=[1.0e-3, 1.0e-5]", "--set=train.epochs=2",
                    "--set=train.steps_per_epoch=20", "--set=train.verbose=0",
                    # XLA compile per grid run costs more than these 20 steps on CPU.
                    "--set=train.jit_compile=false")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Dev f1 per setting:" in proc.stdout
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    results = json.load(open(tmp_path / "results.json"))
    scores = {r["learning_rate"]: r["f1"] for r in results["grid"]}
    assert set(scores) == {1e-3, 1e-5}
    # The usable learning rate wins, and its model is the one exported.
    assert scores[1e-3] > 0.3 and scores[1e-3] > scores[1e-5]
    assert summary["best_score"] == scores[1e-3]
    assert os.path.isdir(tmp_path / "grid" / "lr0.001_bs16_ep2")
    out = run_python(
        "import tensorflow as tf\nfrom tfbert.export.task_model import load_task_model\n"
        f"m = load_task_model({summary['export_dir']!r})\n"
        "r = m.signatures['serving_default'](text=tf.constant(['Maria visited Tokyo last Friday .']))\n"
        "print([t.decode() for t in r['tags'].numpy()[0]])\n")
    tags = eval(out.strip().splitlines()[-1])
    assert len(tags) == 6 and set(tags) <= {"O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG",
                                            "I-ORG"}


def test_bad_config_and_data_are_clear_errors(tmp_path, uncased_vocab_file):
    config = tmp_path / "c.yaml"
    config.write_text("task:\n  train_file: t.tsv\n  txt_column: x\n")
    proc = run_tool("--task=classification", f"--config={config}", f"--model_dir={tmp_path}")
    assert proc.returncode == 1
    assert "unknown key(s) ['txt_column']" in proc.stderr and "c.yaml" in proc.stderr

    train = tmp_path / "train.tsv"
    train.write_text("sentence\tlabel\nGood .\tpos\nBad .\tneg\n")
    dev = tmp_path / "dev.tsv"
    dev.write_text("sentence\tlabel\nFine .\tpos\nMeh .\tneutral\n")
    config.write_text(f"task:\n  train_file: {train}\n  dev_file: {dev}\n  seq_length: 8\n"
                      f"preset: tiny\nvocab_file: {uncased_vocab_file}\n")
    proc = run_tool("--task=classification", f"--config={config}", f"--model_dir={tmp_path}/m")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert f"{dev}, line 3: label 'neutral' is not in the label list" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_mirrored_strategy_on_two_cpu_devices(tmp_path, uncased_vocab_file):
    proc = run_tool("--task=tagging", "--config=configs/finetune_tiny_ner.yaml",
                    f"--model_dir={tmp_path}", f"--set=vocab_file={uncased_vocab_file}",
                    "--distribution_strategy=mirrored", "--set=num_devices=2",
                    "--set=train.epochs=1", "--set=train.steps_per_epoch=5",
                    "--set=train.verbose=0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "XLA is off for a multi-replica strategy on CPU" in proc.stdout
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert os.path.isfile(os.path.join(summary["export_dir"], "saved_model.pb"))
