"""A real multi-label set from the Python standard library's docstrings (every
machine has them): the text is the first `WORDS` words of a function's or
class's docstring, and its labels are what those words mention, by rules a
reader can check (`RULES`, regular expressions on the same words):

- `raises`: an exception (`raise`, `raises`, a `...Error` / `...Exception` name);
- `boolean`: `True` or `False`;
- `none`: `None`;
- `path`: a file, path, directory or filename;
- `bytes`: bytes, a byte string, bytearray;
- `iteration`: an iterator, iterable, generator or `yield`;
- `concurrency`: a thread, lock, process, coroutine, `async` or `await`.

A docstring may carry none of them. Used by the quality benchmark
(`bench_quality.py --tasks=multilabel`).

    >>> rows = docstring_multilabel()
    >>> len(rows) > 1500 and all(set(r["labels"]) <= set(RULES) for r in rows)
    True
    >>> labels_of("Raise ValueError if the path is None.")
    ['none', 'path', 'raises']
"""

import inspect
import json
import os
import random
import re

from tfbert.datasets.docstring_pairs import stdlib_objects

WORDS = 48
RULES = {
    "raises": r"\b(raises?|raised|[A-Z]\w*Error|[A-Z]\w*Exception)\b",
    "boolean": r"\b(True|False)\b",
    "none": r"\bNone\b",
    "path": r"\b([Ff]iles?|[Pp]aths?|[Dd]irector(y|ies)|[Ff]ilenames?)\b",
    "bytes": r"\b([Bb]ytes|[Bb]yte string|bytearray)\b",
    "iteration": r"\b([Ii]terators?|[Ii]terables?|[Gg]enerators?|[Yy]ields?)\b",
    "concurrency": r"\b([Tt]hreads?|[Ll]ocks?|[Pp]rocess(es)?|[Cc]oroutines?|async|await)\b",
}


def labels_of(text):
    return sorted(name for name, rule in RULES.items() if re.search(rule, text))


def docstring_multilabel():
    """`[{"text", "labels"}]`: each distinct text once, in a fixed order."""
    seen, rows = set(), []
    for _, _, obj in stdlib_objects():
        doc = inspect.getdoc(obj) if inspect.isfunction(obj) or inspect.isclass(obj) else None
        if not doc:
            continue
        text = " ".join(doc.split()[:WORDS])
        if len(text.split()) < 4 or text in seen or "\t" in text:
            continue
        seen.add(text)
        rows.append({"text": text, "labels": labels_of(text)})
    return rows


def build_multilabel_task(out_dir, train=800, dev=400, seed=0):
    """Writes `train.jsonl` and `dev.jsonl` (a seeded sample); returns their paths."""
    rows = docstring_multilabel()
    random.Random(seed).shuffle(rows)
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for name, part in (("train", rows[:train]), ("dev", rows[train:train + dev])):
        paths.append(os.path.join(out_dir, f"{name}.jsonl"))
        with open(paths[-1], "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(r) + "\n" for r in part))
    return paths
