"""TFLite export: the encoder alone (TFLite builtin ops only)."""

import os
import tempfile

import keras
import tensorflow as tf

from tfbert.encoder import INPUT_NAMES

QUANTIZATIONS = (None, "dynamic_range", "float16")


def export_encoder_tflite(encoder, output_path, seq_length=128, quantization=None):
    """Converts `encoder` to a `.tflite` file with int32 `[batch, seq_length]`
    inputs and `sequence_output` / `pooled_output`; returns `output_path`.

    `quantization`: None (float32), "dynamic_range" (int8 weights) or
    "float16" (half-precision weights).

    The conversion goes through a SavedModel written by Keras' ExportArchive:
    converting concrete functions directly leaves the weights uninitialised
    (NaN outputs) in this TF version. The sequence length is static so no
    run-time length check (an Assert, not a TFLite builtin) enters the graph.

    Example:
    >>> import tempfile, tfbert
    >>> enc = tfbert.BertEncoder(tfbert.BertConfig.from_preset("tiny", vocab_size=100))
    >>> path = export_encoder_tflite(enc, tempfile.mkdtemp() + "/enc.tflite", seq_length=16)
    >>> os.path.getsize(path) > 0
    True
    """
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization must be one of {QUANTIZATIONS}, got {quantization!r}.")
    if not 2 <= seq_length <= encoder.config.max_position_embeddings:
        raise ValueError(
            f"seq_length must be in [2, {encoder.config.max_position_embeddings}], "
            f"got {seq_length}."
        )
    spec = {name: tf.TensorSpec([None, seq_length], tf.int32, name=name) for name in INPUT_NAMES}

    def serve(inputs):
        out = encoder(dict(inputs), training=False)
        return {"sequence_output": out["sequence_output"], "pooled_output": out["pooled_output"]}

    with tempfile.TemporaryDirectory() as saved_model_dir:
        archive = keras.export.ExportArchive()
        archive.track(encoder)
        archive.add_endpoint("serve", serve, input_signature=[spec])
        archive.write_out(saved_model_dir, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(
            saved_model_dir, signature_keys=["serve"]
        )
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        if quantization is not None:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantization == "float16":
            converter.target_spec.supported_types = [tf.float16]
        flatbuffer = converter.convert()
    write_file_atomically(output_path, flatbuffer)
    return output_path


def write_file_atomically(path, data):
    """Writes bytes to a temporary sibling, then renames it onto `path`."""
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.tmp-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
