"""TFLite export: the encoder alone (TFLite builtin ops only), and models
that take strings (builtins plus the two tf-text tokenizer custom ops).

TFLite has no string ops besides tf-text's tokenizer kernels, so the
strings-in path tokenizes with tf-text's `FastBertTokenizer`
(`FastBertNormalize` + `FastWordpieceTokenizeWithOffsets`) instead of
tfbert's reference-exact normalizer (which needs core string ops). Its ids
equal the reference tokenizer on ordinary text and differ on some non-ASCII
text; `tests/export/test_tflite_text.py` measures the agreement on the parity
corpus (65%; 99.7% of documentation lines). `tokenizer="exact"` puts tfbert's
reference normalization table into the same `FastBertNormalize` kernel
(`tflite_normalizer.py`): 99.9% of the corpus, 100% of documentation lines,
at the same latency. Packing is tfbert's dense core-op packer in both paths;
by default each batch is then cut to its longest text, which LiteRT's XNNPACK
delegate runs with dynamic shapes (all-MiniLM-L6-v2, a 16-word request: 6.8
ms instead of 17.8 in fp32; docs/cpu_speed.md). Load with
`ai_edge_litert.interpreter.InterpreterWithCustomOps(
custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS)`.
A byte-level BPE preprocessor (a converted RoBERTa) has no TFLite tokenizer:
strings-in TFLite refuses it in one line (`BPE_REFUSAL`); its ids-in encoder
converts as any other.
"""

import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

from tfbert.atomic import write_bytes
from tfbert.encoder import INPUT_NAMES
from tfbert.export.disk_space import explain_full_disk
from tfbert.text.packer import pack_inputs, trim_to_longest
from tfbert.text.windows import pool_windows, window_spans, window_values

QUANTIZATIONS = (None, "dynamic_range", "float16", "full_integer")
# "longest": each batch is cut to its longest text (dynamic shapes, which
# LiteRT's XNNPACK delegate reshapes for); "max_length": every batch is
# padded to the preprocessor's seq_length (static shapes, for delegates that
# need them, e.g. GPU or NNAPI).
PADDINGS = ("longest", "max_length")
# How many representative batches calibrate the activation ranges.
CALIBRATION_BATCHES = 100


def export_encoder_tflite(encoder, output_path, seq_length=128, quantization=None,
                          representative_data=None):
    """Converts `encoder` to a `.tflite` file with int32 `[batch, seq_length]`
    inputs and `sequence_output` / `pooled_output`; returns `output_path`.

    `quantization`: None (float32), "dynamic_range" (int8 weights),
    "float16" (half-precision weights) or "full_integer" (int8 weights and
    activations, integer-only builtins; needs `representative_data`, see
    `export_model_tflite`).

    The sequence length is static, so no run-time length check (an Assert,
    not a TFLite builtin) enters the graph.

    Example:
    >>> import tempfile, tfbert
    >>> enc = tfbert.BertEncoder(tfbert.BertConfig.from_preset("tiny", vocab_size=100))
    >>> path = export_encoder_tflite(enc, tempfile.mkdtemp() + "/enc.tflite", seq_length=16)
    >>> os.path.getsize(path) > 0
    True
    """
    return export_model_tflite(encoder, output_path, seq_length, quantization,
                               representative_data, config=encoder.config,
                               output_names=("sequence_output", "pooled_output"))


def export_model_tflite(model, output_path, seq_length=128, quantization=None,
                        representative_data=None, config=None, output_names=None):
    """Converts a model that takes the three int32 encoder inputs (an
    encoder or a task model such as `BertClassifier`) to a `.tflite` file
    with one signature `serve`; a single-tensor output is named `logits`.

    `representative_data` ("full_integer" only): an iterable of input dicts
    (int32 `[1, seq_length]` arrays), e.g. `representative_inputs(...)` of
    training texts; the converter runs them to calibrate activation ranges.
    """
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization must be one of {QUANTIZATIONS}, got {quantization!r}.")
    config = config or model.encoder.config
    if not 2 <= seq_length <= config.max_position_embeddings:
        raise ValueError(
            f"seq_length must be in [2, {config.max_position_embeddings}], got {seq_length}."
        )
    if quantization == "full_integer":
        representative_data = _calibration_batches(representative_data, seq_length)
    spec = {name: tf.TensorSpec([None, seq_length], tf.int32, name=name) for name in INPUT_NAMES}

    def serve(inputs):
        out = model(dict(inputs), training=False)
        if not isinstance(out, dict):
            return {"logits": out}
        names = output_names or [k for k, v in out.items() if tf.is_tensor(v)]
        return {name: out[name] for name in names}

    flatbuffer = _convert([model], serve, [spec], quantization, custom_ops=False,
                          representative_data=representative_data)
    write_file_atomically(output_path, flatbuffer)
    return output_path


