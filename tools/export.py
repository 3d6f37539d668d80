"""Exports a tfbert checkpoint, or checks an exported SavedModel.

    # strings -> the three int32 encoder inputs (TF Hub preprocessor API)
    python tools/export.py --checkpoint_dir=ckpt --kind=preprocessor \
        --format=saved_model --output_dir=saved_models/preprocessor [--seq_length=128]
    # reusable encoder SavedModel (TF Hub API + serving_default; `mlm` when
    # the checkpoint has MLM head weights)
    python tools/export.py --checkpoint_dir=ckpt --kind=encoder --format=saved_model \
        --output_dir=saved_models/encoder
    # the TF Hub pair: <output_dir>/preprocessor and <output_dir>/encoder
    python tools/export.py --checkpoint_dir=ckpt --kind=encoder --format=tfhub \
        --output_dir=saved_models/bert_hub
    # TFLite: <output_dir>/model.tflite; --text_input adds the tokenizer
    python tools/export.py --checkpoint_dir=ckpt --kind=encoder --format=tflite \
        --output_dir=saved_models/tflite [--text_input] [--quantization=dynamic_range]
    # (a byte-level BPE checkpoint, a converted RoBERTa: ids in only; --text_input
    # is refused in one line, TFLite having no kernel for its tokenizer)
    # strings-in TFLite with the reference normalization (99.9% parity, not 65%)
    python tools/export.py --checkpoint_dir=ckpt --kind=encoder --format=tflite \
        --output_dir=saved_models/tflite --text_input --tflite_tokenizer=exact
    # strings-in TFLite padded to seq_length (static shapes; the default cuts
    # each batch to its longest text)
    python tools/export.py --checkpoint_dir=ckpt --kind=encoder --format=tflite \
        --output_dir=saved_models/tflite --text_input --tflite_padding=max_length
    # full-integer TFLite (int8 weights and activations), calibrated on training texts
    python tools/export.py --checkpoint_dir=ckpt --kind=encoder --format=tflite \
        --output_dir=saved_models/int8 --quantization=full_integer \
        --representative_file=train.tsv [--representative_column=sentence]
    # the checkpoint as a Hugging Face directory (config.json, model.safetensors,
    # tokenizer files; a sentence-transformers directory when it has a sentence
    # section) that transformers' Auto classes load
    python tools/export.py --checkpoint_dir=ckpt --format=huggingface --output_dir=hf_model
    python tools/export.py --check=saved_models/preprocessor
    # OpenVINO IR of a strings-in task SavedModel (needs the openvino extra):
    # strings in, the SavedModel's outputs out, in a versioned directory
    python tools/export.py --format=openvino --saved_model_dir=saved_models/sentiment/1 \
        --output_dir=saved_models/sentiment_ov/1 [--precision=bf16|int8 \
        --representative_file=train.tsv]

`--check` prints the op types and signatures of a SavedModel and exits 1
when it breaks the op rule (only core TF ops plus FastBertNormalize and
FastWordpieceTokenizeWithOffsets). Settings may also come from `--config`
YAML (ExportConfig fields) and `--set key=value`. The work is
`tfbert.runs.export` (`export`, `check`); `--format=openvino`
reads a SavedModel, not a checkpoint (`tfbert.export.openvino`), and takes
its settings from the flags only.
"""

import os
import sys

from absl import app, flags

from tfbert import config_loader
from tfbert.export import tflite
from tfbert.runs.export import (FORMATS, KINDS, QUANTIZATIONS, ExportConfig, check,
                                             export)

flags.DEFINE_string("config", None, "YAML file with ExportConfig fields.")
flags.DEFINE_multi_string("set", [], "Overrides, key=value (YAML values).")
flags.DEFINE_string("checkpoint_dir", None, "tfbert checkpoint directory.")
flags.DEFINE_enum("kind", None, KINDS, "What to export (default preprocessor).")
flags.DEFINE_enum("format", None, FORMATS + ("openvino",), "Export format (default saved_model).")
flags.DEFINE_string("output_dir", None, "Where to write the export.")
flags.DEFINE_integer("seq_length", None, "Packed sequence length (default 128).")
flags.DEFINE_boolean("text_input", None, "TFLite: take strings (tokenizer inside the model).")
flags.DEFINE_enum("quantization", None, QUANTIZATIONS, "TFLite weight quantization.")
flags.DEFINE_enum("tflite_tokenizer", None, tflite.TOKENIZERS,
                  "TFLite --text_input: 'fast' (tf-text FastBertTokenizer, the default) or "
                  "'exact' (the reference normalization as a FastBertNormalize table).")
flags.DEFINE_enum("tflite_padding", None, tflite.PADDINGS,
                  "TFLite --text_input: 'longest' (each batch cut to its longest text, the "
                  "default) or 'max_length' (static [batch, seq_length] shapes).")
flags.DEFINE_string("representative_file", None,
                    "full_integer: training texts to calibrate with (.txt, TSV, CSV, JSONL).")
flags.DEFINE_string("representative_column", None, "Text column of --representative_file.")
flags.DEFINE_string("saved_model_dir", None,
                    "--format=openvino: the strings-in task SavedModel to convert.")
flags.DEFINE_enum("precision", "fp32", ("fp32", "bf16", "int8"),
                  "--format=openvino: fp32, bf16 (inference hint) or int8 (NNCF, calibrated "
                  "on --representative_file).")
flags.DEFINE_string("check", None, "A SavedModel directory to check against the op rule.")
FLAGS = flags.FLAGS


def config_from_flags():
    return config_loader.load_flags(ExportConfig, FLAGS)[0]


def export_openvino_from_flags():
    if not FLAGS.saved_model_dir or not FLAGS.output_dir:
        raise ValueError("--format=openvino needs --saved_model_dir and --output_dir "
                         "(a version directory, e.g. saved_models/sentiment_ov/1).")
    from tfbert.export.openvino import export_openvino

    texts = None
    if FLAGS.representative_file:
        texts = tflite.read_representative_texts(FLAGS.representative_file,
                                                 FLAGS.representative_column or "sentence")
    path = export_openvino(FLAGS.saved_model_dir, FLAGS.output_dir, precision=FLAGS.precision,
                           calibration_texts=texts)
    size = sum(os.path.getsize(os.path.join(path, f)) for f in ("model.xml", "model.bin"))
    print(f"Exported {FLAGS.saved_model_dir} as OpenVINO IR ({FLAGS.precision}) to {path} "
          f"({size / 1e6:.1f} MB)")


def main(argv):
    del argv
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if FLAGS.check:
        sys.exit(check(FLAGS.check))
    try:
        if FLAGS.format == "openvino":
            export_openvino_from_flags()
            return
        if FLAGS.precision != "fp32":  # not silently ignored: it would seem to have been applied
            raise ValueError(f"--precision={FLAGS.precision} applies to --format=openvino only "
                             "(--quantization sets a TFLite model's).")
        export(config_from_flags())
    except (ValueError, FileNotFoundError, TypeError, NotImplementedError, ImportError) as e:
        print(f"export: error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    app.run(main)
