import json
import os

import numpy as np
import pytest
import safetensors.numpy

from tfbert import BertConfig, BertEncoder, checkpoint


@pytest.fixture()
def vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                              + [f"w{i}" for i in range(95)]) + "\n")
    return str(path)


@pytest.fixture()
def tiny_encoder():
    return BertEncoder(BertConfig.from_preset("tiny", vocab_size=100))


def test_save_and_load_round_trip(tmp_path, vocab_file, tiny_encoder):
    out = tmp_path / "ckpt"
    heads = {"nsp": {"kernel": np.ones((128, 2), "float32"), "bias": np.zeros(2, "float32")}}
    checkpoint.save_checkpoint(str(out), tiny_encoder.config, tiny_encoder.get_named_weights(),
                               vocab_file, lower_case=False, head_weights=heads, source="test")
    assert sorted(os.listdir(out)) == ["config.json", "model.safetensors", "vocab.txt"]
    # No temporary directories are left behind.
    assert sorted(os.listdir(tmp_path)) == ["ckpt", "vocab.txt"]
    ckpt = checkpoint.read_checkpoint(str(out))
    assert ckpt.config == tiny_encoder.config and ckpt.lower_case is False
    assert ckpt.source == "test"
    np.testing.assert_array_equal(ckpt.prefixed_weights("nsp")["kernel"], heads["nsp"]["kernel"])
    loaded = BertEncoder.from_pretrained(str(out))
    for name, value in tiny_encoder.get_named_weights().items():
        np.testing.assert_array_equal(loaded.get_named_weights()[name], value)


def test_overwrite_replaces_whole_directory(tmp_path, vocab_file, tiny_encoder):
    out = str(tmp_path / "ckpt")
    weights = tiny_encoder.get_named_weights()
    checkpoint.save_checkpoint(out, tiny_encoder.config, weights, vocab_file, True)
    open(os.path.join(out, "stale.txt"), "w").close()
    checkpoint.save_checkpoint(out, tiny_encoder.config, weights, vocab_file, True)
    assert "stale.txt" not in os.listdir(out)


def test_mismatched_config_names_the_weight(tmp_path, vocab_file, tiny_encoder):
    out = str(tmp_path / "ckpt")
    checkpoint.save_checkpoint(out, tiny_encoder.config, tiny_encoder.get_named_weights(),
                               vocab_file, True)
    meta = json.load(open(os.path.join(out, "config.json")))
    meta["encoder"]["intermediate_size"] = 256
    json.dump(meta, open(os.path.join(out, "config.json"), "w"))
    with pytest.raises(ValueError, match=r"intermediate_dense/kernel: shape \(128, 512\) in "
                                         r".*model\.safetensors, encoder expects \(128, 256\)"):
        BertEncoder.from_pretrained(out)


def test_missing_and_extra_weights(tiny_encoder):
    weights = tiny_encoder.get_named_weights()
    weights.pop("pooler/bias")
    weights["pooler/scale"] = np.ones(3)
    with pytest.raises(ValueError, match=r"missing weights \['pooler/bias'\].*unexpected "
                                         r"weights \['pooler/scale'\]"):
        tiny_encoder.set_named_weights(weights)


def test_broken_directories(tmp_path, vocab_file, tiny_encoder):
    with pytest.raises(FileNotFoundError, match="directory not found"):
        checkpoint.read_checkpoint(str(tmp_path / "none"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="config.json is missing"):
        checkpoint.read_checkpoint(str(tmp_path / "empty"))
    (tmp_path / "afile").write_text("x")  # a file given as the directory
    with pytest.raises(ValueError, match="afile is a file, not a tfbert checkpoint directory"):
        checkpoint.read_checkpoint(str(tmp_path / "afile"))
    with pytest.raises(TypeError, match=r"checkpoint directory must be a path \(a string\)"):
        checkpoint.read_checkpoint(None)
    (tmp_path / "empty" / "config.json").write_bytes(b'{"format": "\xff')  # cut, not UTF-8
    with pytest.raises(ValueError, match=r"config\.json: not UTF-8 text"):
        checkpoint.read_checkpoint(str(tmp_path / "empty"))
    out = str(tmp_path / "ckpt")
    checkpoint.save_checkpoint(out, tiny_encoder.config, tiny_encoder.get_named_weights(),
                               vocab_file, True)
    weights = os.path.join(out, "model.safetensors")
    data = open(weights, "rb").read()
    open(weights, "wb").write(data[: len(data) // 2])
    with pytest.raises(ValueError, match="model.safetensors: cannot read safetensors"):
        checkpoint.read_checkpoint(out)
    safetensors.numpy.save_file({"mlm/bias": np.zeros(3, np.float32)}, weights)
    with pytest.raises(ValueError, match=r"model\.safetensors: no encoder weights"):
        checkpoint.read_checkpoint(out)
    config_path = os.path.join(out, "config.json")
    meta = json.load(open(config_path))
    json.dump({**meta, "encoder": None}, open(config_path, "w"))
    with pytest.raises(ValueError, match=r"config\.json: no 'encoder' section"):
        checkpoint.read_checkpoint(out)
    json.dump(meta, open(config_path, "w"))
    os.remove(os.path.join(out, "vocab.txt"))
    with pytest.raises(FileNotFoundError, match="has no vocab.txt"):
        checkpoint.read_checkpoint(out)
    with pytest.raises(FileNotFoundError, match="Vocabulary file not found"):
        checkpoint.save_checkpoint(str(tmp_path / "x"), tiny_encoder.config, {}, "nope.txt", True)


def test_settings_sections_round_trip_and_read_old_key_names(tmp_path, vocab_file, tiny_encoder):
    """The optional sections are their dataclasses on both sides; a dict is
    checked on the way in, and `max_seq_length` (the key's name in checkpoints
    written before `seq_length`) still reads."""
    out = str(tmp_path / "ckpt")
    checkpoint.save_checkpoint(
        out, tiny_encoder.config, tiny_encoder.get_named_weights(), vocab_file, True,
        sentence=checkpoint.SentenceSettings(pooling="max", seq_length=64),
        cross_encoder={"seq_length": 32, "pooling": "mean"},
        text_classifier=checkpoint.TextClassifierSettings(label_list=["neg", "pos"]))
    ckpt = checkpoint.read_checkpoint(out)
    assert ckpt.sentence == checkpoint.SentenceSettings(pooling="max", seq_length=64)
    assert ckpt.cross_encoder == checkpoint.CrossEncoderSettings(seq_length=32, pooling="mean")
    assert ckpt.text_classifier.label_list == ["neg", "pos"]
    config_path = os.path.join(out, "config.json")
    meta = json.loads(open(config_path).read())
    meta["sentence"]["max_seq_length"] = meta["sentence"].pop("seq_length")
    with open(config_path, "w") as f:
        json.dump(meta, f)
    assert checkpoint.read_checkpoint(out).sentence.seq_length == 64
    # A bad value on the way in is one line naming the section and the key.
    with pytest.raises(ValueError, match=r"^save_checkpoint cross_encoder: pooling: must be one "
                                         r"of \['cls', 'mean', 'max'\], got 'avg'\.$"):
        checkpoint.save_checkpoint(out, tiny_encoder.config, tiny_encoder.get_named_weights(),
                                   vocab_file, True, cross_encoder={"pooling": "avg"})
