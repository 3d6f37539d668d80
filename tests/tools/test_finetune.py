"""tools/finetune.py as users run it: a grid on the shipped CoNLL data with a
tiny random encoder, the exported model served in a fresh process; bad
configs and bad data exit with a clear message."""

import json
import os
import subprocess

import pytest
from fresh_python import python_command

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "finetune.py")


def run_tool(*args, timeout=600):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run([python_command(), TOOL, *args], capture_output=True, text=True,
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


@pytest.mark.slow
def test_no_yaml_needed_when_set_gives_the_task(tmp_path):
    """--set alone (no --config): the shipped sentiment data, a tiny random encoder."""
    proc = run_tool("--task=classification", f"--model_dir={tmp_path}",
                    "--set=task.train_file=tests/data/finetune/sentiment_train.tsv",
                    "--set=task.dev_file=tests/data/finetune/sentiment_dev.tsv",
                    "--set=task.text_column=sentence", "--set=task.seq_length=32",
                    "--set=preset=tiny", "--set=encoder.vocab_size=1931",
                    "--set=vocab_file=tests/data/pretraining/vocab.txt",
                    "--set=train.epochs=1", "--set=train.steps_per_epoch=3",
                    "--set=train.verbose=0", "--set=train.jit_compile=false")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["task"] == "classification" and os.path.isdir(summary["export_dir"])
    # Without the task's data the error is the task's own line, not absl's "--config".
    proc = run_tool("--task=classification", f"--model_dir={tmp_path / 'none'}")
    assert proc.returncode == 1 and "--config" not in proc.stderr
    assert "Traceback" not in proc.stderr
    # The last line (TensorFlow's start-up log lines come before it) is the task's error.
    assert proc.stderr.strip().splitlines()[-1].startswith("finetune: error: Set "
                                                           "--init_checkpoint"), proc.stderr[-500:]


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


SENTIMENT = ["--task=classification", "--config=configs/finetune_sentiment.yaml",
             "--set=train.steps_per_epoch=3", "--set=train.epochs=1", "--set=train.verbose=1",
             "--set=train.jit_compile=false", "--set=train.tensorboard=false"]
SMALL_ENCODER = ["--set=encoder.num_layers=1", "--set=encoder.hidden_size=64",
                 "--set=encoder.num_heads=2", "--set=encoder.intermediate_size=128"]


def test_random_init_by_config_bf16_summary_and_one_run_per_model_dir(
        tmp_path, uncased_vocab_file, run_python):
    # Random init of any architecture from --set encoder.*, no checkpoint;
    # mixed_bfloat16 trains and the export still returns float32.
    args = SENTIMENT + SMALL_ENCODER + [f"--set=vocab_file={uncased_vocab_file}",
                                        f"--model_dir={tmp_path / 'run'}",
                                        "--set=train.dtype_policy=mixed_bfloat16"]
    proc = run_tool(*args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary_block = proc.stdout.split("Fine-tuning summary:")[1]
    assert "train_examples   160" in summary_block
    assert "labels           negative: 80, positive: 80" in summary_block
    assert "truncated        0 of 160" in summary_block
    # 10% of 160 is too few to choose on: the whole file trains, the last epoch is kept.
    assert ("selected_on      none (10% of 160 examples is 16, fewer than 50: too few to "
            "choose on)" in summary_block)
    assert "learning_rate    5e-05 (config)" in summary_block
    assert "total_steps      3" in summary_block and "warmup_steps     0" in summary_block
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["recipe"]["dtype_policy"] == "mixed_bfloat16"
    assert results["recipe"]["epochs"] == 1
    assert results["selected_on"].startswith("none (10% of 160 examples is 16")
    # A validation file chooses, and results.json says so.
    proc = run_tool(*args, "--set=train.validation_file=tests/data/finetune/sentiment_dev.tsv",
                    f"--model_dir={tmp_path / 'validated'}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "validated" / "results.json").read_text())
    assert results["selected_on"] == "validation: tests/data/finetune/sentiment_dev.tsv"
    assert "validation_accuracy" in results["dev_scores"][0]
    out = run_python(
        "import json, tensorflow as tf\nfrom tfbert.export.task_model import load_task_model\n"
        f"m = load_task_model({results['export_dir']!r})\n"
        "o = m.signatures['serving_default'](text=tf.constant(['A fine film .']))\n"
        "print(json.dumps([o['probabilities'].dtype.name, o['logits'].shape.as_list()]))\n")
    assert json.loads(out.strip().splitlines()[-1]) == ["float32", [1, 2]]

    # Same model_dir, another config: refused with the change named, no traceback.
    proc = run_tool(*args, "--set=train.learning_rate=1e-3")
    assert proc.returncode == 1
    assert "holds a run with another config (train.learning_rate: 5e-05 -> 0.001)" in proc.stderr
    assert "Traceback" not in proc.stderr
    # --overwrite starts fresh.
    proc = run_tool(*args, "--set=train.learning_rate=1e-3", "--overwrite")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["recipe"]["learning_rate"] == 1e-3


@pytest.mark.parametrize("tool", ["finetune", "pretrain"])
def test_tpu_flag_reaches_the_config(tool, run_python):
    load = {"finetune": "finetune.load_config()[0]", "pretrain": "pretrain.config_from_flags()"}
    argv = {"finetune": ["finetune", "--task=classification",
                         "--config=configs/finetune_sentiment.yaml", "--model_dir=/tmp/x"],
            "pretrain": ["pretrain"]}
    out = run_python(
        f"import sys, os\nos.chdir({ROOT!r})\nsys.path.insert(0, 'tools')\nimport {tool}\n"
        f"{tool}.FLAGS({argv[tool] + ['--tpu=my-tpu', '--distribution_strategy=tpu']!r})\n"
        f"cfg = {load[tool]}\nprint(cfg.tpu, cfg.distribution_strategy)\n")
    assert out.strip().splitlines()[-1] == "my-tpu tpu"


def test_export_jit_compile_flag_reaches_the_config(run_python, tmp_path):
    """`--export_jit_compile` (or the YAML key) turns on the XLA export; it
    trains nothing differently, so a run dir claimed without it accepts it;
    a value that is not a boolean is one clear error."""
    argv = ["finetune", "--task=classification", "--config=configs/finetune_sentiment.yaml",
            f"--model_dir={tmp_path}"]
    out = run_python(
        f"import dataclasses, os, sys\nos.chdir({ROOT!r})\nsys.path.insert(0, 'tools')\n"
        "import finetune\nfrom tfbert.train.run_config import claim_model_dir\n"
        "def load(argv):\n"
        "    finetune.FLAGS.unparse_flags()\n"
        "    finetune.FLAGS(argv)\n"
        "    return finetune.load_config()[0]\n"
        f"argv = {argv!r}\n"
        "plain, xla = load(argv), load(argv + ['--export_jit_compile'])\n"
        f"claim_model_dir({str(tmp_path)!r}, dataclasses.asdict(plain))\n"
        f"claim_model_dir({str(tmp_path)!r}, dataclasses.asdict(xla))  # same run: not refused\n"
        "try:\n"
        "    load(argv + ['--set=export_jit_compile=maybe'])\n"
        "except ValueError as e:\n"
        "    print(e)\n"
        "print(plain.export_jit_compile, xla.export_jit_compile)\n")
    lines = out.strip().splitlines()
    assert lines[-1] == "False True"
    assert "export_jit_compile" in lines[-2] and "true or false" in lines[-2]


@pytest.mark.slow
def test_multi_label_with_lora_and_gradient_accumulation(tmp_path):
    """The three fine-tuning options through the tool's own flags, in one run:
    `--set task.multi_label=true`, `train.lora_rank`, `train.gradient_accumulation_steps`."""
    proc = run_tool("--task=classification", "--config=configs/finetune_topics_multi_label.yaml",
                    f"--model_dir={tmp_path}", "--set=preset=tiny",
                    "--set=vocab_file=tests/data/pretraining/vocab.txt",
                    "--set=task.multi_label=true", "--set=train.lora_rank=4",
                    "--set=train.gradient_accumulation_steps=2", "--set=train.epochs=1",
                    "--set=train.steps_per_epoch=4", "--set=train.verbose=1",
                    "--set=train.jit_compile=false", "--set=train.tensorboard=false")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "auto LoRA: 10x the full fine-tuning rate 0.001" in proc.stdout
    assert "8 (16 per update = 2 accumulated micro-batches)" in proc.stdout
    results = json.load(open(tmp_path / "results.json"))
    assert results["main_metric"] == "micro_f1"
    for key in ("micro_f1", "macro_f1", "subset_accuracy"):
        assert 0 <= results[key] <= 1
    assert set(results["per_label"]) == {"food", "sport", "weather"}
    assert set(results["thresholds"]) == {"food", "sport", "weather"}
    assert 0 < results["trainable_params"] < 20000  # adapters + head of the tiny model
    assert os.path.isfile(results["recipe"]["lora_adapters"])
    assert [os.path.basename(p) for p in results["prediction_files"]] == [
        "dev_predictions.tsv", "dev_per_label.tsv"]
    assert os.path.isfile(os.path.join(results["export_dir"], "saved_model.pb"))
