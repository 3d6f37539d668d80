"""Real text every machine with Python has, for the benchmarks' corpora.

- `real_sentences(n)`: English prose sentences of the Python documentation and
  the standard library's docstrings (the tokenizer, peers and latency rows).
- `share_doc_documents(max_bytes)`: the text files under /usr/share/doc as
  sentence lists (the pretraining-payoff corpus, `passage_corpus`).
"""

import ast
import glob
import gzip
import os
import re
import sysconfig

from tfbert.datasets.docstring_families import sentences_of


def real_sentences(num_sentences):
    """Sentences of English prose from the Python docs and stdlib docstrings."""
    import pydoc_data.topics

    texts = list(pydoc_data.topics.topics.values())
    stdlib = sysconfig.get_paths()["stdlib"]
    for root, _, files in sorted(os.walk(stdlib)):
        if "test" in root or "site-packages" in root:
            continue
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            try:
                with open(os.path.join(root, name), encoding="utf-8") as f:
                    tree = ast.parse(f.read())
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)):
                    doc = ast.get_docstring(node)
                    if doc:
                        texts.append(doc)
            if sum(len(t) for t in texts) > 200 * num_sentences:
                break
    sentences = []
    for text in texts:
        for sentence in re.split(r"(?<=[.!?])\s+", " ".join(text.split())):
            if len(sentence) >= 20:
                sentences.append(sentence)
    if len(sentences) < num_sentences:
        raise RuntimeError(f"Only {len(sentences)} sentences found, need {num_sentences}.")
    return sentences[:num_sentences]


def share_doc_documents(max_bytes):
    """Paragraph groups of the text files under /usr/share/doc (plain or .gz)."""
    total = 0
    for path in sorted(glob.glob("/usr/share/doc/**/*", recursive=True)):
        name = os.path.basename(path).lower()
        if not os.path.isfile(path) or not re.search(r"(readme|\.txt|\.md|\.rst|news|faq)", name):
            continue
        if name.startswith("changelog") or "copyright" in name:
            continue
        try:
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8", errors="strict") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError, EOFError):
            continue
        sentences = sentences_of(text)
        if len(sentences) >= 2:
            total += sum(len(s) for s in sentences)
            yield sentences
            if total >= max_bytes:
                return
