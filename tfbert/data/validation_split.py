"""A held-out validation slice of a training file, written as files of the same format.

Model selection (which epoch to keep) must not read the file that is then
scored and reported. Without a `validation_file`, fine-tuning holds out a
slice of the training data: this module writes `train.<ext>` and
`validation.<ext>` next to the run (so the split can be inspected and
reproduced), in the training file's own format:

- TSV / CSV / JSONL: records (a header, if any, is kept in both files);
- CoNLL: sentences (blank-line separated blocks);
- SQuAD JSON: paragraphs, so no context is in both parts (its questions share
  the answer text).

The split is a seeded random choice of `round(fraction * n)` units, so the
same seed and file give the same split. A slice of fewer than
`MIN_HELD_OUT` units is not made (`TooSmallToSplit`): on the QA quality
test (50 paragraphs, 5 held out = 15 questions; one question is 6.7 F1)
such a slice tied epochs 5-8 on one of two seeds and its loss tie-break chose
epoch 5, 11.7 dev F1 under the last, while costing 10% of the training data.

Example:
>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> train, validation = split_records("tests/data/finetune/sentiment_train.tsv", d, 0.1, seed=0,
...                                   min_held_out=1)
>>> sum(1 for _ in open(train)) - 1, sum(1 for _ in open(validation)) - 1  # minus the headers
(144, 16)
"""

import csv
import json
import os
import random

from tfbert.atomic import atomic_file
from tfbert.data import readers

MIN_HELD_OUT = 50  # units: a smaller validation slice cannot choose an epoch reliably


class TooSmallToSplit(ValueError):
    """The training file has too few units to hold any out."""


def _chosen(n, fraction, seed, min_held_out, unit):
    """Indices of the held-out units."""
    k = min(n - 1, round(fraction * n))
    if k < max(1, min_held_out):
        raise TooSmallToSplit(f"{fraction:.0%} of {n} {unit} is {k}, fewer than {min_held_out}")
    return set(random.Random(seed).sample(range(n), k))


def _write_pair(out_dir, name, write, train_units, validation_units):
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for part, units in (("train", train_units), ("validation", validation_units)):
        path = os.path.join(out_dir, f"{part}{os.path.splitext(name)[1] or '.txt'}")
        with atomic_file(path) as tmp:
            write(tmp, units)
        paths.append(path)
    return tuple(paths)


def split_records(path, out_dir, fraction, seed=0, format=None, header=True,
                  min_held_out=MIN_HELD_OUT):
    """TSV/CSV/JSONL: `(train_path, validation_path)` under `out_dir`."""
    readers._check_file(path)
    fmt = readers._format_of(path, format)
    rows = [row for _, row in readers._rows(path, fmt)]
    head = [rows.pop(0)] if header and fmt != "jsonl" and rows else []
    held = _chosen(len(rows), fraction, seed, min_held_out, "examples")

    def write(out, units):
        with open(out, "w", encoding="utf-8", newline="") as f:
            if fmt == "jsonl":
                for row in units:
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
                return
            if fmt == "tsv":  # read unquoted (GLUE has bare quotes): written back as read
                f.write("".join("\t".join(row) + "\n" for row in head + units))
                return
            csv.writer(f, lineterminator="\n").writerows(head + units)

    return _write_pair(out_dir, path, write, [r for i, r in enumerate(rows) if i not in held],
                       [r for i, r in enumerate(rows) if i in held])


def split_conll(path, out_dir, fraction, seed=0, min_held_out=MIN_HELD_OUT):
    """CoNLL: sentences (blank-line separated blocks) split; `(train, validation)` paths."""
    readers._check_file(path)
    blocks, current = [], []
    with open(path, encoding="utf-8-sig") as f:
        for line in f:
            if not line.split() or line.split()[0] == "-DOCSTART-":
                if current:
                    blocks.append(current)
                current = []
                continue
            current.append(line.rstrip("\n"))
    if current:
        blocks.append(current)
    held = _chosen(len(blocks), fraction, seed, min_held_out, "sentences")

    def write(out, units):
        with open(out, "w", encoding="utf-8") as f:
            f.write("".join("\n".join(block) + "\n\n" for block in units))

    return _write_pair(out_dir, path, write, [b for i, b in enumerate(blocks) if i not in held],
                       [b for i, b in enumerate(blocks) if i in held])


def split_squad(path, out_dir, fraction, seed=0, min_held_out=MIN_HELD_OUT):
    """SQuAD JSON: paragraphs split (a context is never on both sides)."""
    readers._check_file(path)
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    units = [(a.get("title", ""), p) for a in data.get("data", []) for p in a.get("paragraphs", [])]
    held = _chosen(len(units), fraction, seed, min_held_out, "paragraphs")

    def write(out, chosen):
        articles = [{"title": title, "paragraphs": [p]} for title, p in chosen]
        with open(out, "w", encoding="utf-8") as f:
            json.dump({"version": data.get("version", "v2.0"), "data": articles}, f,
                      ensure_ascii=False)

    return _write_pair(out_dir, path, write, [u for i, u in enumerate(units) if i not in held],
                       [u for i, u in enumerate(units) if i in held])
