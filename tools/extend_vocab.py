"""Adds domain words to a tfbert checkpoint's vocabulary for continued pretraining.

    # Put the 100 most frequent words of a domain corpus that WordPiece splits
    # into pieces into the [unusedN] slots (vocab size unchanged):
    python tools/extend_vocab.py --checkpoint_dir=ckpt/minilm --output_dir=ckpt/minilm_med \
        --corpus='med/*.txt' --max_new_words=100 --mode=unused

    # Or grow the vocab (and the tied embeddings, and the MLM output bias):
    python tools/extend_vocab.py --checkpoint_dir=ckpt/minilm --output_dir=ckpt/minilm_med \
        --words=myocarditis,troponin --mode=grow

A new word's embedding row (and MLM output bias) starts as the mean of the
rows of the pieces it used to be split into, so the model's view of the
word is unchanged at step 0. The output is a tfbert checkpoint directory;
continue pretraining it with `tools/pretrain.py --init_checkpoint=...`.
The work is `tfbert.text.vocab_extension.extend_vocab`.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags

flags.DEFINE_string("checkpoint_dir", None, "tfbert checkpoint directory to extend.")
flags.DEFINE_string("output_dir", None, "Where to write the extended checkpoint.")
flags.DEFINE_list("words", [], "Words to add (comma-separated).")
flags.DEFINE_string("words_file", None, "File with words to add, one per line.")
flags.DEFINE_string("corpus", None, "Domain text files (globs, comma-separated) to mine words from.")
flags.DEFINE_integer("max_new_words", 100, "With --corpus: at most this many words.")
flags.DEFINE_integer("min_count", 5, "With --corpus: a word must occur this often.")
flags.DEFINE_enum("mode", "unused", ["unused", "grow"],
                  "unused: fill [unusedN] slots (size unchanged); grow: append to the vocab.")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    try:
        if not FLAGS.checkpoint_dir or not FLAGS.output_dir:
            raise ValueError("--checkpoint_dir and --output_dir are required.")
        # Imported after the flag checks: a usage error does not wait for TensorFlow.
        from tfbert.text.vocab_extension import extend_vocab

        extend_vocab(FLAGS.checkpoint_dir, FLAGS.output_dir, FLAGS.words, FLAGS.words_file,
                     FLAGS.corpus, FLAGS.max_new_words, FLAGS.min_count, FLAGS.mode)
    except (ValueError, FileNotFoundError) as e:
        print(f"extend_vocab: error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    app.run(main)
