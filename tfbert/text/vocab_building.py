"""Learning a WordPiece `vocab.txt` from text files, as one library call.

`BuildVocabConfig` holds the settings (the flags, YAML keys and `--set` names
of `tools/build_vocab.py`); `build_vocab(cfg)` reads the files (one text per
line; `input_files` a comma-separated list of files or globs), learns the
vocabulary with `tfbert.text.vocab.learn_vocab` (words split exactly like
`BertTokenizer`; [PAD] [UNK] [CLS] [SEP] [MASK] get ids 0..4) and writes it.

Example (settings are checked when the config is built, before any work):
>>> BuildVocabConfig(vocab_size=5)
Traceback (most recent call last):
ValueError: BuildVocabConfig.vocab_size: must be >= 6, got 5.
"""

import dataclasses
import glob
import sys

from tfbert import config_loader
from tfbert.atomic import write_text
from tfbert.text.vocab import SPECIAL_TOKENS, learn_vocab


@dataclasses.dataclass
class BuildVocabConfig:
    """What to learn from which files, and where to write it."""

    input_files: str = ""
    output_file: str = ""
    vocab_size: int = config_loader.at_least(len(SPECIAL_TOKENS) + 1, 30522)
    lower_case: bool = True
    max_unique_chars: int = config_loader.at_least(1, 1000)
    max_lines: int = config_loader.at_least(0, 0)  # 0: read everything

    def __post_init__(self):
        config_loader.validate(self)


def resolve(patterns):
    """Comma-separated files or globs -> paths (each glob's matches sorted);
    a pattern that matches nothing is an error naming it."""
    paths = []
    for pattern in [p.strip() for p in patterns.split(",") if p.strip()]:
        matched = sorted(glob.glob(pattern))
        if not matched:
            raise FileNotFoundError(f"input_files: no file matches {pattern!r}.")
        paths.extend(matched)
    return paths


def read_lines(paths, max_lines=0):
    """The non-empty stripped lines of the files, in order (at most
    `max_lines` of them when it is not 0)."""
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


def build_vocab(cfg):
    """Learns the vocabulary `cfg` describes and writes it to `cfg.output_file`
    (one token per line; says so on stderr); returns the tokens."""
    if not cfg.input_files or not cfg.output_file:
        raise ValueError("input_files and output_file are required.")
    tokens = learn_vocab(
        read_lines(resolve(cfg.input_files), cfg.max_lines),
        cfg.vocab_size,
        lower_case=cfg.lower_case,
        max_unique_chars=cfg.max_unique_chars,
    )
    write_text(cfg.output_file, "\n".join(tokens) + "\n")
    print(f"Wrote {len(tokens)} tokens to {cfg.output_file}", file=sys.stderr)
    return tokens
