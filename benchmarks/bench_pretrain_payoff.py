r"""The payoff of pretraining on text every machine has: dev accuracy of
models fine-tuned from it, against random init.

    python tools/benchmark.py --what=pretrain_payoff     # the step recipe
    python benchmarks/bench_pretrain_payoff.py --steps=2500,5000,10000,15000 --plot=payoff.png
    python benchmarks/bench_pretrain_payoff.py --search --work_dir=w      # budget recipe search
    python benchmarks/bench_pretrain_payoff.py --budgets=15,30,60 --seeds=0,1,2 --work_dir=w
    python benchmarks/bench_pretrain_payoff.py --domain_minutes=30 --seeds=0,1,2 --work_dir=w

1. Corpus (unlabelled): the docstrings of the Python standard library's
   source files, the Python language reference (`pydoc_data`) and the text
   files under /usr/share/doc, one sentence per line, in file order.
2. Tasks (labelled, held out), `TASKS`: `families`, which family of
   standard-library modules a docstring sentence comes from (files/OS,
   networking/mail, text processing, numbers/dates, concurrency; those
   modules' docstrings are left out of the corpus); `manpages`, the manual
   section of a man page from its first 200 words (`benchmarks/common/long_docs.py`;
   man pages are not in the corpus).
3. A WordPiece vocab learned from the corpus (tools/build_vocab.py) and the
   shards (tools/create_pretraining_data.py). The tools run as
   subprocesses, as a user would run them; fine-tuning uses the recipe for
   the model's size (`tfbert.train.recipe`).

The step recipe (`run`): one `tiny` run of configs/pretrain_tiny.yaml whose
saved steps become checkpoints (`--export_step`), fine-tuned on `families`
at two label budgets (`--train_sizes`: 250 and all 1,400). The budget
recipe (`run_budgets`): configs/pretrain_budget.yaml for each of
`--budgets` minutes, today's tiny recipe for as many steps as fit in
`--tiny_recipe_minutes`, random init and all-MiniLM-L6-v2, each fine-tuned
on both tasks over `--seeds`. `search` is the table that chose that recipe;
`domain_adaptation` continues all-MiniLM-L6-v2 on the corpus. A work dir
keeps every run and score, so a rerun only adds what is missing.

Each writes a table (the lines returned); the step and budget modes also a
PNG of dev accuracy against steps or minutes.
"""

import csv
import os
import random
import re
import sys
import sysconfig
import tempfile
import time

from tfbert.atomic import atomic_file, write_json, write_text
from tfbert.datasets.docstring_families import (family_of, family_sentences, sentences_of,
                                                stdlib_docstrings)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_data(work, max_doc_bytes=4_000_000, per_class=400, seed=0):
    """Writes corpus.txt (pretraining) and train.tsv / dev.tsv (task); returns counts."""
    import pydoc_data.topics

    from benchmarks.common.corpora import share_doc_documents

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


def run_tool(name, *flags):
    # Imported when called: run as a script, `benchmarks` is importable only after
    # __main__ puts the repository on sys.path.
    from benchmarks.common.pretrain_shards import run_tool as run

    return run(name, *flags)


def train_subset(path, size):
    """The TSV at `path` cut to its first `size` rows (the file is shuffled); None: all."""
    if not size:
        return path
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    if size >= len(lines) - 1:
        return path
    subset = f"{os.path.splitext(path)[0]}_{size}.tsv"
    with open(subset, "w", encoding="utf-8") as f:
        f.writelines(lines[:size + 1])
    return subset


# The fine-tuning tasks: files written by `pretraining_data`.
TASKS = {
    "families": dict(train="train.tsv", dev="dev.tsv", text_column="sentence",
                     text_b_column=None, seq_length=64),
    # 160 labelled pages: with all 500, every 8-minute candidate of the search
    # and random init score alike (the section shows in a few words).
    "manpages": dict(train="manpages/train.tsv", dev="manpages/dev.tsv", text_column="text",
                     text_b_column=None, seq_length=128, train_size=160),
}


