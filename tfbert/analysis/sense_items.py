"""Word-sense items: a target word in a sentence with its gold sense.

A sense file is JSONL, one item a line:
`{"text": ..., "start": ..., "end": ..., "lemma": ..., "sense": ...}` where
`text[start:end]` (character offsets) is the target word, `lemma` groups the
items whose senses compete and `sense` is the gold sense id. An optional
`"word"` must equal `text[start:end]`. A bad row is one line naming the file,
the line and the key.

Example:
>>> path = os.path.join(tempfile.mkdtemp(), "senses.jsonl")
>>> _ = open(path, "w").write('{"text": "Deposit it in the bank.", "start": 18, '
...                           '"end": 22, "lemma": "bank", "sense": "bank.n.02"}\\n')
>>> [item] = read_sense_items(path)
>>> item.words, item.target
(['Deposit', 'it', 'in', 'the', 'bank', '.'], 4)
"""

import dataclasses
import json
import os
import tempfile  # noqa: F401  (the doctest)

from tfbert import config_loader
from tfbert.text.char_table import is_punctuation

KEYS = ("text", "start", "end", "lemma", "sense")


@dataclasses.dataclass
class SenseItem:
    """One item: `words` of its text (whitespace-split, punctuation at a word's
    edges split off, the target kept whole), the `target` word's index, its
    `lemma`, `sense` and the file line."""

    words: list
    target: int
    lemma: str
    sense: str
    line: int


def read_sense_items(path):
    """The items of a sense JSONL file, checked (see the module docstring)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No sense file: {path}")
    items = []
    for n, line in config_loader.text_lines(path):
        if line.strip():
            items.append(_item(line, f"{path}, line {n}", n))
    if not items:
        raise ValueError(f"{path}: no sense items.")
    return items


def _item(line, where, n):
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: not JSON ({e.msg}).") from None
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object with keys {list(KEYS)}.")
    for key in KEYS:
        if key not in row:
            raise ValueError(f"{where}: missing key {key!r}.")
    text, start, end = row["text"], row["start"], row["end"]
    for key in ("text", "lemma", "sense"):
        if not isinstance(row[key], str) or not row[key]:
            raise ValueError(f"{where}: {key!r} must be a non-empty string, got {row[key]!r}.")
    for key in ("start", "end"):
        if not isinstance(row[key], int) or isinstance(row[key], bool):
            raise ValueError(f"{where}: {key!r} must be an integer, got {row[key]!r}.")
    if not 0 <= start < end <= len(text):
        raise ValueError(f"{where}: target span [{start}, {end}) is out of range of its "
                         f"{len(text)}-character text.")
    target = text[start:end]
    if "word" in row and row["word"] != target:
        raise ValueError(f"{where}: text[{start}:{end}] is {target!r}, not the item's word "
                         f"{row['word']!r}.")
    inside = target.strip() == target and not any(c.isspace() for c in target)
    cut = ((start > 0 and text[start - 1].isalnum() and target[0].isalnum())
           or (end < len(text) and text[end].isalnum() and target[-1].isalnum()))
    if not inside or cut:
        raise ValueError(f"{where}: text[{start}:{end}] is {target!r}, not a whole word of "
                         "the text.")
    before, after = split_words(text[:start]), split_words(text[end:])
    return SenseItem(words=before + [target] + after, target=len(before), lemma=row["lemma"],
                     sense=row["sense"], line=n)


def split_words(text):
    """Whitespace words with the punctuation at their edges split off."""
    words = []
    for token in text.split():
        head, tail = [], []
        while token and is_punctuation(token[0]):
            head.append(token[0])
            token = token[1:]
        while token and is_punctuation(token[-1]):
            tail.insert(0, token[-1])
            token = token[:-1]
        words += head + ([token] if token else []) + tail
    return words
