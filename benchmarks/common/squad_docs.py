"""A SQuAD v2.0 set of real documentation, built from this machine's Python.

Each paragraph describes `functions_per_paragraph` standard-library
functions, one sentence each, with the first sentence of the function's own
docstring ("The function shutil.rmtree does this: Recursively delete a
directory tree."). A question quotes one description ("Which function does
this: Recursively delete a directory tree?"); its answer is the function's
name, wherever the paragraph puts it. A third of the questions quote a
function that is not in the paragraph (unanswerable). With 8 functions a
paragraph needs two windows at seq_length 128. Train and dev paragraphs are
disjoint combinations and orders of the same functions (the model learns to
read, not to remember); the same seed gives the same files.

Used by the quality benchmark (`bench_quality.py`) and the QA collapse test.

    >>> import tempfile
    >>> sizes = build_squad_docs(tempfile.mkdtemp(), train_paragraphs=4, dev_paragraphs=2)
    >>> sizes["train_questions"], sizes["dev_questions"], sizes["unanswerable"]
    (12, 6, 6)
"""

import inspect
import json
import os
import random

MODULES = ("os", "os.path", "shutil", "json", "math", "random", "re", "textwrap", "heapq",
           "bisect", "functools", "glob", "zlib", "base64", "statistics", "copy", "string",
           "time", "operator", "fnmatch", "difflib", "html", "calendar", "keyword", "colorsys")


def documented_functions():
    """`[(dotted name, first docstring sentence)]`: public functions whose
    first docstring sentence has 5-25 words and does not name the function."""
    import importlib

    found, seen = [], set()
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in sorted(dir(module)):
            obj = getattr(module, name)
            if name.startswith("_") or not callable(obj) or inspect.isclass(obj):
                continue
            doc = inspect.getdoc(obj) or ""
            first = " ".join(doc.split("\n\n")[0].split()).split(". ")[0].rstrip(".")
            words = first.split()
            if not 5 <= len(words) <= 25 or name in first or "(" in words[0] or first in seen:
                continue
            if not first[0].isupper():
                continue
            seen.add(first)
            found.append((f"{module_name}.{name}", first))
    return found


def _paragraphs(functions, n, per_paragraph, rng, prefix):
    paragraphs = []
    for p in range(n):
        chosen = rng.sample(functions, per_paragraph)
        context = " ".join(f"The function {name} does this: {desc}." for name, desc in chosen)
        qas = []
        for i, (name, desc) in enumerate(rng.sample(chosen, 2)):
            start = context.index(f"function {name} ") + len("function ")
            qas.append({"id": f"{prefix}{p}a{i}", "question": f"Which function does this: {desc}?",
                        "is_impossible": False, "answers": [{"text": name, "answer_start": start}]})
        absent = rng.choice([f for f in functions if f not in chosen])
        qas.append({"id": f"{prefix}{p}n", "question": f"Which function does this: {absent[1]}?",
                    "is_impossible": True, "answers": []})
        paragraphs.append({"context": context, "qas": qas})
    return [{"title": "Python standard library", "paragraphs": paragraphs}]


def build_squad_docs(out_dir, train_paragraphs=150, dev_paragraphs=60, functions_per_paragraph=8,
                     seed=0):
    """Writes `train.json` and `dev.json` (SQuAD v2.0) into `out_dir`; returns the sizes."""
    functions = documented_functions()
    rng = random.Random(seed)
    os.makedirs(out_dir, exist_ok=True)
    sizes = {"functions": len(functions)}
    unanswerable = 0
    for split, n in (("train", train_paragraphs), ("dev", dev_paragraphs)):
        articles = _paragraphs(functions, n, functions_per_paragraph, rng, split[0])
        with open(os.path.join(out_dir, f"{split}.json"), "w", encoding="utf-8") as f:
            json.dump({"version": "v2.0", "data": articles}, f, ensure_ascii=False)
        qas = [qa for p in articles[0]["paragraphs"] for qa in p["qas"]]
        sizes[f"{split}_questions"] = len(qas)
        unanswerable += sum(qa["is_impossible"] for qa in qas)
    sizes["unanswerable"] = unanswerable
    return sizes


if __name__ == "__main__":  # python -m benchmarks.common.squad_docs data/squad_docs
    import sys

    print(build_squad_docs(sys.argv[1]))
