r"""Converts released BERT weights into a tfbert checkpoint directory.

Hugging Face directory (config.json, model.safetensors, the tokenizer files;
model_type bert, roberta, distilbert or albert):

    python tools/convert_checkpoint.py --source=huggingface \
        --input_dir=all-MiniLM-L6-v2 --output_dir=checkpoints/minilm

Original Google BERT directory (bert_config.json, bert_model.ckpt.*, vocab.txt):

    python tools/convert_checkpoint.py --source=google \
        --input_dir=uncased_L-12_H-768_A-12 --output_dir=checkpoints/bert_base

`--lower_case` / `--nolower_case` override the tokenizer setting read from the
source (HF tokenizer files; Google: "uncased"/"cased" in the directory name).
Load the result with `tfbert.BertEncoder.from_pretrained(output_dir)`; the way
back is `tools/export.py --format=huggingface`.
"""

import sys

from absl import app, flags

flags.DEFINE_enum("source", None, ["huggingface", "google"], "Format of --input_dir.")
flags.DEFINE_string("input_dir", None, "Directory with the released checkpoint.")
flags.DEFINE_string("output_dir", None, "tfbert checkpoint directory to write.")
flags.DEFINE_boolean(
    "lower_case", None, "Lower-case (uncased) tokenization; default: read from the source."
)
flags.DEFINE_string(
    "checkpoint_prefix", None, "Google only: the TF checkpoint to read when there are several."
)
flags.mark_flags_as_required(["source", "input_dir", "output_dir"])
FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    from tfbert import checkpoint, convert

    try:
        if FLAGS.source == "huggingface":
            if FLAGS.checkpoint_prefix:
                raise ValueError("--checkpoint_prefix applies to --source=google only.")
            out = convert.from_huggingface(
                FLAGS.input_dir, FLAGS.output_dir, lower_case=FLAGS.lower_case
            )
        else:
            out = convert.from_google(
                FLAGS.input_dir,
                FLAGS.output_dir,
                lower_case=FLAGS.lower_case,
                checkpoint_prefix=FLAGS.checkpoint_prefix,
            )
    except (ValueError, FileNotFoundError) as e:
        # Bad input, not a bug: the message names the problem; no traceback.
        print(f"convert_checkpoint: error: {e}", file=sys.stderr)
        return 1
    ckpt = checkpoint.read_checkpoint(out)
    c = ckpt.config
    heads = sorted({k.split("/", 1)[0] for k in ckpt.weights} - {"encoder"})
    print(
        f"Wrote {out}: {c.num_layers} layers, hidden {c.hidden_size}, {c.num_heads} heads, "
        f"vocab {c.vocab_size}, hidden_act {c.hidden_act}, lower_case {ckpt.lower_case}, "
        f"heads {heads or 'none'}."
    )
    return 0


if __name__ == "__main__":
    app.run(main)