def representative_inputs(preprocessor, texts, source="representative data"):
    """Encoder input dicts (one text each, `[1, seq_length]`) for full-integer
    calibration, from raw strings (e.g. the training file's texts). No text
    at all is an error naming `source`."""
    texts = [t for t in texts if t and t.strip()][:CALIBRATION_BATCHES]
    if not texts:
        raise ValueError(f"{source}: no text to calibrate full-integer quantization with; "
                         "give a file with training sentences.")
    packed = preprocessor(tf.constant(texts))
    return [{k: packed[k][i:i + 1].numpy() for k in INPUT_NAMES} for i in range(len(texts))]


def read_representative_texts(path, text_column="sentence"):
    """Texts of a representative data file: `.txt` one text per line, else a
    TSV/CSV/JSONL read by `tfbert.data.readers` (`text_column`). An empty or
    missing file is a one-line error naming it."""
    from tfbert.data import readers

    if not os.path.isfile(path):
        raise FileNotFoundError(f"Representative data file not found: {path}")
    if path.endswith(".txt"):
        with open(path, encoding="utf-8") as f:
            texts = [line.strip() for line in f if line.strip()]
    else:
        texts = list(readers.read_labeled_text(path, text_column).text)
    if not texts:
        raise ValueError(f"{path}: the representative data file holds no text; full-integer "
                         "quantization needs sentences like the training data to calibrate.")
    return texts


def _calibration_batches(data, seq_length):
    if data is None:
        raise ValueError("quantization='full_integer' needs representative_data (input dicts "
                         "from training texts: tfbert.export.tflite.representative_inputs).")
    batches = list(data)[:CALIBRATION_BATCHES]
    if not batches:
        raise ValueError("representative_data is empty; full-integer quantization needs "
                         "examples to calibrate activation ranges.")
    for batch in batches:
        shapes = {k: tuple(np.shape(batch.get(k))) for k in INPUT_NAMES}
        if any(shape[-1:] != (seq_length,) or len(shape) != 2 for shape in shapes.values()):
            raise ValueError(f"representative_data: every input must be [batch, {seq_length}] "
                             f"int32; got shapes {shapes}.")
    return batches


TOKENIZERS = ("fast", "exact")
# Byte-level BPE (RoBERTa) is written with core string ops and lookup tables;
# converted with custom ops allowed, the first op LiteRT cannot prepare is
# HashTableV2, and StaticRegexReplace, StringSplitV2, StringJoin follow (no
# TFLite builtins, no tf-text kernel: tf-text has no byte-level BPE kernel).
BPE_REFUSAL = ("TFLite cannot tokenize byte-level BPE (RoBERTa): LiteRT has no kernel for "
               "HashTableV2 (nor StaticRegexReplace, StringSplitV2, StringJoin) and tf-text "
               "ships no byte-level BPE kernel; export the ids-in model (no --text_input) and "
               "tokenize outside, or use the SavedModel export.")


class ExactTokenizer:
    """tf-text kernels with tfbert's reference normalization table: a
    `FastBertNormalizer` whose model is built from `char_table.py`
    (`tflite_normalizer.py`), then end-to-end `FastWordpieceTokenizer`
    (its whitespace/punctuation split is the reference's). Measured parity on
    the adversarial corpus: 99.9% (tests/export/test_tflite_text.py)."""

    def __init__(self, preprocessor):
        import tensorflow_text as tf_text

        from tfbert.export.tflite_normalizer import normalizer_model

        self._normalizer = tf_text.FastBertNormalizer(
            model_buffer=normalizer_model(preprocessor.lower_case))
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=list(preprocessor.vocab.tokens),
            suffix_indicator="##",
            max_bytes_per_word=100,  # the reference's 100 characters, in bytes
            token_out_type=tf.int32,
            unknown_token="[UNK]",
        )

    def tokenize(self, text):
        return self._wordpiece.tokenize(self._normalizer.normalize(text))


