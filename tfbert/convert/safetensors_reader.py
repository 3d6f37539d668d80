"""Reads the weights of a Hugging Face directory: `model.safetensors`, or the
shards of `model.safetensors.index.json`, with the safetensors NumPy API (no
torch); BF16 tensors are decoded here, since NumPy has no bfloat16."""

import json
import os

import numpy as np
from safetensors import safe_open

from tfbert.convert import common


class SafetensorsReader:
    """Shapes and tensors of `model.safetensors` (or its shards) by name,
    read lazily with the safetensors NumPy API; clear errors for a missing,
    truncated or corrupt file."""

    def __init__(self, src_dir):
        single = os.path.join(src_dir, "model.safetensors")
        index = os.path.join(src_dir, "model.safetensors.index.json")
        if os.path.isfile(single):
            files = [single]
            self.label = single
        elif os.path.isfile(index):
            weight_map = common.read_json_object(index).get("weight_map")
            if not isinstance(weight_map, dict):
                raise ValueError(f"{index}: no 'weight_map' object.")
            files = [os.path.join(src_dir, f) for f in sorted(set(weight_map.values()))]
            self.label = index
        else:
            hint = ""
            if os.path.isfile(os.path.join(src_dir, "pytorch_model.bin")):
                hint = (" It has pytorch_model.bin; tfbert reads safetensors only (no torch): "
                        "re-save it with save_pretrained(dir, safe_serialization=True).")
            raise FileNotFoundError(f"No model.safetensors in {src_dir}.{hint}")
        self._file_of = {}
        self._handles = {}
        for path in files:
            common.require_file(path, "safetensors shard")
            try:
                handle = safe_open(path, framework="numpy")
            except Exception as e:  # safetensors raises its own error type
                raise ValueError(f"{path}: cannot read safetensors file (truncated or "
                                 f"corrupt?): {e}") from None
            self._handles[path] = handle
            for name in handle.keys():
                if name in self._file_of:
                    raise ValueError(f"{path}: weight {name!r} is also in {self._file_of[name]}.")
                self._file_of[name] = path
        if os.path.isfile(single):
            return
        listed = {k: os.path.join(src_dir, v) for k, v in weight_map.items()}
        wrong = sorted(k for k in set(listed) | set(self._file_of)
                       if listed.get(k) != self._file_of.get(k))
        if wrong:
            raise ValueError(f"{index}: weight_map disagrees with the shard files about "
                             f"{common.first_items(wrong)}.")

    def names(self):
        return list(self._file_of)

    def shape(self, name):
        return tuple(self._handles[self._file_of[name]].get_slice(name).get_shape())

    def read(self, name):
        path = self._file_of[name]
        handle = self._handles[path]
        if handle.get_slice(name).get_dtype() == "BF16":
            return _read_bfloat16(path, name)  # NumPy has no bfloat16
        try:
            return handle.get_tensor(name)
        except Exception as e:
            dtype = handle.get_slice(name).get_dtype()
            raise ValueError(f"{path}: cannot read weight {name!r} (dtype {dtype}): {e}") from None


def _read_bfloat16(path, name):
    """A BF16 tensor as float32 (exact: bfloat16 is the top half of a float32),
    read from the safetensors layout: u64 header size, JSON header, data."""
    with open(path, "rb") as f:
        header_size = int(np.frombuffer(f.read(8), "<u8")[0])
        info = json.loads(f.read(header_size))[name]
        begin, end = info["data_offsets"]
        f.seek(8 + header_size + begin)
        raw = np.frombuffer(f.read(end - begin), "<u2")
    if raw.size != int(np.prod(info["shape"])):
        raise ValueError(f"{path}: weight {name!r} is truncated.")
    return (raw.astype(np.uint32) << 16).view(np.float32).reshape(info["shape"])
