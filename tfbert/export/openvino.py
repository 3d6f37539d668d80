"""A strings-in task SavedModel as an OpenVINO IR: strings in, the same named
outputs as its `serving_default`, tokenizer inside.

    export_openvino("saved_models/sentiment/1", "saved_models/sentiment_ov/1")
    export_openvino(..., precision="bf16")   # OpenVINO's bf16 inference hint
    export_openvino(..., precision="int8", calibration_texts=train_sentences)  # NNCF

Built from the export itself: the model part is the SavedModel's
`serving_ids` signature converted by OpenVINO's TensorFlow frontend (encoder,
head, softmax, the `label` gather), and the tokenizer part is rebuilt from the
vocabulary and packing settings the export records
(`tfbert.export.openvino_tokenizer` says why it is not converted). The two are
joined into one `ov.Model` by hand (openvino-tokenizers' `connect_models`
drops the tokenizer's state and returns no rows). Before anything is written the
joined model is run on probe texts, one longer than `seq_length` (pairs: with
`text_b`), against `serving_default`: an export it cannot reproduce (the
word-level outputs of tagging and question answering, `long_text=windows`)
is a one-line error, not a silently different model.

Written to a temporary directory and renamed into place (`tfbert.atomic`):
`<output_dir>/model.xml`, `model.bin` (fp32 weights: `compress_to_fp16=False`)
and `tfbert_openvino.json` (precision, inputs, outputs, file sizes and
SHA-256); `output_dir` is a version directory, as for TF Serving and OpenVINO
Model Server (`models/<name>/<version>/`). `OpenVINOModel(output_dir)` runs it.
"""

import ast
import os
import re

import numpy as np

from tfbert import config_loader
from tfbert.atomic import atomic_dir, write_json
from tfbert.export.openvino_model import (FORMAT, METADATA_FILE, file_digest, infer,
                                          require_openvino)
from tfbert.export.task_model import IDS_SIGNATURE, load_task_model
from tfbert.export.text_settings import read_text_settings

PRECISIONS = ("fp32", "bf16", "int8")
# Tokenizer outputs (openvino-tokenizers) -> the encoder inputs (TF Hub names).
ENCODER_INPUTS = {"input_word_ids": "input_ids", "input_mask": "attention_mask",
                  "input_type_ids": "token_type_ids"}
# The export-time check against serving_default (fp32, padding may differ).
PROBE_ATOL = 1e-4
PROBES = ["A wonderful film, and far too short.", "Dull.", "", "Überraschend gut: 東京 ☺",
          "The committee reviewed every proposal twice before voting, and " * 40]
MIN_CALIBRATION_TEXTS = 32


