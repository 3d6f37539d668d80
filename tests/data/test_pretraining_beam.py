"""The Apache Beam pipeline on DirectRunner, through the real tool
(`create_pretraining_data.py --runner=DirectRunner`): mixed shards whatever
the corpus order, the same instance statistics as the local writer, shards
that feed tools/pretrain.py, and one-line errors for bad input.

Skipped without `apache-beam` (`pip install -e ".[beam]"`).
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

pytest.importorskip("apache_beam")

from tfbert.data.pretraining import write_pretraining_data  # noqa: E402
from tfbert.text.masking import MaskedLMMasker  # noqa: E402
from tfbert.text.tokenizer import BertTokenizer  # noqa: E402

ROOT = pathlib.Path(__file__).parents[2]
DATA = ROOT / "tests" / "data" / "pretraining"
VOCAB = DATA / "vocab.txt"
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
SETTINGS = dict(max_seq_length=32, dupe_factor=2, num_shards=3, max_predictions_per_seq=6)


def tool(name, *flags, timeout=600):
    return subprocess.run([sys.executable, str(ROOT / "tools" / name), *flags], env=ENV,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def beam_output(two_sources, tmp_path_factory):
    out = tmp_path_factory.mktemp("beam")
    result = tool("create_pretraining_data.py", "--runner=DirectRunner",
                  f"--input_files={two_sources.path}", f"--vocab_file={VOCAB}",
                  f"--output_dir={out}", "--static_masking", "--eval_fraction=0.02",
                  *(f"--{k}={v}" for k, v in SETTINGS.items()))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "with Beam's DirectRunner" in result.stdout
    return out


def instance_stats(directory):
    """NSP share, length histogram, masked fraction of the records in `directory`."""
    labels, lengths, masked = [], [], 0
    for path in sorted(directory.glob("*.tfrecord")):
        for raw in tf.data.TFRecordDataset(str(path)):
            f = tf.train.Example.FromString(raw.numpy()).features.feature
            labels.append(f["next_sentence_labels"].int64_list.value[0])
            lengths.append(sum(f["input_mask"].int64_list.value))
            masked += sum(f["masked_lm_weights"].float_list.value)
    lengths = np.array(lengths)
    return {
        "instances": len(labels),
        "random_next": float(np.mean(labels)),
        "full": float(np.mean(lengths == SETTINGS["max_seq_length"])),
        "mean_length": float(lengths.mean()),
        "short": float(np.mean(lengths < 16)),
        "masked": masked / (lengths.sum() - 3 * len(lengths)),
    }


def test_beam_shards_are_mixed_and_match_the_local_writer(beam_output, two_sources, tmp_path):
    meta = json.loads((beam_output / "pretraining_data.json").read_text())
    assert meta["runner"] == "DirectRunner" and meta["static_masking"]
    assert sorted(meta["files"]) == sorted(p.name for p in beam_output.glob("*.tfrecord"))
    assert (beam_output / "eval" / "pretraining_data.json").is_file()
    assert not list(beam_output.glob(".tmp-*"))

    examples = two_sources.training_stream(str(beam_output / "*.tfrecord"))
    share, shares = two_sources.assert_mixed(examples)
    print(f"Beam: {len(examples)} examples, reference share {share:.3f}, windows of 1000: "
          f"{min(shares):.3f}..{max(shares):.3f}")

    tokenizer = BertTokenizer(vocab_file=str(VOCAB), lower_case=True)
    masker = MaskedLMMasker.from_vocab(tokenizer.vocab, max_predictions=6)
    write_pretraining_data(two_sources.path, str(tmp_path), tokenizer, masker=masker,
                           eval_fraction=0.02, log=lambda *_: None,
                           **{k: v for k, v in SETTINGS.items() if k != "max_predictions_per_seq"})
    beam, ours = instance_stats(beam_output), instance_stats(tmp_path)
    print("Beam ", beam, "\nlocal", ours)
    assert abs(beam["instances"] / ours["instances"] - 1) < 0.03
    assert abs(beam["random_next"] - 0.5) < 0.02 and abs(ours["random_next"] - 0.5) < 0.02
    assert abs(beam["mean_length"] - ours["mean_length"]) < 0.5
    assert abs(beam["full"] - ours["full"]) < 0.03
    assert abs(beam["short"] - ours["short"]) < 0.02
    assert abs(beam["masked"] - ours["masked"]) < 0.005


@pytest.mark.slow
def test_beam_shards_feed_pretrain(beam_output, tmp_path):
    model_dir = tmp_path / "run"
    result = tool("pretrain.py", f"--config={ROOT / 'configs' / 'pretrain_tiny.yaml'}",
                  f"--train_files={beam_output / '*.tfrecord'}", f"--vocab_file={VOCAB}",
                  f"--model_dir={model_dir}", "--num_train_steps=40", "--steps_per_epoch=20",
                  "--set", "dynamic_masking=false", "--set", "encoder_overrides.num_layers=1",
                  "--set", "verbose=2", "--batch_size=16", "--nojit_compile")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((model_dir / "summary.json").read_text())
    assert summary["step"] == 40 and summary["eval_files"].endswith("eval/*.tfrecord")
    assert summary["final_metrics"]["val_nsp_accuracy"] >= 0.0
    assert summary["final_metrics"]["mlm_loss"] < np.log(1931)


@pytest.mark.slow
def test_beam_bad_input_gives_one_line_errors(tmp_path):
    def error_of(*flags):
        result = tool("create_pretraining_data.py", "--runner=DirectRunner",
                      f"--output_dir={tmp_path / 'out'}", *flags, timeout=300)
        assert result.returncode == 1
        assert "Traceback" not in result.stderr, result.stderr[-3000:]
        return result.stderr.strip().splitlines()[-1]

    line = error_of(f"--input_files={tmp_path / 'nope*.txt'}", f"--vocab_file={VOCAB}")
    assert line.startswith("create_pretraining_data: error: No input file matches")
    assert "nope*.txt" in line

    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n   \n")
    line = error_of(f"--input_files={empty}", f"--vocab_file={VOCAB}")
    assert "gave no pretraining instances" in line and str(empty) in line

    single = tmp_path / "single.txt"
    single.write_text("One document.\nWith two sentences.\n")
    line = error_of(f"--input_files={single}", f"--vocab_file={VOCAB}")
    assert "at least 2 documents" in line

    bad_vocab = tmp_path / "vocab.txt"
    bad_vocab.write_text("\n".join(t for t in VOCAB.read_text().split("\n") if t != "[CLS]"))
    line = error_of(f"--input_files={DATA / 'corpus.txt'}", f"--vocab_file={bad_vocab}")
    assert str(bad_vocab) in line and "[CLS]" in line
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.tfrecord"))
