"""`OpenVINOModel`: runs an OpenVINO IR that `tfbert.export.openvino` wrote,
strings in, the SavedModel's named outputs out.

    model = OpenVINOModel("saved_models/sentiment_ov/1")
    model({"text": ["A wonderful film."]})["label"]   # array(['positive'], dtype=object)

The directory holds `model.xml`, `model.bin` and `tfbert_openvino.json`
(precision, inputs, outputs, the size and SHA-256 of both files). Loading
checks the files against it, so a truncated or swapped `model.bin` is one
clear error, not a crash or silent garbage. `precision` is applied at compile
time as OpenVINO's inference precision hint (`fp32` -> f32: on CPUs with AMX
OpenVINO would otherwise run bf16 by default).
"""

import hashlib
import os

import numpy as np

from tfbert import config_loader

METADATA_FILE = "tfbert_openvino.json"
FORMAT = "tfbert-openvino-1"
# Compile-time inference precision per export precision (int8: the layers NNCF
# left in float run in f32).
PRECISION_HINTS = {"fp32": "f32", "bf16": "bf16", "int8": "f32"}
INSTALL_HINT = 'pip install -e ".[openvino]"'


def require_openvino():
    """Imports OpenVINO and openvino-tokenizers (the `openvino` extra); without
    them, an ImportError of one line saying how to install them."""
    try:
        import openvino  # noqa: F401
        import openvino_tokenizers  # noqa: F401  (registers the tokenizer ops)
    except ImportError as e:
        raise ImportError(f"OpenVINO export and serving need the openvino extra "
                          f"({INSTALL_HINT}): {e}") from None


class OpenVINOModel:
    """A tfbert OpenVINO export, compiled for the CPU.

    Args:
        path: the version directory (`.../<name>/<version>`).
        precision: override the export's precision hint (`fp32`, `bf16`).
        device: OpenVINO device name.

    Call with a dict `{input name: list of str (or UTF-8 bytes)}` (one 1-D
    batch per input, as the SavedModel's `serving_default`); returns `{output
    name: numpy array}`, strings as Python `str` in object arrays. Each batch
    is checked as the strings-in models check theirs
    (`tfbert.text.raw_texts.text_column`), before OpenVINO sees it; an
    empty batch gives empty outputs.
    """

    def __init__(self, path, precision=None, device="CPU"):
        require_openvino()
        self.path = config_loader.check_path(path, "OpenVINO export directory")
        self.metadata = read_metadata(self.path)
        self.precision = precision or self.metadata["precision"]
        if self.precision not in PRECISION_HINTS:
            raise ValueError(f"precision must be one of {sorted(PRECISION_HINTS)}, "
                             f"got {self.precision!r}.")
        self.input_names = list(self.metadata["inputs"])
        self.output_names = list(self.metadata["outputs"])
        import openvino as ov

        core = ov.Core()
        try:
            model = core.read_model(os.path.join(self.path, "model.xml"))
            self._compiled = core.compile_model(
                model, device, {"INFERENCE_PRECISION_HINT": PRECISION_HINTS[self.precision]})
        except RuntimeError as e:
            raise ValueError(f"{self.path}: OpenVINO cannot load the model on {device!r}: "
                             f"{_first_line(str(e))}") from None
        self._request = self._compiled.create_infer_request()
        # What tfbert.export.serving.predict calls on a loaded SavedModel, so
        # tools/predict.py answers the same REST bodies with the IR.
        self.signatures = {"serving_default": _ServingSignature(self)}

    def __call__(self, inputs):
        columns = self._check(inputs)
        batch = len(columns[0])
        if batch == 0:  # OpenVINO's string ops need a row: run one, keep none
            return {k: v[:0] for k, v in self({n: ["a"] for n in self.input_names}).items()}
        arrays = [np.array(list(c), dtype=np.str_) for c in columns]
        outputs = infer(self._request, arrays, batch)
        return {name: _plain(outputs[name]) for name in self.output_names}

    def _check(self, inputs):
        """The inputs' columns of str in `input_names` order, or one line."""
        from tfbert.text.raw_texts import text_column  # tfbert.text imports TensorFlow

        if not isinstance(inputs, dict):
            raise TypeError(f"OpenVINOModel takes a dict {{input name: list of strings}} "
                            f"with inputs {self.input_names}; got {type(inputs).__name__}.")
        missing = [n for n in self.input_names if n not in inputs]
        extra = sorted(set(inputs) - set(self.input_names))
        if missing or extra:
            raise ValueError(f"inputs must be {self.input_names}; missing {missing}, "
                             f"unexpected {extra}.")
        columns = [text_column(inputs[n], f"inputs[{n!r}]", allow_empty=True)
                   for n in self.input_names]
        sizes = {n: len(c) for n, c in zip(self.input_names, columns)}
        if len(set(sizes.values())) > 1:
            raise ValueError(f"inputs have different batch sizes {sizes}; give one string "
                             "per example in each.")
        return columns