def export_openvino(saved_model_dir, output_dir, precision="fp32", calibration_texts=None,
                    calibration_size=300):
    """Writes the OpenVINO IR of the strings-in tfbert export at
    `saved_model_dir` to the version directory `output_dir`; returns it.

    Args:
        precision: `fp32`; `bf16` (the same IR, compiled with OpenVINO's bf16
            inference precision hint, recorded in the metadata); `int8` (NNCF
            post-training quantization of the model part).
        calibration_texts: int8 only: real texts like the ones it will serve
            (for pair models, `(text, text_b)` tuples); the first
            `calibration_size` are used.

    Errors are one line (ValueError, FileNotFoundError; ImportError without
    the openvino extra).
    """
    require_openvino()
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {list(PRECISIONS)}, got {precision!r}.")
    saved_model_dir = config_loader.check_path(saved_model_dir, "saved_model_dir")
    config_loader.check_dir_to_write(output_dir, "output_dir")  # before minutes of work
    calibration_size = config_loader.check_int(calibration_size, "calibration_size",
                                               MIN_CALIBRATION_TEXTS)
    if not os.path.isfile(os.path.join(saved_model_dir, "saved_model.pb")):
        raise FileNotFoundError(f"Not a SavedModel directory (no saved_model.pb): {saved_model_dir}")
    settings = read_text_settings(saved_model_dir)
    loaded = load_task_model(saved_model_dir)  # kept: the signatures use its variables
    signatures = loaded.signatures
    if settings is None or not {"serving_default", IDS_SIGNATURE} <= set(signatures):
        raise ValueError(
            f"{saved_model_dir} is not a tfbert strings-in task export (it needs serving_default, "
            f"{IDS_SIGNATURE} and the assets/tfbert_text.json that tfbert's task exports write).")
    task = settings.get("model") or "task"
    bpe = settings.get("tokenizer", "wordpiece") == "byte_level_bpe"
    text_inputs = list(settings["text_inputs"])
    serve_text = signatures["serving_default"]
    outputs = sorted(serve_text.structured_outputs)
    word_level = [o for o in outputs if o not in signatures[IDS_SIGNATURE].structured_outputs]
    if word_level:
        raise ValueError(
            f"The {task} export's serving_default outputs {word_level} come from the tokenizer's "
            f"words and offsets, which {IDS_SIGNATURE} does not give: OpenVINO export takes "
            "exports whose outputs come from the model (classification, regression, sentence "
            "embedding, cross-encoder, features).")
    # WordPiece pairs: openvino-tokenizers' longest-first, rewritten as round robin;
    # byte-level BPE pairs: longest-first as transformers' (its Truncate as it is).
    pair_truncation = "longest_first" if bpe else "round_robin"
    if len(text_inputs) > 1 and settings["truncation"] != pair_truncation:
        raise ValueError(f"The {task} export truncates pairs {settings['truncation']!r}; "
                         f"tfbert's OpenVINO export of a {settings.get('tokenizer', 'wordpiece')} "
                         f"tokenizer truncates pairs {pair_truncation!r} only.")
    if precision == "int8":
        calibration = _calibration_rows(calibration_texts, text_inputs, calibration_size)

    encoder = _convert(signatures[IDS_SIGNATURE], task)
    # Joining rewires the encoder's parameters in place: int8 quantizes an
    # unjoined copy rather than converting the SavedModel a second time.
    fp32 = encoder.clone() if precision == "int8" else encoder
    model = _joined_model(fp32, settings, outputs, task)
    _check_against_saved_model(model, serve_text, text_inputs, outputs, task)
    if precision == "int8":
        model = _joined_model(encoder, settings, outputs, task, calibration=calibration)

    import openvino as ov

    with atomic_dir(output_dir) as tmp:
        ov.save_model(model, os.path.join(tmp, "model.xml"), compress_to_fp16=False)
        files = {name: {"bytes": os.path.getsize(os.path.join(tmp, name)),
                        "sha256": file_digest(os.path.join(tmp, name))}
                 for name in ("model.xml", "model.bin")}
        write_json(os.path.join(tmp, METADATA_FILE), {
            "format": FORMAT, "precision": precision, "inputs": text_inputs, "outputs": outputs,
            "source": os.path.abspath(saved_model_dir), "model": task,
            "text": {"tokenizer": settings.get("tokenizer", "wordpiece"),
                     **{k: settings[k] for k in ("lower_case", "seq_length", "truncation")}},
            "openvino": ov.__version__, "files": files})
    return output_dir


def _joined_model(encoder, settings, outputs, task, calibration=None):
    """Tokenizer model -> `encoder` (the converted `serving_ids` model, changed
    in place), as one `ov.Model` with string parameters named as the export's
    text inputs."""
    import openvino as ov

    from tfbert.export.openvino_tokenizer import bpe_tokenizer_model, tokenizer_model

    text_inputs = settings["text_inputs"]
    if settings.get("tokenizer") == "byte_level_bpe":
        tokenizer = bpe_tokenizer_model(settings, num_inputs=len(text_inputs))
    else:
        tokenizer = tokenizer_model(settings["vocab_file"], settings["lower_case"],
                                    settings["seq_length"], num_inputs=len(text_inputs))
    if calibration is not None:
        encoder = _quantize(encoder, tokenizer, calibration)
    # The nodes feeding the tokenizer's results (not the results themselves).
    token_outputs = {next(iter(r.output(0).get_names())): r.input_value(0)
                     for r in tokenizer.get_results()}
    if "token_type_ids" not in token_outputs:  # RoBERTa's: all type ids 0
        ids = token_outputs["input_ids"]
        token_outputs["token_type_ids"] = ov.opset15.multiply(
            ids, ov.op.Constant(np.array(0, np.int32))).output(0)
    for parameter in encoder.get_parameters():
        source = token_outputs[ENCODER_INPUTS[parameter.output(0).get_any_name()]]
        for target in list(parameter.output(0).get_target_inputs()):
            target.replace_source_output(source)
    for parameter, name in zip(tokenizer.get_parameters(), text_inputs):
        parameter.set_friendly_name(name)
        parameter.output(0).set_names({name})
    results = [r for r in encoder.get_results() if r.output(0).get_any_name() in outputs]
    return ov.Model(results, tokenizer.get_sinks(), tokenizer.get_parameters(), "tfbert_" + task)


def _convert(ids_signature, task):
    import openvino as ov

    try:
        model = ov.convert_model(ids_signature)
    except Exception as e:  # OpenVINO's OpConversionFailure and friends
        ops = re.search(r"No conversion rule found for operations: ([^\n]+)", str(e))
        what = f"no conversion rule for {ops.group(1).strip()}" if ops else _first_line(str(e))
        raise ValueError(f"OpenVINO cannot convert the {task} export's {IDS_SIGNATURE}: "
                         f"{what}.") from None
    _fix_string_constants(model)
    return model


