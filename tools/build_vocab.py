"""Learns a BERT WordPiece vocabulary (`vocab.txt`) from text files.

    python tools/build_vocab.py --input_files='corpus/*.txt' \
        --output_file=vocab.txt --vocab_size=30522 --lower_case=true
    python tools/build_vocab.py --config=vocab.yaml --set vocab_size=8000

One text per line; `input_files` is a comma-separated list of files or globs.
Words are split exactly like `tfbert.text.BertTokenizer` (so the vocab fits
it); WordPiece learning is tf-text's. The special tokens [PAD] [UNK] [CLS]
[SEP] [MASK] get ids 0..4.
"""

import dataclasses
import glob
import sys

from absl import app, flags

from tfbert import experiment
from tfbert.atomic import write_text
from tfbert.text.vocab import SPECIAL_TOKENS


@dataclasses.dataclass
class BuildVocabConfig:
    input_files: str = ""
    output_file: str = ""
    vocab_size: int = experiment.at_least(len(SPECIAL_TOKENS) + 1, 30522)
    lower_case: bool = True
    max_unique_chars: int = experiment.at_least(1, 1000)
    max_lines: int = experiment.at_least(0, 0)  # 0: read everything

    def __post_init__(self):
        experiment.validate(self)


flags.DEFINE_string("config", None, "YAML file with BuildVocabConfig fields.")
flags.DEFINE_multi_string("set", [], "Overrides, key=value (YAML values).")
experiment.define_flags(BuildVocabConfig)
FLAGS = flags.FLAGS


def config_from_flags():
    return experiment.load_flags(BuildVocabConfig, FLAGS)[0]


def resolve(patterns):
    paths = []
    for pattern in [p.strip() for p in patterns.split(",") if p.strip()]:
        matched = sorted(glob.glob(pattern))
        if not matched:
            raise FileNotFoundError(f"input_files: no file matches {pattern!r}.")
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


def run(cfg):
    if not cfg.input_files or not cfg.output_file:
        raise ValueError("input_files and output_file are required.")
    paths = resolve(cfg.input_files)  # fail fast, before importing TensorFlow
    from tfbert.text.vocab import learn_vocab

    tokens = learn_vocab(
        read_lines(paths, cfg.max_lines),
        cfg.vocab_size,
        lower_case=cfg.lower_case,
        max_unique_chars=cfg.max_unique_chars,
    )
    write_text(cfg.output_file, "\n".join(tokens) + "\n")
    print(f"Wrote {len(tokens)} tokens to {cfg.output_file}", file=sys.stderr)
    return tokens


def main(argv):
    del argv
    try:
        run(config_from_flags())
    except (ValueError, FileNotFoundError) as e:
        print(f"build_vocab: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    app.run(main)
