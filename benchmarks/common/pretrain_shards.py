"""The budget recipe's data made as a user makes it: a few MB of real text
(standard-library docstrings, the text files under /usr/share/doc), an
8,000-token vocabulary from tools/build_vocab.py and shards of 64 wordpieces
from tools/create_pretraining_data.py (`bench_pretrain_step`)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_tool(name, *flags):
    """tools/<name> in a subprocess, as a user runs it; its stdout."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": ROOT}
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", name), *flags],
                            env=env, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"tools/{name} failed:\n{result.stderr[-3000:]}")
    return result.stdout


def write_corpus(path, max_doc_bytes=3_000_000):
    """One sentence per line, a blank line between documents; returns its size in bytes."""
    from benchmarks.common.corpora import share_doc_documents
    from tfbert.datasets.docstring_families import sentences_of, stdlib_docstrings

    documents = []
    for _, docstrings in stdlib_docstrings():
        for doc in docstrings:
            sentences = sentences_of(doc)
            if len(sentences) >= 2:
                documents.append(sentences)
    documents += list(share_doc_documents(max_doc_bytes))
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n\n".join("\n".join(d) for d in documents) + "\n")
    return os.path.getsize(path)


def budget_shards(work, seq_length=64, vocab_size=8000):
    """`(shard glob, vocab file)` under the absolute directory `work`, each
    piece made once (a rerun reuses them)."""
    work = os.path.abspath(work)
    os.makedirs(work, exist_ok=True)
    corpus = os.path.join(work, "corpus.txt")
    vocab = os.path.join(work, "vocab.txt")
    data = os.path.join(work, f"data{seq_length}")
    if not os.path.isfile(corpus):
        write_corpus(corpus)
    if not os.path.isfile(vocab):
        run_tool("build_vocab.py", f"--input_files={corpus}", f"--output_file={vocab}",
                 f"--vocab_size={vocab_size}")
    if not os.path.isdir(data):
        run_tool("create_pretraining_data.py", f"--input_files={corpus}",
                 f"--vocab_file={vocab}", f"--output_dir={data}",
                 f"--seq_length={seq_length}")
    return os.path.join(data, "*.tfrecord"), vocab