def _fix_string_constants(model):
    """OpenVINO 2026.4's TensorFlow frontend turns a tf.string constant's
    bytes into their Python repr (the `label` gather returned "b'pos'"): such
    constants are replaced by the decoded strings."""
    import openvino as ov

    for op in model.get_ordered_ops():
        if op.get_type_name() != "Constant" or op.get_element_type() != ov.Type.string:
            continue
        values = op.get_value_strings()
        if not values or not all(re.fullmatch(r"b'.*'|b\".*\"", v, re.S) for v in values):
            continue
        decoded = [ast.literal_eval(v).decode("utf-8") for v in values]
        fixed = ov.op.Constant(ov.Tensor(np.array(decoded).reshape(list(op.get_output_shape(0)))))
        for target in list(op.output(0).get_target_inputs()):
            target.replace_source_output(fixed.output(0))


def _check_against_saved_model(model, serve_text, text_inputs, outputs, task):
    """Runs `model` (fp32) and `serve_text` on the probe texts; a difference is
    a one-line ValueError naming the output."""
    import openvino as ov
    import tensorflow as tf

    batch = len(PROBES)
    texts = {name: PROBES[i:] + PROBES[:i] for i, name in enumerate(text_inputs)}
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    got = infer(compiled.create_infer_request(), [np.array(texts[n]) for n in text_inputs], batch)
    want = serve_text(**{n: tf.constant(texts[n]) for n in text_inputs})
    long_rows = {i for i in range(batch) if any(texts[n][i] == PROBES[-1] for n in text_inputs)}
    for name in outputs:
        expected, actual = want[name].numpy(), got[name]
        if expected.shape != actual.shape:
            raise ValueError(f"The OpenVINO model's {name!r} has shape {actual.shape}, the {task} "
                             f"export's serving_default {expected.shape}.")
        rows = [i for i in range(batch) if _differs(actual[i], expected[i])]
        if rows:
            where = (" on the text longer than seq_length only: an export with long_text=windows?"
                     " OpenVINO export takes exports that truncate." if set(rows) <= long_rows
                     else ".")
            raise ValueError(f"The OpenVINO model's {name!r} differs from the {task} export's "
                             f"serving_default on {len(rows)} of {batch} probe texts{where}")


def _differs(actual, expected):
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.dtype.kind in "OSU":  # TF strings are bytes, OpenVINO's str
        decode = lambda v: v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
        return [decode(v) for v in expected.ravel()] != [decode(v) for v in actual.ravel()]
    return not np.allclose(actual, expected, atol=PROBE_ATOL)


def _calibration_rows(texts, text_inputs, size):
    if texts is None:
        raise ValueError("precision='int8' needs calibration_texts (e.g. --representative_file: "
                         "real sentences like the ones the model will serve).")
    if isinstance(texts, (str, bytes)):
        raise TypeError("calibration_texts is one string; pass a list of texts.")
    rows = []
    for i, item in enumerate(list(texts)[:size]):
        row = (item,) if isinstance(item, str) else item
        if (not isinstance(row, (tuple, list)) or len(row) != len(text_inputs)
                or not all(isinstance(t, str) for t in row)):
            raise ValueError(f"calibration_texts[{i}] must be {len(text_inputs)} "
                             f"string(s) ({', '.join(text_inputs)}); got {item!r:.60}.")
        rows.append(tuple(row))
    if len(rows) < MIN_CALIBRATION_TEXTS:
        raise ValueError(f"calibration_texts holds {len(rows)} texts; int8 calibration needs at "
                         f"least {MIN_CALIBRATION_TEXTS} real sentences.")
    return rows


def _quantize(encoder, tokenizer, rows, batch_size=8):
    """NNCF int8 of the model part, calibrated on the tokenizer's ids of `rows`."""
    import openvino as ov

    request = ov.Core().compile_model(tokenizer, "CPU").create_infer_request()
    names = [p.output(0).get_any_name() for p in encoder.get_parameters()]
    batches = []
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        ids = infer(request, [np.array(column) for column in zip(*chunk)], len(chunk))
        batches.append({n: ids[ENCODER_INPUTS[n]] for n in names})
    return quantize_ids_model(encoder, batches)


def quantize_ids_model(model, batches):
    """NNCF post-training int8 quantization (transformer preset) of an
    ids-in OpenVINO model, calibrated on `batches` (dicts of its int32 inputs
    from real text). Also used by benchmarks/bench_peers.py."""
    import nncf

    # subset_size counts dataset items, here batches: all of them.
    return nncf.quantize(model, nncf.Dataset(batches), model_type=nncf.ModelType.TRANSFORMER,
                         subset_size=len(batches))


def _first_line(message):
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return next((l for l in lines if not l.startswith("Check ")), lines[0] if lines else message)
