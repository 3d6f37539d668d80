r"""The payoff of pretraining: dev accuracy of a fine-tuned `tiny` model
against pretraining steps (0 = random init), on text every machine has.

    python tools/benchmark.py --what=pretrain_payoff
    python benchmarks/bench_pretrain_payoff.py --steps=2500,5000,10000,15000 --plot=payoff.png

1. Corpus (unlabelled): the docstrings of the Python standard library's
   source files, the Python language reference (`pydoc_data`) and the text
   files under /usr/share/doc, one sentence per line, in file order.
2. Task (labelled, held out): a 5-class sentence task, which family of
   standard-library modules a docstring sentence comes from (files/OS,
   networking/mail, text processing, numbers/dates, concurrency). Those
   modules' docstrings are left out of the corpus.
3. A WordPiece vocab learned from the corpus (tools/build_vocab.py), the
   shards (tools/create_pretraining_data.py), one `tiny` pretraining run
   (tools/pretrain.py) whose saved steps become tfbert checkpoints
   (`--export_step`), each fine-tuned with the recipe for its size
   (`tfbert.train.recipe`: lr 1e-3, epochs for >= 300 steps), and once from
   random init, at two label budgets: a few labels (`--train_sizes`, default
   250 sentences, the first of the shuffled train file) and all 1,400. The
   tools run as subprocesses, as a user would run them.

Writes a table (the lines returned) and a PNG of dev accuracy against steps,
one curve per label budget.
"""

import glob
import gzip
import os
import random
import re
import subprocess
import sys
import sysconfig
import tempfile
import time

