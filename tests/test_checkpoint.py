import json
import os

import numpy as np
import pytest

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
    out = str(tmp_path / "ckpt")
    checkpoint.save_checkpoint(out, tiny_encoder.config, tiny_encoder.get_named_weights(),
                               vocab_file, True)
    weights = os.path.join(out, "model.safetensors")
    data = open(weights, "rb").read()
    open(weights, "wb").write(data[: len(data) // 2])
    with pytest.raises(ValueError, match="model.safetensors: cannot read safetensors"):
        checkpoint.read_checkpoint(out)
    os.remove(os.path.join(out, "vocab.txt"))
    with pytest.raises(FileNotFoundError, match="has no vocab.txt"):
        checkpoint.read_checkpoint(out)
    with pytest.raises(FileNotFoundError, match="Vocabulary file not found"):
        checkpoint.save_checkpoint(str(tmp_path / "x"), tiny_encoder.config, {}, "nope.txt", True)
