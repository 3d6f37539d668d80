"""A 5-class sentence task from the docstrings of the Python standard library
(every machine has them): which family of standard-library modules a
docstring sentence comes from.

The rule: a sentence's label is the family (`FAMILIES`: files/OS,
networking/mail, text, numbers/dates, concurrency) of the top-level module or
package of the source file whose docstring holds it. Sentences are the prose
of docstrings (code, tables and doctest lines dropped), 5 to 60 words, no tabs.

`build_docstring_task` writes few labelled sentences per class and a larger
unlabelled pool of the same families' sentences, the in-domain text a user
has but has not labelled (task distillation):

    python -m tfbert.datasets.docstring_families data/docstrings

    >>> sizes = build_docstring_task(tempfile.mkdtemp(), train_per_class=2,
    ...                              dev_per_class=3, pool_per_class=4)
    >>> sizes["train"], sizes["dev"], sizes["transfer"]
    (10, 15, 20)
"""

import ast
import collections
import functools
import glob
import os
import random
import re
import sysconfig
import tempfile  # noqa: F401  (the doctest)

# The task's classes: module families of the standard library (file or package names).
FAMILIES = {
    "files_os": ("os", "shutil", "pathlib", "glob", "tempfile", "fnmatch", "filecmp", "stat",
                 "fileinput", "zipfile", "tarfile", "posixpath", "genericpath", "ntpath"),
    "network_mail": ("socket", "ssl", "http", "urllib", "email", "smtplib", "ftplib", "imaplib",
                     "poplib", "xmlrpc", "socketserver", "mailbox", "nntplib", "mimetypes"),
    "text": ("re", "string", "textwrap", "difflib", "codecs", "locale", "gettext", "html", "csv",
             "shlex", "sre_parse", "sre_compile", "unicodedata", "tokenize"),
    "numbers_dates": ("decimal", "_pydecimal", "fractions", "statistics", "random", "numbers",
                      "heapq", "bisect", "datetime", "_pydatetime", "calendar", "_strptime",
                      "colorsys", "cmath"),
    "concurrency": ("threading", "multiprocessing", "asyncio", "concurrent", "queue",
                    "subprocess", "sched", "selectors", "_threading_local", "signal"),
}
SKIP = ("test", "idlelib", "tkinter", "turtledemo", "lib2to3", "site-packages", "dist-packages",
        "ensurepip", "__pycache__")
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'`])")

# The task-distillation example on this data (docs/smaller_models.md,
# configs/finetune_docstrings.yaml and configs/distill_docstrings.yaml): 20
# gold sentences per class, 200 unlabelled per class, 60 dev per class. The
# students' steps are explicit (steps_per_epoch x epochs) so the distilled
# and the gold-only student take the same optimizer steps; fewer epochs keep
# dev scoring (the best epoch is kept) cheap.
TASK_SIZES = dict(train_per_class=20, dev_per_class=60, pool_per_class=200)
SEQ_LENGTH = 64
TEACHER_TRAIN = dict(batch_size=16, learning_rate=1e-4, epochs=8, seed=1)
STUDENT_TRAIN = dict(batch_size=16, learning_rate=5e-4, epochs=4, steps_per_epoch=75)
STUDENT_LAYERS = [0, 5]  # teacher layers the 2-layer student starts from
DISTILL = dict(temperature=1.0, soft_weight=1.0, hard_weight=0.5)


def sentences_of(text):
    """Prose paragraphs -> sentences (code, tables and doctest lines dropped)."""
    out = []
    for paragraph in re.split(r"\n\s*\n", text):
        lines = paragraph.strip().splitlines()
        if not lines or any(l.lstrip().startswith((">>>", "...", "$ ", "#", "|", "+--")) for l in lines):
            continue
        if paragraph.startswith(("    ", "\t")) or "****" in paragraph or "====" in paragraph:
            continue
        text = " ".join(" ".join(lines).split())
        out += [s for s in SENTENCE.split(text) if len(s.split()) >= 3]
    return out


def family_of(path, stdlib):
    """The family of the standard-library file `path`, or None."""
    top = os.path.relpath(path, stdlib).split(os.sep)[0].removesuffix(".py")
    for family, modules in FAMILIES.items():
        if top in modules:
            return family
    return None


def stdlib_docstrings(keep=None):
    """`(path, [docstring, ...])` for every standard-library source file, or
    for those whose path `keep(path)` accepts (the others are not parsed)."""
    stdlib = sysconfig.get_paths()["stdlib"]
    for path in sorted(glob.glob(os.path.join(stdlib, "**", "*.py"), recursive=True)):
        if any(part in SKIP for part in os.path.relpath(path, stdlib).split(os.sep)):
            continue
        if keep is not None and not keep(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        docs = [ast.get_docstring(n) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
        yield path, [d for d in docs if d]


@functools.lru_cache(maxsize=1)  # parsing the stdlib takes seconds; callers copy the lists
def family_sentences():
    """`{family: sorted distinct sentences}` of the task's module families
    (5 to 60 words, no tabs: they go into TSV rows)."""
    stdlib = sysconfig.get_paths()["stdlib"]
    by_family = collections.defaultdict(set)
    for path, docstrings in stdlib_docstrings(keep=lambda p: family_of(p, stdlib) is not None):
        family = family_of(path, stdlib)
        for doc in docstrings:
            by_family[family].update(s for s in sentences_of(doc)
                                     if 5 <= len(s.split()) <= 60 and "\t" not in s)
    return {family: sorted(s) for family, s in sorted(by_family.items())}


def build_docstring_task(out_dir, train_per_class=30, dev_per_class=60, pool_per_class=120,
                         seed=0):
    """Writes `train.tsv` and `dev.tsv` (`sentence<TAB>label`, with a header)
    and `transfer.txt` (unlabelled, one sentence per line) into `out_dir`;
    disjoint sentences, the same number per class, deterministic for a seed.
    Returns the row counts."""
    rng = random.Random(seed)
    rows = {"train": [], "dev": [], "transfer": []}
    for family, sentences in family_sentences().items():
        sentences = list(sentences)
        rng.shuffle(sentences)
        need = train_per_class + dev_per_class + pool_per_class
        if len(sentences) < need:
            raise ValueError(f"family {family!r} has {len(sentences)} sentences, {need} needed.")
        cuts = (train_per_class, train_per_class + dev_per_class, need)
        rows["train"] += [(s, family) for s in sentences[:cuts[0]]]
        rows["dev"] += [(s, family) for s in sentences[cuts[0]:cuts[1]]]
        rows["transfer"] += [(s, family) for s in sentences[cuts[1]:cuts[2]]]
    os.makedirs(out_dir, exist_ok=True)
    for split, items in rows.items():
        rng.shuffle(items)
        if split == "transfer":  # no labels: the text a user has not labelled
            text = "".join(f"{s}\n" for s, _ in items)
            name = "transfer.txt"
        else:
            text = "sentence\tlabel\n" + "".join(f"{s}\t{label}\n" for s, label in items)
            name = f"{split}.tsv"
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.write(text)
    return {split: len(items) for split, items in rows.items()}


if __name__ == "__main__":  # python -m tfbert.datasets.docstring_families data/docstrings
    import sys

    print(build_docstring_task(sys.argv[1], **TASK_SIZES))
