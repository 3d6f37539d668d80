"""tools/prune.py as users run it, on a tiny tools/finetune.py run of the
shipped sentiment data: the last line is the JSON summary and the pruned
model is exported; a bad fraction or a directory that is no run is one line
on stderr."""

import json
import os
import subprocess

from fresh_python import python_command

from tfbert.runs.finetune import FinetuneConfig, run_experiment
from tfbert.train.train_config import TrainConfig

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = "tests/data/finetune"


def run_tool(*args):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run([python_command(), os.path.join(ROOT, "tools", "prune.py"), *args],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)


def test_prunes_a_finetune_run_and_exports(tmp_path):
    run = str(tmp_path / "run")
    cfg = FinetuneConfig(
        task={"train_file": f"{DATA}/sentiment_train.tsv", "dev_file": f"{DATA}/sentiment_dev.tsv",
              "text_column": "sentence", "seq_length": 32},
        train=TrainConfig(epochs=1, steps_per_epoch=4, batch_size=16, jit_compile=False,
                          verbose=0, tensorboard=False),
        preset="tiny", encoder={"vocab_size": 1931},
        vocab_file="tests/data/pretraining/vocab.txt", model_dir=run,
        export_dir=str(tmp_path / "unpruned"))
    finetuned = run_experiment("classification", cfg, log=lambda line: None)
    export_dir = str(tmp_path / "pruned")
    proc = run_tool(f"--model_dir={run}", "--fraction=0.5", f"--export_dir={export_dir}",
                    "--epochs=1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (summary["heads_before"], summary["heads_after"]) == (4, 2)
    assert summary["dev_score_before"] == finetuned["best_score"]  # the run's kept weights
    assert 0 <= summary["dev_score_after"] <= 1 and summary["export_dir"] == export_dir
    assert sum(summary["heads_per_layer"]) == 2
    # The export is the finetune tool's (export_task); tests/analysis/test_head_pruning.py
    # serves a pruned model's export in a fresh process.
    assert os.path.isfile(os.path.join(export_dir, "saved_model.pb"))

    # Bad input is one line on stderr (the fraction's check: tests/analysis/test_head_pruning.py).
    bad = run_tool(f"--model_dir={tmp_path}", "--fraction=0.2", f"--export_dir={tmp_path / 'x'}")
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines()[-1] == (
        f"prune: error: {tmp_path / 'finetune_config.json'} not found: --model_dir must be a "
        "tools/finetune.py run.")
