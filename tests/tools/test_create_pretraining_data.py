"""tools/create_pretraining_data.py and tools/pretrain.py flags, YAML and errors (subprocesses)."""

import json
import os
import pathlib
import subprocess
import warnings

from tfbert import config_loader
from fresh_python import python_command

ROOT = pathlib.Path(__file__).parents[2]
DATA = ROOT / "tests" / "data" / "pretraining"
VOCAB = DATA / "vocab.txt"
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


def run(name, *flags):
    return subprocess.run([python_command(), str(ROOT / "tools" / name), *flags],
                          env=ENV, capture_output=True, text=True, timeout=300)


def test_yaml_flags_and_static_whole_word_masking(tmp_path):
    docs = (DATA / "corpus.txt").read_text(encoding="utf-8").split("\n\n")[:30]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(docs), encoding="utf-8")
    config = tmp_path / "data.yaml"
    config.write_text(f"vocab_file: {VOCAB}\nseq_length: 128\nnum_shards: 3\n")
    out = tmp_path / "out"
    result = run("create_pretraining_data.py", f"--config={config}", f"--input_files={corpus}",
                 f"--output_dir={out}", "--seq_length=48", "--static_masking",
                 "--set", "masking_strategy=whole_word", "--set", "max_predictions_per_seq=7")
    assert result.returncode == 0, result.stderr[-2000:]
    meta = json.loads((out / "pretraining_data.json").read_text())
    assert meta["seq_length"] == 48  # the flag beats the YAML
    assert meta["static_masking"] and meta["max_predictions"] == 7
    assert sorted(p.name for p in out.glob("*.tfrecord")) == [
        f"pretrain-0000{i}-of-00003.tfrecord" for i in range(3)
    ]
    assert 0.1 < meta["masked"] / (meta["tokens"] - 3 * meta["instances"]) < 0.16


def test_bad_input_exits_with_a_clear_message(tmp_path):
    result = run("create_pretraining_data.py", f"--input_files={tmp_path / 'nope.txt'}",
                 f"--vocab_file={VOCAB}", f"--output_dir={tmp_path / 'o'}")
    assert result.returncode == 1
    assert "No input file matches" in result.stderr and "nope.txt" in result.stderr

    bad_vocab = tmp_path / "vocab.txt"
    bad_vocab.write_text("\n".join(t for t in VOCAB.read_text().split("\n") if t != "[MASK]"))
    result = run("create_pretraining_data.py", f"--input_files={DATA / 'corpus.txt'}",
                 f"--vocab_file={bad_vocab}", f"--output_dir={tmp_path / 'o'}", "--static_masking")
    assert result.returncode == 1
    assert "[MASK]" in result.stderr and str(bad_vocab) in result.stderr


def test_pretrain_rejects_bad_settings(tmp_path):
    result = run("pretrain.py", f"--model_dir={tmp_path}", "--train_files=x", "--vocab_file=v",
                 "--num_train_steps=150", "--steps_per_epoch=100")
    assert result.returncode == 1
    assert "must be a multiple of train.steps_per_epoch" in result.stderr
    result = run("pretrain.py", f"--model_dir={tmp_path}", f"--train_files={tmp_path}/none*",
                 f"--vocab_file={VOCAB}", "--set", "no_such_key=1")
    assert result.returncode == 1 and "no_such_key" in result.stderr
    result = run("pretrain.py", f"--model_dir={tmp_path}", f"--train_files={tmp_path}/none*",
                 f"--vocab_file={VOCAB}", "--num_train_steps=100")
    assert result.returncode == 1 and "No training file matches" in result.stderr


def test_max_seq_length_is_the_old_name_of_seq_length(tmp_path):
    """Flag and YAML: one line naming seq_length; the records say seq_length."""
    from tfbert.data.pretraining.data_config import PretrainingDataConfig

    docs = (DATA / "corpus.txt").read_text(encoding="utf-8").split("\n\n")[:20]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(docs), encoding="utf-8")
    out = tmp_path / "out"
    result = run("create_pretraining_data.py", f"--input_files={corpus}", f"--vocab_file={VOCAB}",
                 f"--output_dir={out}", "--max_seq_length=40")
    assert result.returncode == 0, result.stderr[-2000:]
    notes = [line for line in result.stderr.splitlines() if "deprecated" in line]
    assert len(notes) == 1 and notes[0].endswith(
        "FutureWarning: --set max_seq_length is deprecated: use seq_length."), notes
    meta = json.loads((out / "pretraining_data.json").read_text())
    assert meta["seq_length"] == 40 and "max_seq_length" not in meta

    config = tmp_path / "data.yaml"
    config.write_text("max_seq_length: 64\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cfg = config_loader.load(PretrainingDataConfig, str(config))
    assert cfg == PretrainingDataConfig(seq_length=64)
    assert [str(w.message) for w in caught] == [
        f"{config}: max_seq_length is deprecated: use seq_length."]


def test_pretrain_takes_the_flat_layout_and_its_flags(tmp_path):
    """An old flat YAML: one rename line per old key, then the run's own
    error (no data here); the flags set their sections' fields warn-free."""
    old = tmp_path / "old.yaml"
    old.write_text("batch_size: 16\nencoder_overrides:\n  num_layers: 1\nwarmup_steps: 5\n")
    result = run("pretrain.py", f"--config={old}", f"--model_dir={tmp_path / 'run'}",
                 f"--train_files={tmp_path}/none*", f"--vocab_file={VOCAB}",
                 "--num_train_steps=100", "--learning_rate=1e-3", "--seed=3")
    assert result.returncode == 1 and "No training file matches" in result.stderr
    notes = [line.split("FutureWarning: ")[1] for line in result.stderr.splitlines()
             if "FutureWarning" in line]
    assert notes == [f"{old}: batch_size is deprecated: use train.batch_size.",
                     f"{old}: encoder_overrides is deprecated: use encoder.",
                     f"{old}: warmup_steps is deprecated: use pretrain.warmup_steps."]
    stored = json.loads((tmp_path / "run" / "pretrain_config.json").read_text())
    assert (stored["train"]["batch_size"], stored["train"]["learning_rate"],
            stored["train"]["seed"], stored["pretrain"]["num_train_steps"],
            stored["pretrain"]["warmup_steps"], stored["encoder"]) == (
        16, 1e-3, 3, 100, 5, {"num_layers": 1})
