"""The main job (tools/quickstart.sh -> tools/quickstart.py) as a user runs
it, with a reduced budget (2 epochs): every artifact is there and loads, and
the summary's baselines are what they claim.

Slow: two fine-tuning runs of MiniLM-sized models, exports, a fresh process.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from fresh_python import python_command

ROOT = pathlib.Path(__file__).parents[2]


@pytest.mark.slow
def test_main_job_writes_every_artifact_and_beats_its_baselines(tmp_path):
    """Minutes: the quickstart script is one user's first hour in one command
    (convert MiniLM, fine-tune it and a random-init baseline, export a
    SavedModel and TFLite, serve both); each step is what it checks."""
    out = tmp_path / "quickstart"
    result = subprocess.run(["bash", str(ROOT / "tools" / "quickstart.sh"), f"--output_dir={out}",
                             "--epochs=2"], capture_output=True, text=True, timeout=1500,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
                                 # the script's `python` is this interpreter, venv or not
                                 "PATH": f"{os.path.dirname(python_command())}:"
                                         f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"})
    assert result.returncode == 0, result.stderr[-3000:]
    for number in range(1, 7):  # progress: each step announced
        assert f"== {number}. " in result.stdout
    assert "== Summary" in result.stdout

    summary = json.loads((out / "summary.json").read_text())
    # Baselines: the majority class of the (balanced) dev set, and random init.
    assert summary["dev_accuracy_majority_class"] == pytest.approx(0.5)
    assert summary["dev_accuracy_pretrained"] >= 0.9
    assert summary["dev_accuracy_pretrained"] > summary["dev_accuracy_random_init"] + 0.2
    # The dev set's sentiment words never occur in train: only pretrained
    # knowledge generalises, so the same model from random init stays near chance.
    assert summary["dev_accuracy_random_init"] <= 0.70
    # Artifacts: checkpoint, SavedModel, TFLite, run dirs with logs and predictions.
    assert (out / "minilm" / "config.json").is_file()
    assert (out / "minilm" / "model.safetensors").is_file()
    assert summary["export_dir"] == str(out / "sentiment" / "1")
    assert (out / "sentiment" / "1" / "saved_model.pb").is_file()
    assert os.path.getsize(summary["tflite_file"]) > 1e6
    assert (out / "runs" / "pretrained" / "log.csv").is_file()
    assert (out / "runs" / "pretrained" / "dev_predictions.tsv").is_file()
    # The TFLite file and the SavedModel (served from a fresh process) agree.
    predictions = summary["predictions"]
    assert [p["saved_model"] for p in predictions][:2] == ["positive", "negative"]
    np.testing.assert_allclose([p["tflite_probabilities"] for p in predictions],
                               [p["saved_model_probabilities"] for p in predictions], atol=1e-3)
    assert summary["tflite_max_probability_diff"] < 1e-3
    # Sentence embeddings: the nearest dev sentence to a glowing review is a
    # positive one (cosine of normalized embeddings, in [-1, 1]).
    best_sentence, best_score = summary["nearest_neighbours"]["results"][0]
    assert 0.0 < best_score <= 1.0
    dev = dict(line.split("\t") for line in (
        ROOT / "tests" / "data" / "finetune" / "sentiment_dev.tsv").read_text().splitlines()[1:])
    assert dev[best_sentence] == "positive"


@pytest.mark.parametrize("flag, message", [
    ("--epochs=0", "quickstart: error: TrainConfig.epochs: must be >= 1, got 0."),
    ("--learning_rate=-1e-4", "quickstart: error: TrainConfig.learning_rate: must be > 0"),
])
def test_a_bad_training_flag_is_one_line_before_any_work(tmp_path, flag, message):
    out = tmp_path / "quickstart"
    result = subprocess.run([python_command(), str(ROOT / "tools" / "quickstart.py"), flag,
                             f"--output_dir={out}"], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("quickstart:")]
    assert len(errors) == 1 and errors[0].startswith(message), result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not out.exists()  # nothing converted or written
