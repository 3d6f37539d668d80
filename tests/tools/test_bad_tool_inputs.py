"""Bad input to the tools, as real subprocesses: each exits non-zero with one
`<tool>: error: ...` line naming the problem, and never prints a traceback.

Slow: every case starts a Python process that imports TensorFlow.
"""

import os
import pathlib
import subprocess

import pytest
from fresh_python import python_command

ROOT = pathlib.Path(__file__).parents[2]
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


def case(tmp, name):
    """(tool, flags, pattern of the error line) for the case `name`."""
    bad_yaml = tmp / "bad.yaml"
    bad_yaml.write_text("train:\n  batch_size: [32\n", encoding="utf-8")
    no_dev = tmp / "no_dev.yaml"
    no_dev.write_text(f"task:\n  train_file: {ROOT / 'tests/data/finetune/sentiment_train.tsv'}\n"
                      "  text_column: sentence\n  label_column: label\n", encoding="utf-8")
    body = tmp / "body.json"
    body.write_text("{not json", encoding="utf-8")
    finetune = ["--task=classification", f"--model_dir={tmp / 'ft'}",
                f"--config={ROOT / 'configs' / 'finetune_sentiment.yaml'}", "--set", "preset=tiny",
                "--set", f"vocab_file={ROOT / 'tests' / 'data' / 'pretraining' / 'vocab.txt'}"]
    return {
        "finetune: batch_size lots": (
            "finetune.py", finetune + ["--set", "train.batch_size=lots"],
            r"train\.batch_size=lots: expected an integer"),
        "finetune: YAML syntax": (
            "finetune.py", finetune[:2] + [f"--config={bad_yaml}"], r"bad\.yaml:\d+:\d+"),
        "finetune: missing train file": (
            "finetune.py", finetune + ["--set", f"task.train_file={tmp / 'nope.tsv'}"],
            r"nope\.tsv"),
        "finetune: no dev file": (
            "finetune.py", finetune[:2] + [f"--config={no_dev}"] + finetune[3:],
            r"classification: task\.dev_file is not set; each epoch is scored on it"),
        "finetune: gradient_accumulation_steps not dividing": (
            "finetune.py", finetune + ["--set", "train.gradient_accumulation_steps=3"],
            r"gradient_accumulation_steps: 3 does not divide batch_size 16"),
        "pretrain: gradient_accumulation_steps not dividing": (
            "pretrain.py", [f"--model_dir={tmp / 'pt3'}", "--train_files=x", "--vocab_file=v",
                            "--batch_size=8", "--set", "train.gradient_accumulation_steps=3"],
            r"gradient_accumulation_steps: 3 does not divide batch_size 8"),
        "pretrain: no train files": (
            "pretrain.py", [f"--model_dir={tmp / 'pt'}", "--vocab_file=v.txt"], r"--train_files"),
        "pretrain: steps not a multiple": (
            "pretrain.py", [f"--model_dir={tmp / 'pt2'}", "--train_files=x", "--vocab_file=v",
                            "--num_train_steps=10", "--steps_per_epoch=3"], r"multiple"),
        "pretrain: budget not positive": (
            "pretrain.py", [f"--model_dir={tmp / 'pt4'}", "--train_files=x", "--vocab_file=v",
                            "--budget_minutes=0"], r"budget_minutes=0(\.0)?: must be > 0"),
        "pretrain: budget infinite": (
            "pretrain.py", [f"--model_dir={tmp / 'pt6'}", "--train_files=x", "--vocab_file=v",
                            "--budget_minutes=inf"],
            r"budget_minutes=\.inf: expected a finite number, got inf"),
        "pretrain: budget NaN": (
            "pretrain.py", [f"--model_dir={tmp / 'pt7'}", "--train_files=x", "--vocab_file=v",
                            "--budget_minutes=nan"], r"budget_minutes=\.nan: expected a finite"),
        "pretrain: budget and num_train_steps": (
            "pretrain.py", [f"--model_dir={tmp / 'pt5'}", "--train_files=x", "--vocab_file=v",
                            "--budget_minutes=5", "--num_train_steps=200"],
            r"budget_minutes \(5\) and pretrain\.num_train_steps \(200\) are both set"),
        "create_pretraining_data: missing corpus": (
            "create_pretraining_data.py",
            [f"--input_files={tmp / 'none*.txt'}", f"--output_dir={tmp / 'out'}",
             f"--vocab_file={ROOT / 'tests' / 'data' / 'pretraining' / 'vocab.txt'}"],
            r"none\*\.txt"),
        "export: not a checkpoint": (
            "export.py", [f"--checkpoint_dir={tmp / 'missing'}", f"--output_dir={tmp / 'e'}"],
            r"missing"),
        "export: tflite_padding unknown": (
            "export.py", [f"--checkpoint_dir={tmp}", f"--output_dir={tmp / 'e'}", "--format=tflite",
                          "--text_input", "--set", "tflite_padding=max"],
            r"--set tflite_padding=max: must be one of \['longest', 'max_length'\], got 'max'\.$"),
        "export: --precision outside openvino": (  # issue 66: it was silently not applied
            "export.py", [f"--checkpoint_dir={tmp}", f"--output_dir={tmp / 'hf'}",
                          "--format=huggingface", "--precision=int8"],
            r"--precision=int8 applies to --format=openvino only"),
        "convert: missing input": (
            "convert_checkpoint.py", ["--source=huggingface", f"--input_dir={tmp / 'hf'}",
                                      f"--output_dir={tmp / 'c'}"], r"hf"),
        "predict: body not JSON": (
            "predict.py", [f"--saved_model_dir={tmp / 'nomodel'}", f"--request={body}"],
            r"nomodel|JSON"),
        "benchmark: --json without --peers": (
            "benchmark.py", [f"--json={tmp / 'p.json'}"], r"--json .*add --peers"),
        "benchmark: --json into a missing directory": (
            "benchmark.py", ["--peers", f"--json={tmp / 'nodir' / 'p.json'}"],
            r"nodir.*does not exist"),
        "benchmark: unknown benchmark": (
            "benchmark.py", ["--what=encoder,nope"], r"unknown benchmark.*nope"),
        "visualize: no run": (
            "visualize.py", ["--kind=curves", f"--model_dir={tmp / 'norun'}",
                             f"--output={tmp / 'c.png'}"], r"norun"),
    }[name]