def tflite_tokenizer(preprocessor, kind="fast"):
    """The tokenizer a TFLite graph can hold, with the preprocessor's vocab
    and casing: "fast" is tf-text's `FastBertTokenizer` (ICU normalization,
    65% parity on the adversarial corpus, 99.7% on documentation lines),
    "exact" is `ExactTokenizer` (99.9% / 100%, a 0.05-0.3 MB larger file)."""
    import tensorflow_text as tf_text

    if kind not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {TOKENIZERS}, got {kind!r}.")
    if preprocessor.tokenizer_kind != "wordpiece":
        raise ValueError(BPE_REFUSAL)
    if kind == "exact":
        return ExactTokenizer(preprocessor)
    return tf_text.FastBertTokenizer(
        vocab=list(preprocessor.vocab.tokens),
        suffix_indicator="##",
        max_bytes_per_word=100,  # the reference's max_input_chars_per_word
        token_out_type=tf.int32,
        unknown_token="[UNK]",
        lower_case_nfd_strip_accents=preprocessor.lower_case,
    )


def export_text_tflite(preprocessor, model, output_path, output_names=None,
                       quantization=None, tokenizer="fast", padding="longest", windows=None):
    """Converts strings -> `preprocessor` packing -> `model` to a `.tflite`
    file with one signature `serve(text)` (tf.string `[batch]`); returns
    `output_path`.

    `model` takes the three encoder inputs (a `BertEncoder` or a task model)
    and returns a dict, or one tensor (named `logits`); `output_names` picks
    the outputs (default: all tensors). `input_word_ids` is always returned too, so callers can check
    what the TFLite tokenizer produced. `tokenizer`: "fast" (tf-text's
    `FastBertTokenizer`) or "exact" (tfbert's reference normalization table
    in tf-text's normalizer kernel; see `tflite_tokenizer`). `padding`:
    "longest" (each batch cut to its longest text, up to `seq_length`: a
    16-word request costs 32 positions, not 128) or "max_length" (every batch
    `[batch, seq_length]`: static shapes). Per-position outputs (and
    `input_word_ids`) are as wide as the batch was padded; outputs at the
    positions both keep are the same.

    `windows`: read long texts whole, as `long_text="windows"` does in the
    SavedModel (`tfbert.text.windows`: the same graph ops, which convert to
    TFLite builtins). A dict with `pooling` ("mean", "max", "first" of the
    windows' outputs, as `task.window_pooling`; "wordpieces": the mean
    weighted by each window's wordpieces, as `SentenceEncoder.encode`),
    `normalize` (L2-normalize the pooled outputs), `doc_stride`,
    `doc_overlap` and `max_windows` (per text). Outputs whose first dimension
    is the window are pooled to one row per text; `input_word_ids` stays one
    row per window, and `num_windows` says how many each text had.

    Example:
    >>> import tempfile, tfbert  # doctest: +SKIP
    >>> pre = tfbert.BertPreprocessor.from_pretrained("ckpt", seq_length=64)  # doctest: +SKIP
    >>> export_text_tflite(pre, tfbert.BertEncoder.from_pretrained("ckpt"), "e2e.tflite",
    ...                    output_names=["pooled_output"])  # doctest: +SKIP
    """
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization must be one of {QUANTIZATIONS}, got {quantization!r}.")
    if quantization == "full_integer":
        raise ValueError("quantization='full_integer' takes id inputs (export_model_tflite / "
                         "export_encoder_tflite); string inputs are not calibrated.")
    if padding not in PADDINGS:
        raise ValueError(f"padding must be one of {PADDINGS}, got {padding!r}.")
    windows = check_windows(windows)
    tokenizer = tflite_tokenizer(preprocessor, tokenizer)
    special = preprocessor.vocab

    def serve(text):
        pieces = tokenizer.tokenize(text)
        if windows is not None:
            pieces = pieces.merge_dims(1, -1) if pieces.ragged_rank > 1 else pieces
            spans = window_spans(pieces.row_lengths(), preprocessor.seq_length - 2,
                                 windows["doc_stride"], windows["doc_overlap"],
                                 max_windows_per_text=windows["max_windows"])
            pieces = window_values(pieces, spans)
        packed = pack_inputs(
            [pieces],
            preprocessor.seq_length,
            start_of_sequence_id=special.cls_id,
            end_of_segment_id=special.sep_id,
            padding_id=special.pad_id,
            truncation=preprocessor.truncation,
        )
        ids = packed["input_word_ids"]
        if padding == "longest":
            packed = trim_to_longest(packed)
            # The ids go out through an ADD, not straight from the slice: LiteRT's
            # Python wrapper cannot read a zero-row sliced dynamic tensor (an
            # empty batch: "Invalid tensor size.").
            ids = packed["input_word_ids"] + tf.zeros_like(packed["input_word_ids"])
        outputs = model(packed, training=False)
        if not isinstance(outputs, dict):  # e.g. a classifier's logits
            outputs = {"logits": outputs}
        names = output_names or [k for k, v in outputs.items() if tf.is_tensor(v)]
        result = {name: outputs[name] for name in names}
        if windows is not None:
            result = {name: pool_text_windows(value, spans, windows)
                      for name, value in result.items()}
            result["num_windows"] = tf.cast(spans["num_windows"], tf.int32)
        result["input_word_ids"] = ids
        return result

    spec = tf.TensorSpec([None], tf.string, name="text")
    flatbuffer = _convert([model], serve, [spec], quantization, custom_ops=True)
    write_file_atomically(output_path, flatbuffer)
    return output_path


