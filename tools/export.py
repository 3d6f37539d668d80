"""Exports a tfbert checkpoint, or checks an exported SavedModel.

    python tools/export.py --checkpoint_dir=ckpt --kind=preprocessor \
        --format=saved_model --output_dir=saved_models/preprocessor [--seq_length=128]
    python tools/export.py --check=saved_models/preprocessor

`--check` prints the op types and signatures of a SavedModel and exits 1
when it breaks the op rule (only core TF ops plus FastBertNormalize and
FastWordpieceTokenizeWithOffsets). Settings may also come from `--config`
YAML (ExportConfig fields) and `--set key=value`.
"""

import dataclasses
import os
import sys

from absl import app, flags

from tfbert import experiment

KINDS = ("preprocessor", "encoder", "task", "tfhub", "tflite")
FORMATS = ("saved_model", "tfhub", "tflite")


@dataclasses.dataclass
class ExportConfig:
    checkpoint_dir: str = ""
    kind: str = "preprocessor"
    format: str = "saved_model"
    output_dir: str = ""
    seq_length: int = 128


flags.DEFINE_string("config", None, "YAML file with ExportConfig fields.")
flags.DEFINE_multi_string("set", [], "Overrides, key=value (YAML values).")
flags.DEFINE_string("checkpoint_dir", None, "tfbert checkpoint directory.")
flags.DEFINE_enum("kind", None, KINDS, "What to export (default preprocessor).")
flags.DEFINE_enum("format", None, FORMATS, "Export format (default saved_model).")
flags.DEFINE_string("output_dir", None, "Where to write the export.")
flags.DEFINE_integer("seq_length", None, "Packed sequence length (default 128).")
flags.DEFINE_string("check", None, "A SavedModel directory to check against the op rule.")
FLAGS = flags.FLAGS


def config_from_flags():
    overrides = experiment.parse_overrides(FLAGS.set)
    for field in dataclasses.fields(ExportConfig):
        value = getattr(FLAGS, field.name)
        if value is not None:
            overrides[field.name] = value
    return experiment.load(ExportConfig, FLAGS.config, overrides)


def check(path):
    """Prints ops and signatures of a SavedModel; returns the exit status."""
    from tfbert.export.op_check import OpRuleError, check_op_rule, list_saved_model_ops
    from tfbert.export.tf_text_ops import require_tf_text_ops

    ops = list_saved_model_ops(path)
    print(f"{len(ops)} op types in {path}:")
    for op in ops:
        print(f"  {op}")
    require_tf_text_ops()
    import tensorflow as tf

    loaded = tf.saved_model.load(path)
    print("signatures:")
    for name, fn in loaded.signatures.items():
        inputs = fn.structured_input_signature[1]
        print(f"  {name}: {sorted(inputs)} -> {sorted(fn.structured_outputs)}")
    try:
        check_op_rule(path)
    except OpRuleError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    print("op rule: OK")
    return 0


def run(cfg):
    if cfg.kind not in KINDS or cfg.format not in FORMATS:
        raise ValueError(f"kind must be one of {KINDS} and format one of {FORMATS}.")
    if cfg.kind != "preprocessor" or cfg.format != "saved_model":
        raise NotImplementedError(
            f"kind={cfg.kind} format={cfg.format} is not implemented yet; "
            "this tool exports kind=preprocessor format=saved_model."
        )
    if not cfg.checkpoint_dir or not cfg.output_dir:
        raise ValueError("checkpoint_dir and output_dir are required (or --check=DIR).")
    from tfbert.export.preprocessor import export_preprocessor
    from tfbert.text import BertPreprocessor

    preprocessor = BertPreprocessor.from_pretrained(cfg.checkpoint_dir, seq_length=cfg.seq_length)
    export_preprocessor(preprocessor, cfg.output_dir)
    print(f"Exported the preprocessor (seq_length={cfg.seq_length}) to {cfg.output_dir}")


def main(argv):
    del argv
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if FLAGS.check:
        sys.exit(check(FLAGS.check))
    try:
        run(config_from_flags())
    except (ValueError, FileNotFoundError, NotImplementedError) as e:
        print(f"export: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    app.run(main)