NAMES = ["finetune: batch_size lots", "finetune: YAML syntax", "finetune: missing train file",
         "finetune: no dev file",
         "finetune: gradient_accumulation_steps not dividing",
         "pretrain: gradient_accumulation_steps not dividing",
         "pretrain: no train files", "pretrain: steps not a multiple",
         "pretrain: budget not positive", "pretrain: budget infinite", "pretrain: budget NaN",
         "pretrain: budget and num_train_steps",
         "create_pretraining_data: missing corpus", "export: not a checkpoint",
         "export: tflite_padding unknown", "export: --precision outside openvino",
         "convert: missing input", "predict: body not JSON", "benchmark: --json without --peers",
         "benchmark: --json into a missing directory", "benchmark: unknown benchmark",
         "visualize: no run"]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_tool_bad_input_is_one_clear_line(name, tmp_path):
    import re

    tool, flags, pattern = case(tmp_path, name)
    result = subprocess.run([python_command(), str(ROOT / "tools" / tool), *flags], env=ENV,
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode != 0, result.stdout[-2000:]
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if re.match(r"^\w+: error: ", line)]
    assert len(errors) == 1, result.stderr[-3000:]
    assert re.search(pattern, errors[0]), errors[0]


@pytest.mark.slow
def test_feature_extraction_with_only_seq_length_exports(tmp_path):
    """Issue 52: `--task=feature_extraction` with a config that gives only
    `task.seq_length` (nothing trains: it exports the features model) failed with
    `can only concatenate str (not "NoneType") to str`."""
    import json

    from tfbert import BertConfig, BertEncoder, BertPreprocessor, SentenceEncoder

    pre = BertPreprocessor(vocab_file=str(ROOT / "tests" / "data" / "pretraining" / "vocab.txt"),
                           seq_length=16)
    ckpt = SentenceEncoder(BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931,
                                                              num_layers=4)),
                           preprocessor=pre).save_pretrained(str(tmp_path / "ckpt"))
    (tmp_path / "fe.yaml").write_text("task:\n  seq_length: 32\n")
    result = subprocess.run([python_command(), str(ROOT / "tools" / "finetune.py"),
                             "--task=feature_extraction", f"--config={tmp_path / 'fe.yaml'}",
                             f"--init_checkpoint={ckpt}", f"--model_dir={tmp_path / 'run'}"],
                            env=ENV, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["task"] == "feature_extraction" and summary["main_metric"] is None
    assert (pathlib.Path(summary["export_dir"]) / "saved_model.pb").is_file()