WINDOW_POOLINGS = ("mean", "max", "first", "wordpieces")


def check_windows(windows):
    """`windows` with its defaults filled in, or None; one error line for a bad key or value."""
    if windows is None:
        return None
    defaults = {"pooling": "mean", "normalize": False, "doc_stride": None, "doc_overlap": None,
                "max_windows": 64}
    unknown = sorted(set(windows) - set(defaults))
    if unknown:
        raise ValueError(f"windows: unknown key(s) {unknown}; known: {sorted(defaults)}.")
    windows = {**defaults, **windows}
    if windows["pooling"] not in WINDOW_POOLINGS:
        raise ValueError(f"windows: pooling must be one of {WINDOW_POOLINGS}, "
                         f"got {windows['pooling']!r}.")
    if int(windows["max_windows"]) < 1:
        raise ValueError(f"windows: max_windows must be >= 1, got {windows['max_windows']}.")
    return windows


def pool_text_windows(value, spans, windows):
    """One row per text from one row per window (`windows["pooling"]`)."""
    if windows["pooling"] == "wordpieces":
        pooled = pool_windows(value, spans, "mean",
                              weights=tf.maximum(spans["window_length"], 1))
    else:
        pooled = pool_windows(value, spans, windows["pooling"])
    return tf.math.l2_normalize(pooled, axis=-1, epsilon=1e-24) if windows["normalize"] else pooled


def _convert(tracked, serve, input_signature, quantization, custom_ops,
             representative_data=None):
    # Through a SavedModel written by ExportArchive: converting concrete
    # functions directly leaves the weights uninitialised (NaN outputs).
    with tempfile.TemporaryDirectory() as saved_model_dir:
        archive = keras.export.ExportArchive()
        for obj in tracked:
            archive.track(obj)
        archive.add_endpoint("serve", serve, input_signature=input_signature)
        archive.write_out(saved_model_dir, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(
            saved_model_dir, signature_keys=["serve"]
        )
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        # Only the tf-text tokenizer kernels may be custom ops; anything else
        # unsupported still fails the conversion (no Flex delegate ships).
        converter.allow_custom_ops = custom_ops
        if quantization is not None:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantization == "float16":
            converter.target_spec.supported_types = [tf.float16]
        if quantization == "full_integer":
            # Integer-only kernels (int8 weights and activations); the int32
            # ids in and float32 outputs keep the model's interface.
            converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            batches = representative_data
            converter.representative_dataset = lambda: (
                {k: np.asarray(b[k], np.int32) for k in INPUT_NAMES} for b in batches)
        return converter.convert()


def write_file_atomically(path, data):
    """Writes bytes atomically (`tfbert.atomic`); a full disk is one error line."""
    with explain_full_disk(path, lambda: len(data)):
        write_bytes(path, data)
