"""`SafetensorsReader`: one file or the shards of an index, BF16 decoded
exactly, and clear errors for missing, truncated and inconsistent files.
(The converter's round trips of transformers' own files are in
tests/convert/test_huggingface.py.)"""

import json
import struct

import numpy as np
import pytest
from safetensors.numpy import save_file

from tfbert.convert.safetensors_reader import SafetensorsReader


def test_reads_names_shapes_and_tensors(tmp_path):
    weights = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones(4, np.float16)}
    save_file(weights, str(tmp_path / "model.safetensors"))
    reader = SafetensorsReader(str(tmp_path))
    assert sorted(reader.names()) == ["a", "b"]
    assert reader.shape("a") == (2, 3)
    np.testing.assert_array_equal(reader.read("a"), weights["a"])
    assert reader.read("b").dtype == np.float16


def test_bfloat16_is_decoded_exactly(tmp_path):
    # bfloat16 is the top half of a float32: these values are exact in it.
    want = np.array([[1.0, -2.5, 0.15625], [2.0**100, -0.0, 7.0]], np.float32)
    data = (want.view(np.uint32) >> 16).astype("<u2").tobytes()
    header = json.dumps({"w": {"dtype": "BF16", "shape": [2, 3],
                               "data_offsets": [0, len(data)]}}).encode()
    header += b" " * (-len(header) % 8)
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + data)
    got = SafetensorsReader(str(tmp_path)).read("w")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_shards_follow_the_index_and_must_agree_with_it(tmp_path):
    save_file({"a": np.zeros(2, np.float32)}, str(tmp_path / "model-1.safetensors"))
    save_file({"b": np.ones(3, np.float32)}, str(tmp_path / "model-2.safetensors"))
    index = {"weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    reader = SafetensorsReader(str(tmp_path))
    assert sorted(reader.names()) == ["a", "b"]
    np.testing.assert_array_equal(reader.read("b"), np.ones(3, np.float32))
    index["weight_map"]["b"] = "model-1.safetensors"
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="weight_map disagrees with the shard files about"):
        SafetensorsReader(str(tmp_path))


def test_missing_and_truncated_files(tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="No model.safetensors.*safe_serialization=True"):
        SafetensorsReader(str(tmp_path))
    save_file({"a": np.zeros(64, np.float32)}, str(tmp_path / "model.safetensors"))
    path = tmp_path / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(ValueError, match="cannot read safetensors file"):
        SafetensorsReader(str(tmp_path))
