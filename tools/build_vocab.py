"""Learns a BERT WordPiece vocabulary (`vocab.txt`) from text files.

    python tools/build_vocab.py --input_files='corpus/*.txt' \
        --output_file=vocab.txt --vocab_size=30522 --lower_case=true

One text per line. Words are split exactly like `tfbert.text.BertTokenizer`
(so the vocab fits it); WordPiece learning is tf-text's. The special tokens
[PAD] [UNK] [CLS] [SEP] [MASK] get ids 0..4.
"""

import glob
import os
import sys

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_list("input_files", None, "Text files or globs, one text per line.")
flags.DEFINE_string("output_file", None, "Where to write vocab.txt.")
flags.DEFINE_integer("vocab_size", 30522, "Target (maximum) vocabulary size.")
flags.DEFINE_bool("lower_case", True, "Uncased vocab (lower-case + strip accents).")
flags.DEFINE_integer("max_unique_chars", 1000, "Largest alphabet of single characters.")
flags.DEFINE_integer("max_lines", 0, "Read at most this many lines (0: all).")


def resolve(patterns):
    paths = []
    for pattern in patterns:
        matched = sorted(glob.glob(pattern))
        if not matched:
            raise FileNotFoundError(f"--input_files: no file matches {pattern!r}.")
        paths.extend(matched)
    return paths


def read_lines(paths, max_lines=0):
    count = 0
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if line:
                    yield line
                    count += 1
                    if max_lines and count >= max_lines:
                        return


def main(argv):
    del argv
    if not FLAGS.input_files or not FLAGS.output_file:
        raise app.UsageError("--input_files and --output_file are required.")
    paths = resolve(FLAGS.input_files)  # fail fast, before importing TensorFlow
    from tfbert.text.vocab import learn_vocab

    tokens = learn_vocab(
        read_lines(paths, FLAGS.max_lines),
        FLAGS.vocab_size,
        lower_case=FLAGS.lower_case,
        max_unique_chars=FLAGS.max_unique_chars,
    )
    out_dir = os.path.dirname(os.path.abspath(FLAGS.output_file))
    os.makedirs(out_dir, exist_ok=True)
    tmp = FLAGS.output_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    os.replace(tmp, FLAGS.output_file)
    print(f"Wrote {len(tokens)} tokens to {FLAGS.output_file}", file=sys.stderr)


if __name__ == "__main__":
    app.run(main)
