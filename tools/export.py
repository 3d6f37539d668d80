"""Exports a tfbert checkpoint, or checks an exported SavedModel.

    python tools/export.py --checkpoint_dir=ckpt --kind=preprocessor \
        --format=saved_model --output_dir=saved_models/preprocessor [--seq_length=128]
    python tools/export.py --check=saved_models/preprocessor

`--check` prints the op types and signatures of a SavedModel and exits 1
when it breaks the op rule (only core TF ops plus FastBertNormalize and
FastWordpieceTokenizeWithOffsets).
"""

import os
import sys

from absl import app, flags

KINDS = ("preprocessor", "encoder", "task", "tfhub", "tflite")
FORMATS = ("saved_model", "tfhub", "tflite")

FLAGS = flags.FLAGS
flags.DEFINE_string("checkpoint_dir", None, "tfbert checkpoint directory.")
flags.DEFINE_enum("kind", "preprocessor", KINDS, "What to export.")
flags.DEFINE_enum("format", "saved_model", FORMATS, "Export format.")
flags.DEFINE_string("output_dir", None, "Where to write the export.")
flags.DEFINE_integer("seq_length", None, "Packed sequence length (default: 128).")
flags.DEFINE_string("check", None, "A SavedModel directory to check against the op rule.")


def check(path):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from tfbert.export.op_check import OpRuleError, check_op_rule, list_saved_model_ops

    ops = list_saved_model_ops(path)
    print(f"{len(ops)} op types in {path}:")
    for op in ops:
        print(f"  {op}")
    from tfbert.export.tf_text_ops import require_tf_text_ops

    require_tf_text_ops()
    import tensorflow as tf

    loaded = tf.saved_model.load(path)
    print("signatures:")
    for name, fn in loaded.signatures.items():
        inputs = fn.structured_input_signature[1]
        outputs = fn.structured_outputs
        print(f"  {name}: {sorted(inputs)} -> {sorted(outputs)}")
    try:
        check_op_rule(path)
    except OpRuleError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    print("op rule: OK")
    return 0


def main(argv):
    del argv
    if FLAGS.check:
        sys.exit(check(FLAGS.check))
    if not FLAGS.checkpoint_dir or not FLAGS.output_dir:
        raise app.UsageError("--checkpoint_dir and --output_dir are required (or --check=DIR).")
    if FLAGS.kind != "preprocessor" or FLAGS.format != "saved_model":
        raise app.UsageError(
            f"--kind={FLAGS.kind} --format={FLAGS.format} is not implemented yet; "
            "this tool exports --kind=preprocessor --format=saved_model."
        )
    from tfbert.export.preprocessor import export_preprocessor
    from tfbert.text import BertPreprocessor

    kwargs = {"seq_length": FLAGS.seq_length} if FLAGS.seq_length else {}
    preprocessor = BertPreprocessor.from_pretrained(FLAGS.checkpoint_dir, **kwargs)
    export_preprocessor(preprocessor, FLAGS.output_dir)
    print(f"Exported the preprocessor (seq_length={preprocessor.seq_length}) to {FLAGS.output_dir}")


if __name__ == "__main__":
    app.run(main)
