"""tools/prune.py as users run it, on a tiny tools/finetune.py run of the
shipped sentiment data, pruned iteratively: the last line is the JSON
summary and the pruned model is exported; a directory that is no run, bad
epochs or a bad step is one line."""

import json
import os
import subprocess

from fresh_python import python_command

from tfbert.runs.finetune import FinetuneConfig, prepare_experiment
from tfbert.runs.prune import prune_run
from tfbert.tasks.classification import ClassificationTask
from tfbert.tasks.runner import finetune
from tfbert.train.train_config import TrainConfig

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = "tests/data/finetune"


def run_tool(*args):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run([python_command(), os.path.join(ROOT, "tools", "prune.py"), *args],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)


def test_prunes_a_finetune_run_and_exports(tmp_path, raises_one_line_from_tfbert):
    run = str(tmp_path / "run")
    cfg = FinetuneConfig(
        task={"train_file": f"{DATA}/sentiment_train.tsv", "dev_file": f"{DATA}/sentiment_dev.tsv",
              "text_column": "sentence", "seq_length": 32},
        train=TrainConfig(epochs=1, steps_per_epoch=4, batch_size=16, jit_compile=False,
                          verbose=0, tensorboard=False),
        preset="tiny", encoder={"vocab_size": 1931},
        vocab_file="tests/data/pretraining/vocab.txt", model_dir=run)
    # What tools/finetune.py leaves (finetune_config.json, best.weights.h5), without its export.
    task_config, random_init = prepare_experiment("classification", cfg)
    finetuned = finetune(ClassificationTask(task_config), cfg.train, run,
                         encoder_config=random_init, vocab_file=cfg.vocab_file)
    export_dir = str(tmp_path / "pruned")
    proc = run_tool(f"--model_dir={run}", "--fraction=0.5", "--step=0.25",
                    f"--export_dir={export_dir}", "--epochs=1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (summary["heads_before"], summary["heads_after"]) == (4, 2)
    assert summary["dev_score_before"] == finetuned.best_score  # the run's kept weights
    assert 0 <= summary["dev_score_after"] <= 1 and summary["export_dir"] == export_dir
    assert sum(summary["heads_per_layer"]) == 2 and summary["step"] == 0.25
    assert sum(len(h) for h in summary["pruned_heads"].values()) == 2
    # The export is the finetune tool's (export_task); tests/analysis/test_head_pruning.py
    # serves a pruned model's export in a fresh process.
    assert os.path.isfile(os.path.join(export_dir, "saved_model.pb"))

    # Bad input is one line (in-process: a second tool run costs seconds; the tool
    # prints the same line after "prune: error: "; the fraction: test_head_pruning.py).
    raises_one_line_from_tfbert(
        "not a run", lambda: prune_run(str(tmp_path), 0.2, str(tmp_path / "x")),
        "finetune_config.json not found: --model_dir must be a tools/finetune.py run")
    (tmp_path / "cut").mkdir()  # a run whose finetune_config.json was cut short
    (tmp_path / "cut" / "finetune_config.json").write_text('{"task_name": "classif')
    raises_one_line_from_tfbert(
        "truncated run config", lambda: prune_run(str(tmp_path / "cut"), 0.2, str(tmp_path / "x")),
        r"cut/finetune_config\.json: not valid JSON: ")
    raises_one_line_from_tfbert(
        "epochs", lambda: prune_run(run, 0.2, str(tmp_path / "x"), epochs=-1),
        r"epochs must be >= 0 \(an integer\), got -1")
    raises_one_line_from_tfbert(
        "step", lambda: prune_run(run, 0.2, str(tmp_path / "x"), step=0),
        r"step must be in \(0, 1\]")