def finetune_dev_accuracy(work, name, seeds, learning_rate=None, epochs=None, train_size="task",
                          task="families", **source):
    """Dev accuracy per seed of `source` fine-tuned on `task` with the recipe
    for its size; `(scores, recipe summary)`. Scores are kept in
    `<work>/scores/` so that a rerun only adds what is missing (two processes at once
    must not share a task and a source: each would overwrite the other's scores)."""
    import json

    import keras

    from tfbert.tasks.classification import ClassificationTask
    from tfbert.tasks.runner import TrainConfig, finetune

    spec = TASKS[task]
    if train_size == "task":
        train_size = spec.get("train_size")
    tag = f"{task}-{name}-{train_size or 'all'}"
    cache = os.path.join(work, "scores", f"{tag}.json")
    done = {}
    if os.path.isfile(cache):
        with open(cache, encoding="utf-8") as f:
            done = json.load(f)
    train_file = train_subset(os.path.join(work, spec["train"]), train_size)
    for seed in seeds:
        if str(seed) in done:
            continue
        config = dict(train_file=train_file, dev_file=os.path.join(work, spec["dev"]),
                      text_column=spec["text_column"], text_b_column=spec["text_b_column"],
                      seq_length=spec["seq_length"])
        train = TrainConfig(batch_size=32, seed=seed, verbose=0, tensorboard=False,
                            learning_rate=learning_rate, epochs=epochs)  # None: the recipe
        result = finetune(ClassificationTask(config), train,
                          os.path.join(work, "ft", f"{tag}-{seed}"), **source)
        done[str(seed)] = result.best_score
        done["recipe"] = result.summary["recipe"]
        write_json(cache, done)
        keras.backend.clear_session()
    return [done[str(s)] for s in seeds], {"recipe": done.get("recipe", {})}


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
    data, counts = pretraining_data(work, 64, vocab_size)
    timings["data"] = time.perf_counter() - t
    # One run; its periodic checkpoints are the intermediate points.
    every = steps[0]
    warmup = min(300, steps[-1] // 10)
    assert all(s % every == 0 for s in steps), "steps must be multiples of the first"
    t = time.perf_counter()
    run_tool("pretrain.py", f"--config={ROOT}/configs/pretrain_tiny.yaml",
         f"--train_files={data}/*.tfrecord", f"--vocab_file={work}/vocab.txt",
         f"--model_dir={work}/pretrain", f"--num_train_steps={steps[-1]}",
         f"--steps_per_epoch={every}", "--set", f"pretrain.keep_checkpoints={len(steps) + 1000}",
         "--set", "train.verbose=2", "--set", "pretrain.max_predictions_per_seq=10",
         "--set", f"pretrain.warmup_steps={warmup}")
    timings["pretrain"] = time.perf_counter() - t
    for step in steps[:-1]:
        run_tool("pretrain.py", f"--model_dir={work}/pretrain", f"--export_step={step}")
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


def corpus_and_tasks(work):
    """The corpus and both tasks' files in `<work>` (made once); `build_data`'s
    counts with the man-page task's."""
    import json

    from benchmarks.common.long_docs import build_long_docs

    counts_path = os.path.join(work, "counts.json")
    if not os.path.isfile(counts_path):
        counts = build_data(work)
        # The second task: a man page's section from its first 200 words (out of
        # the corpus's domain; benchmarks/common/long_docs.py).
        counts["manpages"] = build_long_docs(os.path.join(work, "manpages"), 125, 75,
                                             min_words=100, max_words=200)
        write_json(counts_path, counts)
    with open(counts_path, encoding="utf-8") as f:
        return json.load(f)


def pretraining_data(work, seq_length, vocab_size=8000):
    """Corpus, tasks, vocab and `<work>/data<seq_length>/` shards (each made
    once); returns the shards' directory and the counts."""
    counts = corpus_and_tasks(work)
    if not os.path.isfile(os.path.join(work, "vocab.txt")):
        run_tool("build_vocab.py", f"--input_files={work}/vocab_input.txt",
             f"--output_file={work}/vocab.txt", f"--vocab_size={vocab_size}")
    return shards(work, f"data{seq_length}", f"{work}/vocab.txt", seq_length), counts


def shards(work, name, vocab_file, seq_length, *flags):
    """`<work>/<name>/`: the corpus's pretraining shards for `vocab_file` (made once)."""
    data = os.path.join(work, name)
    if not os.path.isdir(data):
        run_tool("create_pretraining_data.py", f"--input_files={work}/corpus.txt",
             f"--vocab_file={vocab_file}", f"--output_dir={data}",
             f"--seq_length={seq_length}", "--num_shards=4", "--eval_fraction=0.01", *flags)
    return data


def pretrain_run(work, name, config, sets=(), minutes=None, steps=None, seq_length=64,
                 init_checkpoint=None, data=None):
    """One tools/pretrain.py run into `<work>/runs/<name>` (skipped when its
    summary.json exists); returns that summary. From scratch on the work
    vocab's shards, or from `init_checkpoint` (its vocab) on `data`."""
    import json

    model_dir = os.path.join(work, "runs", name)
    summary_path = os.path.join(model_dir, "summary.json")
    if not os.path.isfile(summary_path):
        if init_checkpoint:
            source = [f"--init_checkpoint={init_checkpoint}"]
        else:
            data, _ = pretraining_data(work, seq_length)
            source = [f"--vocab_file={work}/vocab.txt"]
        flags = [f"--config={config}", f"--train_files={data}/*.tfrecord", *source,
                 f"--model_dir={model_dir}", "--set", "train.verbose=2",
                 "--set", "train.tensorboard=false"]
        flags += [f"--budget_minutes={minutes}"] if minutes else []
        flags += [f"--num_train_steps={steps}"] if steps else []
        for item in sets:
            flags += ["--set", item]
        run_tool("pretrain.py", *flags)
    with open(summary_path, encoding="utf-8") as f:
        return json.load(f)


def without_step_count(work, config):
    """`configs/<config>` less `pretrain.num_train_steps`, written to `<work>`: a
    budget run ends on time, and the config check refuses both."""
    import yaml

    with open(os.path.join(ROOT, "configs", config), encoding="utf-8") as f:
        values = yaml.safe_load(f)
    values.get("pretrain", {}).pop("num_train_steps", None)
    path = os.path.join(work, f"budget_{config}")
    write_text(path, yaml.safe_dump(values))
    return path


# The recipe search (`--search`): each candidate is `--set` items over
# configs/pretrain_tiny.yaml (less its step count), trained for the same budget.
PRE_LN = ("encoder.norm_first=true", "pretrain.next_sentence_task=none")
SEARCH = {
    "tiny recipe (post-LN, NSP)": (),
    "tiny, pre-LN, MLM only": PRE_LN,
    "tiny, pre-LN, MLM only, batch 128, lr 4e-3": PRE_LN + ("train.batch_size=128",
                                                         "train.learning_rate=4e-3"),
    "mini, pre-LN, MLM only, lr 1e-3": PRE_LN + ("preset=mini", "train.learning_rate=1e-3"),
    "tiny, pre-LN, MLM only, lr 4e-3": PRE_LN + ("train.learning_rate=4e-3",),
    "tiny, pre-LN, MLM only, sequence 128": PRE_LN + ("pretrain.max_predictions_per_seq=20",),
}


def search(work, minutes=10, names=None, seed=0):
    """The table that chose configs/pretrain_budget.yaml: every `SEARCH`
    candidate (or `names`) pretrained for `minutes`, then fine-tuned once
    (`seed`) on both tasks."""
    import json

    lines = [f"| candidate ({minutes:g} min budget) | updates | sequences/s | held-out MLM acc "
             "| families dev acc | manpages dev acc |", "|---|---|---|---|---|---|"]
    base_path = without_step_count(work, "pretrain_tiny.yaml")
    for name in names or SEARCH:
        i, sets = list(SEARCH).index(name), SEARCH[name]
        seq_length = 128 if "sequence 128" in name else 64
        summary = pretrain_run(work, f"search{i}-{minutes:g}", base_path,
                               ("train.steps_per_epoch=200",) + sets, minutes=minutes,
                               seq_length=seq_length)
        with open(os.path.join(work, "runs", f"search{i}-{minutes:g}", "pretrain_config.json"),
                  encoding="utf-8") as f:
            stored = json.load(f)
        batch = stored.get("train", stored)["batch_size"]  # runs stored flat: at the top
        cells = [f"{summary['step']}", f"{summary['step'] * batch / summary['seconds']:.0f}",
                 f"{summary['final_metrics'].get('val_mlm_accuracy', float('nan')):.3f}"
                 + (" (at 128)" if seq_length == 128 else "")]
        for task in TASKS:
            scores, _ = finetune_dev_accuracy(work, f"search{i}-{minutes:g}", [seed], task=task,
                                              init_checkpoint=summary["checkpoint"])
            cells.append(f"{scores[0]:.3f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def domain_adaptation(work, minutes=30, seeds=(0, 1, 2), new_words=500):
    """all-MiniLM-L6-v2 pretrained on for `minutes` on the benchmark's corpus
    (configs/pretrain_domain.yaml), as released and with `new_words` frequent
    corpus words in its `[unusedN]` slots (tools/extend_vocab.py), then
    fine-tuned on both tasks with `seeds`, beside MiniLM fine-tuned directly."""
    from benchmarks.common.minilm import minilm_checkpoint

    corpus_and_tasks(work)
    minilm = minilm_checkpoint(work)
    extended = os.path.join(work, "minilm_extended")
    if not os.path.isdir(extended):
        run_tool("extend_vocab.py", f"--checkpoint_dir={minilm}", f"--output_dir={extended}",
             f"--corpus={work}/corpus.txt", f"--max_new_words={new_words}", "--mode=unused")
    config = without_step_count(work, "pretrain_domain.yaml")
    sources = {"all-MiniLM-L6-v2": dict(init_checkpoint=minilm)}
    runs = {}
    for name, checkpoint in (("", minilm), ("_extended", extended)):
        data = shards(work, f"data_minilm{name}", f"{checkpoint}/vocab.txt", 128,
                      "--next_sentence_task=none")
        label = f"MiniLM + {minutes:g} min domain pretraining" + (
            f", {new_words} new words" if name else "")
        runs[label] = pretrain_run(work, f"domain{name}-{minutes:g}", config, minutes=minutes,
                                   init_checkpoint=checkpoint, data=data)
        sources[label] = dict(init_checkpoint=runs[label]["checkpoint"])
    scores = {task: {label: finetune_dev_accuracy(work, slug(label), seeds, task=task,
                                                  **source)[0]
                     for label, source in sources.items()} for task in TASKS}
    return score_table(scores, runs, "all-MiniLM-L6-v2", len(seeds))


def slug(label):
    """A file name for a table row's label."""
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def score_table(scores, runs, baseline, num_seeds):
    """Markdown rows: each source's dev accuracy on each task (mean, sd, worst
    seed) and its worst per-seed gain over `baseline` (same seeds)."""
    from benchmarks.common.seed_stats import format_seed_stats

    tasks = list(scores)
    lines = ["| model | pretraining (updates, s) | " + " | ".join(
        f"{task}: dev acc, mean +- sd (worst) of {num_seeds} seeds" for task in tasks)
        + " | " + " | ".join(f"{task}: gain over {baseline}, worst seed" for task in tasks)
        + " |", "|---|---|" + "---|" * (2 * len(tasks))]
    for name in scores[tasks[0]]:
        summary = runs.get(name)
        done = f"{summary['step']}, {summary['seconds']:.0f}" if summary else "-"
        gains = [min(a - b for a, b in zip(scores[t][name], scores[t][baseline]))
                 for t in tasks]
        lines.append(f"| {name} | {done} | "
                     + " | ".join(format_seed_stats(scores[t][name]) for t in tasks)
                     + " | " + " | ".join(f"{g:+.3f}" for g in gains) + " |")
    return lines


def run_budgets(budgets=(15, 30, 60), seeds=(0, 1, 2), work=None, plot_path=None,
                tiny_recipe_minutes=(15,), ceiling=True):
    """The budget recipe (configs/pretrain_budget.yaml) from scratch for each of
    `budgets` minutes; today's tiny recipe (configs/pretrain_tiny.yaml, steps
    set to what fits) for `tiny_recipe_minutes`; random init; all-MiniLM-L6-v2.
    Each fine-tuned on both tasks with `seeds`. Returns the report lines and
    writes a PNG of dev accuracy against the budget."""
    import json

    work = work or tempfile.mkdtemp(prefix="bench_payoff_")
    os.makedirs(work, exist_ok=True)
    budget_config = f"{ROOT}/configs/pretrain_budget.yaml"
    runs = {}
    for minutes in sorted(budgets):
        runs[f"budget recipe, {minutes:g} min"] = pretrain_run(
            work, f"budget-{minutes:g}", budget_config, minutes=minutes)
    if tiny_recipe_minutes:
        # Today's recipe is step-counted: as many steps as its speed fits in the
        # time, in whole epochs. The speed: a short budget run of the same
        # recipe, after its first epoch (which holds the XLA compilation).
        pretrain_run(work, "tiny-probe", without_step_count(work, "pretrain_tiny.yaml"),
                     minutes=2)
        probe = os.path.join(work, "runs", "tiny-probe")
        with open(os.path.join(probe, "pretrain_config.json"), encoding="utf-8") as f:
            stored = json.load(f)
        epoch = stored.get("train", stored)["steps_per_epoch"]  # runs stored flat: at the top
        with open(os.path.join(probe, "log.csv"), encoding="utf-8") as f:
            clock = [float(row["budget_seconds_spent"]) for row in csv.DictReader(f)]
        steps_per_second = epoch * (len(clock) - 1) / (clock[-1] - clock[0])
    for minutes in tiny_recipe_minutes:
        steps = int(60 * minutes * steps_per_second) // epoch * epoch
        runs[f"tiny recipe, {minutes:g} min"] = pretrain_run(
            work, f"tiny-{minutes:g}", f"{ROOT}/configs/pretrain_tiny.yaml", steps=steps)
    from tfbert.checkpoint import read_checkpoint

    config = read_checkpoint(runs[f"budget recipe, {max(budgets):g} min"]["checkpoint"]).config
    sources = {"random init": dict(encoder_config=config, vocab_file=f"{work}/vocab.txt")}
    sources.update({name: dict(init_checkpoint=summary["checkpoint"])
                    for name, summary in runs.items()})
    if ceiling:
        from benchmarks.common.minilm import minilm_checkpoint

        sources["all-MiniLM-L6-v2"] = dict(init_checkpoint=minilm_checkpoint(work))
    scores = {task: {name: finetune_dev_accuracy(work, slug(name), seeds, task=task,
                                                 **source)[0]
                     for name, source in sources.items()} for task in TASKS}
    lines = score_table(scores, runs, "random init", len(seeds))
    plot_path = plot_path or os.path.join(work, "pretraining_budget_payoff.png")
    plot_budgets(scores, budgets, tiny_recipe_minutes, plot_path)
    lines += ["", f"plot: {plot_path}; data, runs and logs: {work}"]
    return lines


def plot_budgets(scores, budgets, tiny_recipe_minutes, path):
    """Dev accuracy (mean, with each seed) against the budget, one panel per task."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def mean(values):
        return sum(values) / len(values)

    fig, axes = plt.subplots(1, len(scores), figsize=(9, 3.6), dpi=100)
    for ax, (task, by_name) in zip(axes, scores.items()):
        xs = [0] + sorted(budgets)
        ys = [by_name["random init"]] + [by_name[f"budget recipe, {m:g} min"]
                                          for m in sorted(budgets)]
        for x, values in zip(xs, ys):
            ax.scatter([x] * len(values), values, color="#999999", s=12, zorder=2)
        ax.plot(xs, [mean(v) for v in ys], marker="o", color="#1f77b4", zorder=3,
                label="budget recipe (0 = random init)")
        for m in tiny_recipe_minutes:
            ax.scatter([m], [mean(by_name[f"tiny recipe, {m:g} min"])], marker="s",
                       color="#ff7f0e", zorder=4, label=f"tiny step recipe, {m:g} min")
        if "all-MiniLM-L6-v2" in by_name:
            ax.axhline(mean(by_name["all-MiniLM-L6-v2"]), color="#2ca02c",
                       linestyle="--", linewidth=1, label="all-MiniLM-L6-v2")
        ax.set_xlabel("pretraining budget (minutes, from scratch)")
        ax.set_ylabel("dev accuracy")
        ax.set_title(task, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="lower right", fontsize=7)
    fig.tight_layout()
    with atomic_file(path, suffix=".png") as tmp:
        fig.savefig(tmp)
    plt.close(fig)


if __name__ == "__main__":
    from absl import app, flags

    sys.path.insert(0, ROOT)  # `benchmarks.*` when run as a script

    flags.DEFINE_list("steps", ["2500", "5000", "10000", "15000"],
                      "Step recipe: pretraining steps to fine-tune from (multiples of the first).")
    flags.DEFINE_list("budgets", [], "Budget recipe: pretraining budgets in minutes (e.g. "
                      "15,30,60), each fine-tuned on both tasks; replaces --steps.")
    flags.DEFINE_list("tiny_recipe_minutes", ["15"], "With --budgets: today's tiny step recipe "
                      "run for as many steps as fit in these minutes.")
    flags.DEFINE_bool("search", False, "Only the recipe search: every candidate for "
                      "--search_minutes, fine-tuned once on both tasks.")
    flags.DEFINE_float("search_minutes", 8, "The search's budget per candidate.")
    flags.DEFINE_float("domain_minutes", None, "Only domain adaptation: all-MiniLM-L6-v2 "
                       "pretrained on the corpus for this many minutes, with and without "
                       "vocabulary extension, fine-tuned on both tasks.")
    flags.DEFINE_list("seeds", ["1", "2"], "Fine-tuning seeds per point.")
    flags.DEFINE_string("plot", None, "PNG path (default: in the work dir).")
    flags.DEFINE_string("work_dir", None, "Where data, runs and logs go (default: a temp dir); "
                        "a rerun with the same one skips what is done.")
    flags.DEFINE_list("train_sizes", ["250", "all"], "Step recipe: label budgets, training "
                      "sentences per fine-tuning run ('all': the file).")

    def main(argv):
        del argv
        F = flags.FLAGS
        seeds = [int(s) for s in F.seeds]
        if F.search:
            work = F.work_dir or tempfile.mkdtemp(prefix="bench_payoff_")
            print("\n".join(search(work, F.search_minutes)))
        elif F.domain_minutes:
            work = F.work_dir or tempfile.mkdtemp(prefix="bench_payoff_")
            print("\n".join(domain_adaptation(work, F.domain_minutes, seeds)))
        elif F.budgets:
            print("\n".join(run_budgets([float(b) for b in F.budgets], seeds, F.work_dir, F.plot,
                                         [float(m) for m in F.tiny_recipe_minutes])))
        else:
            sizes = [None if s == "all" else int(s) for s in F.train_sizes]
            print("\n".join(run([int(s) for s in F.steps], seeds, F.plot, F.work_dir,
                                 train_sizes=sizes)))

    app.run(main)