from tfbert.atomic import atomic_file
from tfbert.datasets.docstring_families import (family_of, family_sentences, sentences_of,
                                                stdlib_docstrings)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def build_data(work, max_doc_bytes=4_000_000, per_class=400, seed=0):
    """Writes corpus.txt (pretraining) and train.tsv / dev.tsv (task); returns counts."""
    import pydoc_data.topics

    stdlib = sysconfig.get_paths()["stdlib"]
    documents = []
    for path, docstrings in stdlib_docstrings():
        if family_of(path, stdlib):  # held out: task sentences never reach the corpus
            continue
        for doc in docstrings:
            sentences = sentences_of(doc)
            if len(sentences) >= 2:
                documents.append(sentences)
    labelled = family_sentences()
    for name in sorted(pydoc_data.topics.topics):
        sentences = sentences_of(pydoc_data.topics.topics[name])
        if len(sentences) >= 2:
            documents.append(sentences)
    documents += list(share_doc_documents(max_doc_bytes))
    with open(os.path.join(work, "corpus.txt"), "w", encoding="utf-8") as f:
        f.write("\n\n".join("\n".join(d) for d in documents) + "\n")
    with open(os.path.join(work, "vocab_input.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(s for d in documents for s in d) + "\n")

    rng = random.Random(seed)
    rows = {"train": [], "dev": []}
    for family in sorted(labelled):
        sentences = list(labelled[family])
        rng.shuffle(sentences)
        sentences = sentences[:per_class]
        cut = int(0.7 * len(sentences))
        rows["train"] += [(s, family) for s in sentences[:cut]]
        rows["dev"] += [(s, family) for s in sentences[cut:]]
    for split, items in rows.items():
        rng.shuffle(items)
        with open(os.path.join(work, f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.write("sentence\tlabel\n" + "".join(f"{s}\t{l}\n" for s, l in items))
    corpus_bytes = os.path.getsize(os.path.join(work, "corpus.txt"))
    return {"documents": len(documents), "corpus_mb": corpus_bytes / 1e6,
            "train": len(rows["train"]), "dev": len(rows["dev"]),
            "classes": {f: min(per_class, len(labelled[f])) for f in sorted(labelled)}}


def tool(name, *flags):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": ROOT}
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", name), *flags],
                            env=env, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"tools/{name} failed:\n{result.stderr[-3000:]}")
    return result.stdout


def train_subset(work, size):
    """`train.tsv` cut to its first `size` rows (the file is shuffled); None: all."""
    if not size:
        return os.path.join(work, "train.tsv")
    with open(os.path.join(work, "train.tsv"), encoding="utf-8") as f:
        lines = f.readlines()
    if size >= len(lines) - 1:
        return os.path.join(work, "train.tsv")
    path = os.path.join(work, f"train_{size}.tsv")
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(lines[:size + 1])
    return path


def finetune_dev_accuracy(work, name, seeds, learning_rate=None, epochs=None, train_size=None,
                          **source):
    import keras

    from tfbert.tasks.classification import ClassificationTask
    from tfbert.tasks.runner import TrainConfig, finetune

    scores, summary = [], None
    train_file = train_subset(work, train_size)
    for seed in seeds:
        task = ClassificationTask(dict(train_file=train_file,
                                       dev_file=os.path.join(work, "dev.tsv"), seq_length=64))
        train = TrainConfig(batch_size=32, seed=seed, verbose=0, tensorboard=False,
                            learning_rate=learning_rate, epochs=epochs)  # None: the recipe
        result = finetune(task, train,
                          os.path.join(work, "ft", f"{name}-{train_size or 'all'}-{seed}"),
                          **source)
        scores.append(result.best_score)
        summary = result.summary
        keras.backend.clear_session()
    return scores, summary


def plot(curves, path, title):
    """`curves`: `{label: [(step, [score per seed]), ...]}`, step 0 = random init."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.8), dpi=100)
    for (label, points), color in zip(curves.items(), ("#1f77b4", "#ff7f0e", "#2ca02c")):
        steps = [p[0] for p in points]
        means = [sum(p[1]) / len(p[1]) for p in points]
        for step, scores in points:
            ax.scatter([step] * len(scores), scores, color="#999999", s=12, zorder=2)
        ax.plot(steps, means, marker="o", color=color, zorder=3, label=f"{label} (mean)")
        ax.axhline(means[0], color=color, linestyle="--", linewidth=1,
                   label=f"{label}: random init")
    ax.set_xlabel("pretraining steps (tiny, batch 32 x 64)")
    ax.set_ylabel("dev accuracy (5 classes)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=7)
    fig.tight_layout()
    with atomic_file(path, suffix=".png") as tmp:
        fig.savefig(tmp)
    plt.close(fig)


def run(steps=(2500, 5000, 10000, 15000), seeds=(1, 2), plot_path=None, work=None,
        vocab_size=8000, train_sizes=(250, None)):
    """Returns the report lines; writes the PNG to `plot_path` (default: in the work dir)."""
    work = work or tempfile.mkdtemp(prefix="bench_payoff_")
    os.makedirs(work, exist_ok=True)
    steps = sorted(steps)
    timings = {}
    t = time.perf_counter()
    counts = build_data(work)
    tool("build_vocab.py", f"--input_files={work}/vocab_input.txt",
         f"--output_file={work}/vocab.txt", f"--vocab_size={vocab_size}")
    tool("create_pretraining_data.py", f"--input_files={work}/corpus.txt",
         f"--vocab_file={work}/vocab.txt", f"--output_dir={work}/data", "--max_seq_length=64",
         "--num_shards=4", "--eval_fraction=0.01")
    timings["data"] = time.perf_counter() - t
    # One run; its periodic checkpoints are the intermediate points.
    every = steps[0]
    warmup = min(300, steps[-1] // 10)
    assert all(s % every == 0 for s in steps), "steps must be multiples of the first"
    t = time.perf_counter()
    tool("pretrain.py", f"--config={ROOT}/configs/pretrain_tiny.yaml",
         f"--train_files={work}/data/*.tfrecord", f"--vocab_file={work}/vocab.txt",
         f"--model_dir={work}/pretrain", f"--num_train_steps={steps[-1]}",
         f"--steps_per_epoch={every}", "--set", f"keep_checkpoints={len(steps) + 1000}",
         "--set", "verbose=2", "--set", "max_predictions_per_seq=10",
         "--set", f"num_warmup_steps={warmup}")
    timings["pretrain"] = time.perf_counter() - t
    for step in steps[:-1]:
        tool("pretrain.py", f"--model_dir={work}/pretrain", f"--export_step={step}")
    checkpoints = {s: f"{work}/pretrain/pretrained-step-{s}" for s in steps[:-1]}
    checkpoints[steps[-1]] = f"{work}/pretrain/pretrained"

    from tfbert.checkpoint import read_checkpoint

    config = read_checkpoint(checkpoints[steps[-1]]).config
    t = time.perf_counter()
    curves, recipes = {}, {}
    for size in train_sizes:
        label = f"{size or counts['train']} labels"
        scores, summary = finetune_dev_accuracy(work, "random", seeds, encoder_config=config,
                                                vocab_file=f"{work}/vocab.txt", train_size=size)
        points = [(0, scores)]
        for step in steps:
            points.append((step, finetune_dev_accuracy(work, f"step{step}", seeds,
                                                       init_checkpoint=checkpoints[step],
                                                       train_size=size)[0]))
        curves[label] = points
        recipes[label] = "; ".join(f"{k} {v}" for k, v in summary["recipe"].items())
    timings["finetune"] = time.perf_counter() - t

    import csv

    with open(f"{work}/pretrain/log.csv") as f:
        log = list(csv.DictReader(f))
    last = log[-1]
    title = (f"tiny: {counts['corpus_mb']:.1f} MB corpus; task "
             f"{counts['train']} train / {counts['dev']} dev sentences")
    plot_path = plot_path or os.path.join(work, "pretraining_payoff.png")
    plot(curves, plot_path, title)
    lines = [
        f"corpus: {counts['documents']} documents, {counts['corpus_mb']:.1f} MB "
        f"(stdlib docstrings minus the task's modules, language reference, /usr/share/doc); "
        f"vocab {vocab_size}",
        f"task: {len(counts['classes'])} classes {counts['classes']}, "
        f"{counts['train']} train / {counts['dev']} dev sentences",
        f"pretraining (tiny, batch 32 x 64, lr 2e-3, warmup {warmup}): "
        f"{steps[-1]} steps in "
        f"{timings['pretrain']:.0f} s; last epoch MLM acc {float(last['mlm_accuracy']):.3f}, "
        f"NSP acc {float(last['nsp_accuracy']):.3f}; held-out MLM acc "
        f"{float(last.get('val_mlm_accuracy', 'nan')):.3f}, NSP {float(last.get('val_nsp_accuracy', 'nan')):.3f}",
        *(f"fine-tuning recipe, {label}: {recipe}" for label, recipe in recipes.items()),
        "",
        "| pretraining steps | " + " | ".join(
            f"{label}: dev accuracy (mean of {len(seeds)} seeds; per seed)" for label in curves)
        + " |",
        "|---|" + "---|" * len(curves),
    ]
    for i, step in enumerate([0] + steps):
        name = "0 (random init)" if step == 0 else str(step)
        cells = [f"{sum(p[i][1]) / len(p[i][1]):.3f} ({', '.join(f'{s:.3f}' for s in p[i][1])})"
                 for p in curves.values()]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", f"plot: {plot_path}; data, checkpoints and logs: {work}",
              f"(data {timings['data']:.0f} s, fine-tuning {timings['finetune']:.0f} s)"]
    return lines


if __name__ == "__main__":
    from absl import app, flags

    flags.DEFINE_list("steps", ["2500", "5000", "10000", "15000"],
                      "Pretraining steps to fine-tune from (multiples of the first).")
    flags.DEFINE_list("seeds", ["1", "2"], "Fine-tuning seeds per point.")
    flags.DEFINE_string("plot", None, "PNG path (default: in the work dir).")
    flags.DEFINE_string("work_dir", None, "Where data, runs and logs go (default: a temp dir).")
    flags.DEFINE_list("train_sizes", ["250", "all"],
                      "Label budgets: training sentences per fine-tuning run ('all': the file).")

    def main(argv):
        del argv
        F = flags.FLAGS
        sizes = [None if s == "all" else int(s) for s in F.train_sizes]
        print("\n".join(run([int(s) for s in F.steps], [int(s) for s in F.seeds], F.plot,
                            F.work_dir, train_sizes=sizes)))

    app.run(main)
