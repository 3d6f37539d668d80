"""Learns a BERT WordPiece vocabulary (`vocab.txt`) from text files.

    python tools/build_vocab.py --input_files='corpus/*.txt' \
        --output_file=vocab.txt --vocab_size=30522 --lower_case=true
    python tools/build_vocab.py --config=vocab.yaml --set vocab_size=8000

One text per line; `input_files` is a comma-separated list of files or globs.
Words are split exactly like `tfbert.text.BertTokenizer` (so the vocab fits
it); WordPiece learning is tf-text's. The special tokens [PAD] [UNK] [CLS]
[SEP] [MASK] get ids 0..4. The work is
`tfbert.text.vocab_building.build_vocab`.
"""

import sys

from absl import app, flags

from tfbert import config_loader
from tfbert.text.vocab_building import BuildVocabConfig, build_vocab

flags.DEFINE_string("config", None, "YAML file with BuildVocabConfig fields.")
flags.DEFINE_multi_string("set", [], "Overrides, key=value (YAML values).")
config_loader.define_flags(BuildVocabConfig)
FLAGS = flags.FLAGS


def config_from_flags():
    return config_loader.load_flags(BuildVocabConfig, FLAGS)[0]


def main(argv):
    del argv
    try:
        build_vocab(config_from_flags())
    except (ValueError, FileNotFoundError) as e:
        print(f"build_vocab: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    app.run(main)
