"""A real long-document classification set: the manual section of a man page.

The pages under `/usr/share/man` (English, as the installed packages ship
them) in four sections: 1 (user commands), 3 (C library functions), 5 (file
formats) and 8 (system administration). The text is the page's roff source
with the markup removed (`roff_text`) and the `.TH` title line, which holds
the section number, left out; pages that only point to another page (`.so`)
are skipped, and so are the Google Cloud SDK's generated `gcloud*` pages
(thousands of one template, where a machine has them). A page keeps its first `max_words` words and needs `min_words`.
The label is the section, which the text does not spell out: a reader finds
it from what the page describes and how (options, prototypes, file syntax,
daemons), anywhere in the page. Pages are drawn per section at random
(seeded), the same number per section, disjoint between train and dev.

    >>> sizes = build_long_docs(tempfile.mkdtemp(), train_per_class=3, dev_per_class=2)
    >>> sizes["train"], sizes["dev"], sizes["median_words"] >= 300
    (12, 8, True)
"""

import glob
import gzip
import os
import random
import re
import statistics
import tempfile  # noqa: F401  (the doctest)

SECTIONS = {"1": "user_command", "3": "library_function", "5": "file_format",
            "8": "administration"}
# Request lines whose arguments are not running text (definitions, layout).
NOT_TEXT = {"TH", "ds", "nr", "de", "am", "if", "ie", "el", "so", "ta", "ll", "ne", "ft", "ps",
            "vs", "hy", "nh", "ad", "na", "in", "ti", "sp", "mso", "tr", "cc", "ig", "cs", "ss",
            "fam", "IX", "rm", "rn", "als", "ev", "de1", "ec", "eo", "char", "pc", "lf", "do"}
ESCAPES = [(re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""),  # fonts
           (re.compile(r"\\\*(\[[^\]]*\]|\(..|.)"), ""),  # strings
           (re.compile(r"\\s[-+]?\d+"), ""),  # sizes
           (re.compile(r"\\\((..)"), " "),  # special characters
           (re.compile(r"\\\[[^\]]*\]"), " "),
           (re.compile(r"\\[-]"), "-"), (re.compile(r"\\[e\\]"), "\\\\"),
           (re.compile(r"\\[&|^c%:)]"), ""), (re.compile(r"\\ "), " "),
           (re.compile(r"\\."), "")]


def roff_text(source):
    """Running text of a man page's roff source: comments, definitions and
    layout requests dropped, the text of font and heading macros kept,
    escapes removed. None for a page that only sources another (`.so`)."""
    words, skipping = [], False
    for line in source.splitlines():
        if skipping:  # inside a macro definition (.de ... ..) or an .ig block
            skipping = not line.startswith("..")
            continue
        if line.startswith((".\\\"", "'\\\"", '.\\"', "\\\"")):
            continue
        if line.startswith((".", "'")):
            request, _, rest = line[1:].strip().partition(" ")
            if request == "so":
                return None
            if request in ("de", "de1", "am", "ig"):
                skipping = True
                continue
            if request in NOT_TEXT or not rest:
                continue
            line = rest.replace('"', " ")
        for pattern, replacement in ESCAPES:
            line = pattern.sub(replacement, line)
        words += line.split()
    return " ".join(words)


def man_pages(section):
    """`[(page name, text)]` of one section's English pages, sorted by name."""
    pages = []
    pattern = os.path.join("/usr/share/man", f"man{section}", f"*.{section}.gz")
    for path in sorted(glob.glob(pattern)):
        if os.path.basename(path).startswith("gcloud"):
            continue
        try:
            with gzip.open(path, "rt", encoding="utf-8") as f:
                text = roff_text(f.read())
        except (OSError, UnicodeDecodeError, EOFError):
            continue
        if text and "\t" not in text:
            pages.append((os.path.basename(path), text))
    return pages


def build_long_docs(out_dir, train_per_class=100, dev_per_class=50, min_words=300,
                    max_words=1200, seed=0):
    """Writes `train.tsv` and `dev.tsv` (`text<TAB>label`, header) into
    `out_dir`; returns the sizes and the median and longest page in words."""
    rng = random.Random(seed)
    rows = {"train": [], "dev": []}
    for section, label in SECTIONS.items():
        texts = [" ".join(t.split()[:max_words]) for _, t in man_pages(section)
                 if len(t.split()) >= min_words]
        need = train_per_class + dev_per_class
        if len(texts) < need:
            raise ValueError(f"man{section}: {len(texts)} pages of >= {min_words} words, "
                             f"{need} needed.")
        chosen = rng.sample(texts, need)
        rows["train"] += [(t, label) for t in chosen[:train_per_class]]
        rows["dev"] += [(t, label) for t in chosen[train_per_class:]]
    os.makedirs(out_dir, exist_ok=True)
    for split, items in rows.items():
        rng.shuffle(items)
        with open(os.path.join(out_dir, f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.write("text\tlabel\n" + "".join(f"{t}\t{label}\n" for t, label in items))
    words = [len(t.split()) for t, _ in rows["train"] + rows["dev"]]
    return {"train": len(rows["train"]), "dev": len(rows["dev"]),
            "median_words": statistics.median(words), "max_words": max(words)}