class _ServingSignature:
    """`serving_default` as a SavedModel signature looks to
    `tfbert.export.serving.predict`: tf.string tensors in, tensors out."""

    def __init__(self, model):
        import tensorflow as tf

        self._model = model
        self.structured_input_signature = (
            (), {n: tf.TensorSpec([None], tf.string, name=n) for n in model.input_names})
        self.structured_outputs = dict.fromkeys(model.output_names)

    def __call__(self, **tensors):
        import tensorflow as tf

        # Invalid UTF-8 bytes are dropped, as tfbert's served tokenizer does.
        outputs = self._model({k: [t.decode("utf-8", "ignore") for t in v.numpy().tolist()]
                               for k, v in tensors.items()})
        return {k: tf.constant(v.tolist() if v.dtype == object else v,
                               tf.string if v.dtype == object else None)
                for k, v in outputs.items()}


def infer(request, arrays, batch):
    """Output arrays by name of one call of `request` on string `arrays`.

    openvino-tokenizers 2026.4 returns a single row when every text of a batch
    normalizes to nothing (e.g. only private-use characters), and fails on
    such a batch of pairs; such a batch is run again with one plain text
    appended, whose row is dropped."""
    try:
        outputs = _run(request, arrays)
    except RuntimeError:
        outputs = None
    if outputs is None or any(v.shape[:1] != (batch,) for v in outputs.values() if v.ndim):
        padded = [np.concatenate([a, np.array(["a"], a.dtype)]) for a in arrays]
        try:
            outputs = {k: v[:batch] for k, v in _run(request, padded).items()}
        except RuntimeError as e:
            raise ValueError(f"OpenVINO failed on a batch of {batch}: "
                             f"{_first_line(str(e))}") from None
    return outputs


def _run(request, arrays):
    result = request.infer(arrays)
    return {next(iter(port.get_names())): value for port, value in result.items()}


def _plain(value):
    if value.dtype.kind in "US":
        return np.array([v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                         for v in value.ravel()], dtype=object).reshape(value.shape)
    return value


def file_digest(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_metadata(path):
    """The export's `tfbert_openvino.json`, after checking that `model.xml`
    and `model.bin` are the files it describes; one-line errors otherwise."""
    meta_path = os.path.join(path, METADATA_FILE)
    if os.path.isfile(path):
        raise ValueError(f"{path} is a file, not an OpenVINO export directory.")
    if not os.path.isdir(path):
        raise FileNotFoundError(f"OpenVINO export directory not found: {path}")
    if not os.path.isfile(meta_path):
        raise ValueError(f"{path} is not a tfbert OpenVINO export (no {METADATA_FILE}; write "
                         "one with tools/export.py --format=openvino).")
    metadata = config_loader.read_json_object(meta_path, METADATA_FILE)
    files = metadata.get("files")
    if metadata.get("format") != FORMAT or not isinstance(files, dict) or not all(
            isinstance(info, dict) and {"bytes", "sha256"} <= set(info) for info in files.values()):
        raise ValueError(f"{meta_path} is not a {FORMAT} metadata file.")
    for name, info in files.items():
        file_path = os.path.join(path, name)
        if not os.path.isfile(file_path):
            raise ValueError(f"{path}: {name} is missing.")
        size = os.path.getsize(file_path)
        if size != info["bytes"]:
            raise ValueError(f"{file_path} has {size:,} bytes, the export wrote {info['bytes']:,}"
                             f" ({'truncated' if size < info['bytes'] else 'another file'}).")
        if file_digest(file_path) != info["sha256"]:
            raise ValueError(f"{file_path} is not the file this export wrote (SHA-256 differs: "
                             "a file from another model?).")
    return metadata


def _first_line(message):
    """The first line of an OpenVINO error that says what went wrong (its
    first lines only name the C++ source files it passed through)."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return next((line for line in lines if not line.startswith("Exception from ")),
                lines[0] if lines else message)
