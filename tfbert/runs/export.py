"""Exporting a tfbert checkpoint as one library call, and checking an export.

`ExportConfig` says what to write: the preprocessor (strings -> the three
int32 encoder inputs), the encoder as a reusable SavedModel (TF Hub API +
`serving_default`; `mlm` when the checkpoint has MLM head weights), the TF
Hub pair (`<output_dir>/preprocessor` and `<output_dir>/encoder`), or a
TFLite model (`<output_dir>/model.tflite`; ids in, or strings in with
`text_input`; quantized on request, full-integer calibrated on training
texts), or the whole checkpoint as a Hugging Face directory
(`format="huggingface"`, `tfbert.convert.to_huggingface`; `kind` is not read). `export(cfg)` writes it and prints one line; `check(path)` prints
a SavedModel's op types and signatures and fails when it breaks the op rule
(only core TF ops plus FastBertNormalize and FastWordpieceTokenizeWithOffsets,
`tfbert.export.op_check`).

Example (settings are checked when the config is built, before any work):
>>> ExportConfig(format="saved_model", tflite_padding="max_length")
Traceback (most recent call last):
ValueError: --tflite_padding applies to --format=tflite --text_input only (an ids-in TFLite model takes [batch, seq_length]).
"""

import dataclasses
import os
import sys

from tfbert import config_loader
from tfbert.export import tflite

KINDS = ("preprocessor", "encoder")
FORMATS = ("saved_model", "tfhub", "tflite", "huggingface")
QUANTIZATIONS = ("none", "dynamic_range", "float16", "full_integer")
# Options of strings-in TFLite models only: their choices (the default first,
# as `tfbert.export.tflite` defines them) and why another format cannot take them.
TEXT_TFLITE_OPTIONS = {
    "tflite_tokenizer": (tflite.TOKENIZERS, "the tokenizer inside a strings-in TFLite model"),
    "tflite_padding": (tflite.PADDINGS, "an ids-in TFLite model takes [batch, seq_length]"),
}

# Settings of the graph exports that a Hugging Face directory has no use for, with
# their defaults (kind is not listed: its default is not "unset").
HUGGINGFACE_IGNORES = {"seq_length": 128, "text_input": False, "quantization": "none",
                       "representative_file": ""}


@dataclasses.dataclass
class ExportConfig:
    """What to export from which checkpoint (the flags and `--config` YAML of the export tool)."""

    checkpoint_dir: str = ""
    kind: str = config_loader.one_of(KINDS, "preprocessor")
    format: str = config_loader.one_of(FORMATS, "saved_model")
    output_dir: str = ""
    seq_length: int = config_loader.at_least(2, 128)
    text_input: bool = False  # tflite: strings in (tokenizer inside the model)
    quantization: str = config_loader.one_of(QUANTIZATIONS, "none")  # tflite
    # tflite --text_input: fast (tf-text FastBertTokenizer) | exact (reference table)
    tflite_tokenizer: str = config_loader.one_of(tflite.TOKENIZERS, "fast")
    # tflite --text_input: longest (each batch cut to its longest text) |
    # max_length (static [batch, seq_length], for delegates that need it)
    tflite_padding: str = config_loader.one_of(tflite.PADDINGS, "longest")
    # full_integer: texts that calibrate activation ranges (.txt one per line,
    # or TSV/CSV/JSONL with this column), e.g. the training file
    representative_file: str = ""
    representative_column: str = "sentence"

    def __post_init__(self):
        config_loader.validate(self)
        if self.format == "huggingface":  # the checkpoint as it is: nothing of these applies
            for field, default in HUGGINGFACE_IGNORES.items():
                if getattr(self, field) != default:
                    raise ValueError(f"--{field} does not apply to --format=huggingface (it "
                                     "writes the checkpoint's float32 weights and its "
                                     "tokenizer as they are).")
        for field, (choices, why) in TEXT_TFLITE_OPTIONS.items():
            if getattr(self, field) != choices[0] and not (self.format == "tflite"
                                                           and self.text_input):
                raise ValueError(f"--{field} applies to --format=tflite --text_input only "
                                 f"({why}).")


def check(path):
    """Prints the op types and signatures of the SavedModel at `path`;
    returns the exit status (1: it breaks the op rule, the reason on stderr)."""
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


def export(cfg):
    """Writes what the `ExportConfig` `cfg` asks for, and prints one line saying
    where. Errors are one line (ValueError, FileNotFoundError, NotImplementedError)."""
    if not cfg.checkpoint_dir or not cfg.output_dir:
        raise ValueError("checkpoint_dir and output_dir are required (or --check=DIR).")
    if cfg.format == "huggingface":  # the whole checkpoint: kind is not read
        from tfbert.convert import to_huggingface

        to_huggingface(cfg.checkpoint_dir, cfg.output_dir)
        print(f"Exported {cfg.checkpoint_dir} as a Hugging Face directory to {cfg.output_dir}")
        return
    from tfbert.text import BertPreprocessor

    preprocessor = BertPreprocessor.from_pretrained(cfg.checkpoint_dir, seq_length=cfg.seq_length)
    if cfg.format == "tflite" and cfg.text_input and preprocessor.tokenizer_kind != "wordpiece":
        raise ValueError(tflite.BPE_REFUSAL)  # before minutes of loading and converting
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

    # The tokenizer files as TF Hub's `vocab_file` asset (byte-level BPE: vocab.json,
    # and merges.txt as `merges_file`).
    bpe = preprocessor.tokenizer_kind == "byte_level_bpe"
    vocab_file = os.path.join(cfg.checkpoint_dir, "vocab.json" if bpe else "vocab.txt")
    merges_file = os.path.join(cfg.checkpoint_dir, "merges.txt") if bpe else None
    encoder_dir = cfg.output_dir
    if cfg.format == "tfhub":
        from tfbert.export.preprocessor import export_preprocessor

        export_preprocessor(preprocessor, os.path.join(cfg.output_dir, "preprocessor"))
        encoder_dir = os.path.join(cfg.output_dir, "encoder")
    export_encoder(encoder, encoder_dir, vocab_file=vocab_file,
                   lower_case=preprocessor.lower_case, pretrainer=pretrainer,
                   merges_file=merges_file)
    print(f"Exported the encoder{' with its mlm sub-object' if pretrainer else ''} to "
          f"{encoder_dir}" + (f" and the preprocessor to {cfg.output_dir}/preprocessor"
                              if cfg.format == "tfhub" else ""))
