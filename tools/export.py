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
from tfbert.export import tflite

KINDS = ("preprocessor", "encoder")
FORMATS = ("saved_model", "tfhub", "tflite")
QUANTIZATIONS = ("none", "dynamic_range", "float16", "full_integer")
# Options of strings-in TFLite models only: their choices (the default first,
# as `tfbert.export.tflite` defines them) and why another format cannot take them.
TEXT_TFLITE_OPTIONS = {
    "tflite_tokenizer": (tflite.TOKENIZERS, "the tokenizer inside a strings-in TFLite model"),
    "tflite_padding": (tflite.PADDINGS, "an ids-in TFLite model takes [batch, seq_length]"),
}


@dataclasses.dataclass
class ExportConfig:
    checkpoint_dir: str = ""
    kind: str = experiment.one_of(KINDS, "preprocessor")
    format: str = experiment.one_of(FORMATS, "saved_model")
    output_dir: str = ""
    seq_length: int = experiment.at_least(2, 128)
    text_input: bool = False  # tflite: strings in (tokenizer inside the model)
    quantization: str = experiment.one_of(QUANTIZATIONS, "none")  # tflite
    # tflite --text_input: fast (tf-text FastBertTokenizer) | exact (reference table)
    tflite_tokenizer: str = experiment.one_of(tflite.TOKENIZERS, "fast")
    # tflite --text_input: longest (each batch cut to its longest text) |
    # max_length (static [batch, seq_length], for delegates that need it)
    tflite_padding: str = experiment.one_of(tflite.PADDINGS, "longest")
    # full_integer: texts that calibrate activation ranges (.txt one per line,
    # or TSV/CSV/JSONL with this column), e.g. the training file
    representative_file: str = ""
    representative_column: str = "sentence"

    def __post_init__(self):
        experiment.validate(self)
        for field, (choices, why) in TEXT_TFLITE_OPTIONS.items():
            if getattr(self, field) != choices[0] and not (self.format == "tflite"
                                                           and self.text_input):
                raise ValueError(f"--{field} applies to --format=tflite --text_input only "
                                 f"({why}).")


flags.DEFINE_string("config", None, "YAML file with ExportConfig fields.")
flags.DEFINE_multi_string("set", [], "Overrides, key=value (YAML values).")
flags.DEFINE_string("checkpoint_dir", None, "tfbert checkpoint directory.")
flags.DEFINE_enum("kind", None, KINDS, "What to export (default preprocessor).")
flags.DEFINE_enum("format", None, FORMATS, "Export format (default saved_model).")
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
flags.DEFINE_string("check", None, "A SavedModel directory to check against the op rule.")
FLAGS = flags.FLAGS


def config_from_flags():
    return experiment.load_flags(ExportConfig, FLAGS)[0]


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
    if not cfg.checkpoint_dir or not cfg.output_dir:
        raise ValueError("checkpoint_dir and output_dir are required (or --check=DIR).")
    from tfbert.text import BertPreprocessor

    preprocessor = BertPreprocessor.from_pretrained(cfg.checkpoint_dir, seq_length=cfg.seq_length)
    if cfg.kind == "preprocessor":
        if cfg.format != "saved_model":
            raise ValueError(
                "kind=preprocessor exports as format=saved_model (format=tfhub writes it "
                "with the encoder; TFLite has no kernels for the reference string ops)."
            )
        from tfbert.export.preprocessor import export_preprocessor

        export_preprocessor(preprocessor, cfg.output_dir)
        print(f"Exported the preprocessor (seq_length={cfg.seq_length}) to {cfg.output_dir}")
        return
    from tfbert import checkpoint
    from tfbert.models.pretrainer import BertPretrainer

    ckpt = checkpoint.read_checkpoint(cfg.checkpoint_dir)
    has_mlm = bool(ckpt.prefixed_weights("mlm"))
    del ckpt
    pretrainer = BertPretrainer.from_checkpoint(cfg.checkpoint_dir) if has_mlm else None
    from tfbert.encoder import BertEncoder

    encoder = pretrainer.encoder if pretrainer else BertEncoder.from_pretrained(cfg.checkpoint_dir)
    if cfg.format == "tflite":
        path = os.path.join(cfg.output_dir, "model.tflite")
        quantization = None if cfg.quantization == "none" else cfg.quantization
        representative = None
        if quantization == "full_integer":
            if not cfg.representative_file:
                raise ValueError("--quantization=full_integer needs --representative_file "
                                 "(e.g. the training file) to calibrate activation ranges.")
            texts = tflite.read_representative_texts(cfg.representative_file,
                                                     cfg.representative_column)
            representative = tflite.representative_inputs(preprocessor, texts,
                                                          source=cfg.representative_file)
        if cfg.text_input:
            tflite.export_text_tflite(preprocessor, encoder, path, quantization=quantization,
                                      tokenizer=cfg.tflite_tokenizer,
                                      padding=cfg.tflite_padding)
        else:
            tflite.export_encoder_tflite(encoder, path, seq_length=cfg.seq_length,
                                         quantization=quantization,
                                         representative_data=representative)
        print(f"Exported the encoder{' with the tokenizer' if cfg.text_input else ''} "
              f"to {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
        return
    from tfbert.export.encoder import export_encoder

    vocab_file = os.path.join(cfg.checkpoint_dir, "vocab.txt")
    encoder_dir = cfg.output_dir
    if cfg.format == "tfhub":
        from tfbert.export.preprocessor import export_preprocessor

        export_preprocessor(preprocessor, os.path.join(cfg.output_dir, "preprocessor"))
        encoder_dir = os.path.join(cfg.output_dir, "encoder")
    export_encoder(encoder, encoder_dir, vocab_file=vocab_file,
                   lower_case=preprocessor.lower_case, pretrainer=pretrainer)
    print(f"Exported the encoder{' with its mlm sub-object' if pretrainer else ''} to "
          f"{encoder_dir}" + (f" and the preprocessor to {cfg.output_dir}/preprocessor"
                              if cfg.format == "tfhub" else ""))


def main(argv):
    del argv
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if FLAGS.check:
        sys.exit(check(FLAGS.check))
    try:
        run(config_from_flags())
    except (ValueError, FileNotFoundError, NotImplementedError) as e:
        print(f"export: error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    app.run(main)
