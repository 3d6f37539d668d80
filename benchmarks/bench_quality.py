r"""Fine-tuning quality over seeds: tfbert with its defaults against the
transformers reference on the same recipe, data and weights.

    python tools/benchmark.py --what=quality                  # every task, 3 seeds
    python benchmarks/bench_quality.py --tasks=squad --seeds=0,1,2,3,4 --work=/tmp/bq

Per task and seed, tfbert runs `tfbert.tasks.runner.finetune` with nothing
but the data and the converted all-MiniLM-L6-v2 checkpoint: the recipe
(`tfbert.train.recipe`) picks learning rate, batch size and epochs, and the
epoch is chosen on a held-out 10% of the training file. The reference is
Hugging Face `transformers` (`BertForQuestionAnswering`,
`BertForSequenceClassification`, `BertForTokenClassification`) from the same
weights, trained with torch's AdamW (epsilon 1e-8, weight decay 0.01 off
biases and LayerNorm), linear warmup over 10% and linear decay, gradient norm
clipped at 1, dropout 0.1, at tfbert's chosen learning rate, batch size and
epochs, on the whole training file, keeping the last epoch (the Trainer's
default). Both read the same tokenized inputs (tfbert's preprocessing, which
equals the reference tokenizer) and are scored by the same code on the dev
file: SQuAD v2 with the official rules (the reference's logits go through
tfbert's span search), GLUE accuracy, seqeval entity F1.

Tasks:
- `squad`: SQuAD v2.0 built from Python documentation (`common/squad_docs.py`:
  240 train / 300 dev questions, a third unanswerable, seq_length 64 with
  `doc_stride` 32: three windows or more per context);
- `docstrings`: which standard-library family a docstring sentence is from
  (`tfbert.datasets.docstring_families`, 5 classes, 30 train / 60 dev per class);
- `sentiment`: the shipped sentiment sentences (160 train / 40 dev);
- `sentiment_fit`: the same, trained as a Keras user trains it (`TextClassifier.fit`
  on the texts, `compile()` with no arguments, the recipe's epochs), not by the runner;
- `ner`: the shipped CoNLL files;
- `long_docs`, `long_docs_128`, `long_docs_512`: the manual section of a man page
  (`common/long_docs.py`: 4 sections, 60 train / 40 dev pages each, up to 800 words,
  median about 700 words, 900 wordpieces), read as windows of 128 wordpieces
  (`task.long_text=windows`, `doc_overlap=32`, the windows' logits averaged), or cut at 128 or
  512 wordpieces. The reference for `long_docs` trains on the same windows,
  each with its page's label, and averages its windows' logits per page
  (chunk-and-average);
- `multilabel`: which of 7 things (exceptions, True/False, None, files, bytes,
  iteration, concurrency) the first 48 words of a standard-library docstring
  mention (`common/docstring_multilabel.py`; 800 train / 400 dev, most with no label),
  micro-F1; both choose one threshold by micro-F1 on tfbert's held-out 10%
  (the reference, `problem_type="multi_label_classification"`, trains on the
  other 90% for this; its figure at the usual fixed 0.5 is printed too);
- `embeddings`: (summary line, rest of the paragraph) pairs from standard-library
  docstrings (`tfbert.datasets.docstring_pairs`; 300 held out), in-batch negatives, held-out
  recall@1; the reference is sentence-transformers' `MultipleNegativesRankingLoss`
  (scale 20) on the same recipe;
- `rerank`: retrieval with a bi-encoder, + tfbert's cross-encoder rerank, + the
  sentence-transformers `CrossEncoder` reference, and mined against in-batch
  negatives (`bench_rerank.py`; its own table: recall@1 and MRR@10).

Each row: mean, sample standard deviation and worst seed of the main
metric, and for SQuAD how many seeds answer "" to every dev question.
"""

import dataclasses
import os
import shutil
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "finetune")
TASK_NAMES = ("squad", "docstrings", "sentiment", "sentiment_fit", "ner", "embeddings",
              "multilabel", "long_docs", "long_docs_128", "long_docs_512", "rerank")
METRIC = {"squad": "f1", "docstrings": "accuracy", "sentiment": "accuracy",
          "sentiment_fit": "accuracy", "ner": "f1",
          "embeddings": "recall_at_1", "multilabel": "micro_f1", "long_docs": "accuracy",
          "long_docs_128": "accuracy", "long_docs_512": "accuracy"}
# Windows share 32 wordpieces (a quarter; the default, half a window, costs 1.5x the
# windows per page: one seed with both sides took most of an hour on one core).
LONG_DOCS = {"long_docs": dict(seq_length=128, long_text="windows", doc_overlap=32),
             "long_docs_128": dict(seq_length=128), "long_docs_512": dict(seq_length=512)}


# === Data and tasks ===

def task_for(name, data_dir):
    """A fresh, unprepared tfbert task for one benchmark task."""
    from tfbert.tasks.classification import ClassificationTask
    from tfbert.tasks.question_answering import QuestionAnsweringTask
    from tfbert.tasks.sentence_embedding import SentenceEmbeddingTask
    from tfbert.tasks.tagging import TaggingTask

    if name == "squad":
        return QuestionAnsweringTask(dict(
            train_file=os.path.join(data_dir, "squad", "train.json"),
            dev_file=os.path.join(data_dir, "squad", "dev.json"),
            seq_length=64, doc_stride=32, max_query_length=32, max_answer_length=12))
    if name == "docstrings":
        return ClassificationTask(dict(train_file=os.path.join(data_dir, "docstrings", "train.tsv"),
                                       dev_file=os.path.join(data_dir, "docstrings", "dev.tsv"),
                                       seq_length=64))
    if name in ("sentiment", "sentiment_fit"):
        return ClassificationTask(dict(train_file=os.path.join(DATA, "sentiment_train.tsv"),
                                       dev_file=os.path.join(DATA, "sentiment_dev.tsv"),
                                       seq_length=32))
    if name == "ner":
        return TaggingTask(dict(train_file=os.path.join(DATA, "ner_train.conll"),
                                dev_file=os.path.join(DATA, "ner_dev.conll"), seq_length=64))
    if name in LONG_DOCS:
        return ClassificationTask(dict(train_file=os.path.join(data_dir, "long_docs", "train.tsv"),
                                       dev_file=os.path.join(data_dir, "long_docs", "dev.tsv"),
                                       text_column="text", **LONG_DOCS[name]))
    if name == "multilabel":
        return ClassificationTask.from_config(dict(
            train_file=os.path.join(data_dir, "multilabel", "train.jsonl"),
            dev_file=os.path.join(data_dir, "multilabel", "dev.jsonl"), text_column="text",
            label_column="labels", multi_label=True, seq_length=64))
    if name == "embeddings":
        return SentenceEmbeddingTask(dict(
            train_file=os.path.join(data_dir, "pairs", "train.tsv"),
            dev_file=os.path.join(data_dir, "pairs", "dev.tsv"), loss="ranking",
            text_column="query", text_b_column="passage", seq_length=48))
    raise ValueError(f"unknown quality task {name!r}; use {list(TASK_NAMES)}")


def build_data(data_dir):
    from benchmarks.common.docstring_multilabel import build_multilabel_task
    from tfbert.datasets.docstring_pairs import docstring_pairs
    from tfbert.datasets.docstring_families import build_docstring_task
    from benchmarks.common.long_docs import build_long_docs
    from benchmarks.common.squad_docs import build_squad_docs

    # 300 dev questions: one is 0.33 F1, so a 5-F1 spread over seeds is ~15
    # questions, not ~5 (the first 30 dev paragraphs are the earlier 90-question
    # dev set; the training file is unchanged).
    build_squad_docs(os.path.join(data_dir, "squad"), train_paragraphs=80, dev_paragraphs=100,
                     functions_per_paragraph=6)
    build_docstring_task(os.path.join(data_dir, "docstrings"), train_per_class=30,
                         dev_per_class=60, pool_per_class=0)
    build_long_docs(os.path.join(data_dir, "long_docs"), train_per_class=60, dev_per_class=40,
                    max_words=800)
    build_multilabel_task(os.path.join(data_dir, "multilabel"), train=800, dev=400)
    pairs = docstring_pairs()
    os.makedirs(os.path.join(data_dir, "pairs"), exist_ok=True)
    for split, rows in (("dev", pairs[:300]), ("train", pairs[300:])):
        with open(os.path.join(data_dir, "pairs", f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.write("query\tpassage\n" + "".join(f"{q}\t{p}\n" for _, q, p in rows))


# === tfbert ===

def tfbert_run(name, data_dir, checkpoint, seed, work, min_steps=None):
    """`(dev scores of the chosen epoch, resolved recipe)` of tfbert's defaults."""
    import keras

    from tfbert.tasks.runner import TrainConfig, finetune

    if name == "sentiment_fit":
        return keras_fit_run(checkpoint, seed)
    task = task_for(name, data_dir)
    model_dir = os.path.join(work, f"tfbert_{name}_{seed}")
    # A fresh run each time: finetune() resumes from what a model_dir holds,
    # and an earlier (or interrupted) run's state must not leak into this one.
    shutil.rmtree(model_dir, ignore_errors=True)
    train = TrainConfig(seed=seed, verbose=0)
    if min_steps:  # a different step floor than the default's (the reference follows it)
        train = dataclasses.replace(train, min_steps=min_steps)
    result = finetune(task, train, model_dir, init_checkpoint=checkpoint)
    scores = dict(result.dev_scores[result.best_epoch - 1])
    if name == "squad":
        scores["answers"] = _answer_count(task, result.model, task.config.dev_file)
    recipe = {k: result.summary[k] for k in ("learning_rate", "batch_size", "epochs")}
    recipe["best_epoch"] = result.best_epoch
    recipe["model_dir"] = model_dir  # its validation split, for the reference's thresholds
    keras.backend.clear_session()
    return scores, recipe


def keras_fit_run(checkpoint, seed):
    """The sentiment task as a Keras user trains it: `TextClassifier.fit` on
    the texts with `compile()`'s defaults and the recipe's epochs for the data
    size (`tfbert.train.recipe.resolve`), the last epoch scored."""
    import csv

    import keras
    import numpy as np

    from tfbert import TextClassifier
    from tfbert.train.recipe import resolve
    from tfbert.train.train_config import TrainConfig

    def read(split):
        with open(os.path.join(DATA, f"sentiment_{split}.tsv"), encoding="utf-8") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        return [r["sentence"] for r in rows], [r["label"] for r in rows]

    (texts, labels), (dev_texts, dev_labels) = read("train"), read("dev")
    label_list = sorted(set(labels))
    keras.utils.set_random_seed(seed)
    model = TextClassifier.from_pretrained(checkpoint, label_list=label_list, seq_length=32)
    train, _ = resolve(TrainConfig(), len(texts), model.encoder.config)
    model.compile()
    model.fit(texts, labels, epochs=train.epochs, seed=seed, verbose=0)
    predicted = np.array(label_list)[model.predict(dev_texts, verbose=0).argmax(-1)]
    recipe = {"learning_rate": train.learning_rate, "batch_size": train.batch_size,
              "epochs": train.epochs, "best_epoch": train.epochs}
    keras.backend.clear_session()
    return {"accuracy": float(np.mean(predicted == np.array(dev_labels)))}, recipe


def _answer_count(task, model, dev_file):
    data = task.read(dev_file)
    results = task.predict(model, [e.question for e in data.examples],
                           [e.context for e in data.examples])
    return sum(1 for r in results if r["answer"])


# === The transformers reference ===

def _arrays(batches, seq_length, label_keys=()):
    """NumPy `[n, seq_length]` inputs (and targets) from tfbert batches."""
    import numpy as np

    out = {}
    for batch in batches:
        inputs, targets = batch[0], batch[1:]
        named = {"input_ids": inputs["input_word_ids"], "attention_mask": inputs["input_mask"],
                 "token_type_ids": inputs["input_type_ids"]}
        if label_keys == ("labels_2d",):  # tagging: labels at first pieces, -100 elsewhere
            labels, weights = targets
            named["labels"] = np.where(np.asarray(weights) > 0, labels, -100)
        elif label_keys:
            named.update({k: targets[0][src] for k, src in label_keys})
        elif targets:
            named["labels"] = targets[0]
        for key, value in named.items():
            value = np.asarray(value)
            if value.ndim == 2 and value.shape[1] < seq_length:
                fill = -100 if key == "labels" else 0
                value = np.pad(value, [(0, 0), (0, seq_length - value.shape[1])],
                               constant_values=fill)
            out.setdefault(key, []).append(value)
    return {k: np.concatenate(v).astype("int64") for k, v in out.items()}


def _torch_fit(model, arrays, recipe, seed):
    """`torch_train` on padded arrays, each batch cut to its longest row."""
    import numpy as np
    import torch

    def batch_loss(rows):
        longest = int(arrays["attention_mask"][rows].sum(1).max())
        # Contiguous: the token classifier's loss calls .view() on the labels.
        return model(**{k: torch.from_numpy(np.ascontiguousarray(
            v[rows][:, :longest] if v.ndim == 2 else v[rows])) for k, v in arrays.items()}).loss

    from benchmarks.common.torch_reference import torch_train

    return torch_train(model, len(arrays["input_ids"]), recipe, seed, batch_loss)


def _torch_logits(model, inputs, *keys):
    import torch

    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(inputs["input_word_ids"].numpy().astype("int64")),
                    attention_mask=torch.from_numpy(inputs["input_mask"].numpy().astype("int64")),
                    token_type_ids=torch.from_numpy(
                        inputs["input_type_ids"].numpy().astype("int64")))
    return [getattr(out, k).numpy() for k in keys]


def reference_run(name, data_dir, checkpoint, hf_dir, recipe, seed):
    """Dev scores of the transformers reference on tfbert's recipe."""
    import numpy as np
    import tensorflow as tf
    import torch
    import transformers

    from tfbert.text.preprocessor import BertPreprocessor
    from tfbert.tasks.squad_predictions import question_result

    # The cores this process may use (taskset), where the OS says.
    torch.set_num_threads(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                          else os.cpu_count() or 1)
    torch.manual_seed(seed)  # the new head's initial weights
    if name == "embeddings":
        return _sentence_transformers_run(data_dir, hf_dir, recipe, seed)
    task = task_for(name, data_dir)
    seq_length = task.config.seq_length
    task.prepare(BertPreprocessor.from_pretrained(checkpoint, seq_length=seq_length))
    train_file, dev_file = task.config.train_file, task.config.dev_file
    batches = task.dataset(train_file, 64)
    if name == "squad":
        model = transformers.BertForQuestionAnswering.from_pretrained(hf_dir)
        arrays = _arrays(batches, seq_length, (("start_positions", "start_logits"),
                                               ("end_positions", "end_logits")))
        _torch_fit(model, arrays, recipe, seed)
        data = task.read(dev_file)
        results = []
        for i in range(0, len(data.examples), 16):
            chunk = data.examples[i:i + 16]
            question = tf.constant([e.question for e in chunk])
            context = tf.constant([e.context for e in chunk])
            w = task.windows(question, context)
            start, end = _torch_logits(model, w["inputs"], "start_logits", "end_logits")
            out = task.search(w, tf.constant(start), tf.constant(end), context)
            out = {k: v.numpy() for k, v in out.items()}
            results += [question_result(out, j) for j in range(len(chunk))]
        scores = task.score(results, task.eval_data(dev_file, 64))
        scores["answers"] = sum(1 for r in results if r["answer"])
        return scores
    if name == "ner":
        model = transformers.BertForTokenClassification.from_pretrained(
            hf_dir, num_labels=len(task.label_list))
        _torch_fit(model, _arrays(batches, seq_length, ("labels_2d",)), recipe, seed)
        inputs, reference = task.eval_data(dev_file, 64)
        logits = np.concatenate([_torch_logits(model, x, "logits")[0] for x in inputs])
        return task.score(logits, reference)
    if name == "multilabel":  # float multi-hot targets, BCE-with-logits in transformers
        from tfbert.metrics.multi_label import choose_thresholds, probabilities_of

        # tfbert's threshold rule on the reference side: train on tfbert's 90%
        # (its validation split), choose the threshold on the same held-out 10%.
        split = os.path.join(recipe["model_dir"], "validation_split")
        train_file = os.path.join(split, "train.jsonl")
        model = transformers.BertForSequenceClassification.from_pretrained(
            hf_dir, num_labels=len(task.label_list), problem_type="multi_label_classification")
        arrays = _arrays(task.dataset(train_file, 64).map(lambda x, y: (x,)), seq_length)
        arrays["labels"] = task.read(train_file)[1]
        _torch_fit(model, arrays, recipe, seed)

        def probabilities(path):
            inputs, (targets, _) = task.eval_data(path, 64)
            logits = np.concatenate([_torch_logits(model, x, "logits")[0] for x in inputs])
            return logits, targets

        logits, targets = probabilities(os.path.join(split, "validation.jsonl"))
        chosen = choose_thresholds(targets, probabilities_of(logits))
        logits, targets = probabilities(dev_file)
        task.thresholds = None  # the fixed 0.5 Hugging Face users start from
        at_half = task.score(logits, targets)["micro_f1"]
        task.thresholds = chosen
        scores = task.score(logits, targets)
        scores["note"] = f"(at 0.5: {at_half:.4f}; chosen threshold {chosen[0]:.2f})"
        return scores
    model = transformers.BertForSequenceClassification.from_pretrained(
        hf_dir, num_labels=len(task.label_list))
    _torch_fit(model, _arrays(batches, seq_length), recipe, seed)
    inputs, targets = task.eval_data(dev_file, 64)
    if task.windowed:  # chunk-and-average: every window of a page, logits averaged
        from tfbert.text.windows import pool_windows

        logits = []
        for texts in inputs:
            spans, windows = task.windows(texts)
            per_window = _torch_logits(model, windows, "logits")[0]
            logits.append(pool_windows(tf.constant(per_window), spans, "mean").numpy())
        return task.score(np.concatenate(logits), targets)
    logits = np.concatenate([_torch_logits(model, x, "logits")[0] for x in inputs])
    return task.score(logits, targets)


def _sentence_transformers_run(data_dir, hf_dir, recipe, seed):
    """sentence-transformers' MultipleNegativesRankingLoss (scale 20) on the
    same pairs and recipe; held-out recall@1 by tfbert's retrieval metric."""
    from sentence_transformers import SentenceTransformer, losses

    from benchmarks.common.torch_reference import torch_train
    from tfbert.data import pairs as pair_readers
    from tfbert.metrics.retrieval import retrieval_metrics

    train = pair_readers.read_pairs(os.path.join(data_dir, "pairs", "train.tsv"), "query",
                                    "passage")
    dev = pair_readers.read_pairs(os.path.join(data_dir, "pairs", "dev.tsv"), "query", "passage")
    model = SentenceTransformer(str(hf_dir), device="cpu")
    model.max_seq_length = 48
    loss = losses.MultipleNegativesRankingLoss(model, scale=20.0)
    torch_train(model, len(train.anchor), recipe, seed, lambda rows: loss(
        [model.tokenize([train.anchor[r] for r in rows]),
         model.tokenize([train.positive[r] for r in rows])], None))
    queries = model.encode(list(dev.anchor), batch_size=64)
    passages = model.encode(list(dev.positive), batch_size=64)
    return retrieval_metrics(queries, passages)


# === The table ===

def run(tasks=TASK_NAMES, seeds=(0, 1, 2), work=None, hf_dir=None, reference=True,
        min_steps=None):
    """Runs every task over `seeds`; returns the report lines (Markdown)."""
    if "rerank" in tasks:  # retrieval + reranking: its own table (benchmarks/bench_rerank.py)
        from benchmarks.common import rerank_quality

        rest = [t for t in tasks if t != "rerank"]
        lines = run(rest, seeds, work, hf_dir, reference, min_steps) if rest else []
        return lines + [""] + rerank_quality.run(seeds, os.path.join(work or tempfile.mkdtemp(
            prefix="bench_quality_"), "rerank"), hf_dir, min_steps)
    from benchmarks.common.minilm import minilm_checkpoint, minilm_hf_dir
    from benchmarks.common.seed_stats import seed_stats

    hf_dir = hf_dir or minilm_hf_dir()
    work = work or tempfile.mkdtemp(prefix="bench_quality_")
    data_dir = os.path.join(work, "data")
    build_data(data_dir)
    checkpoint = minilm_checkpoint(work, hf_dir)
    metric = METRIC
    lines = ["| task | metric | seeds | tfbert mean +- sd | tfbert worst | reference mean +- sd "
             "| reference worst | difference of means | tfbert recipe (lr, batch, epochs; "
             "chosen epochs) |", "|---|---|---|---|---|---|---|---|---|"]
    per_seed = []
    for name in tasks:
        ours, theirs, recipes = [], [], []
        for seed in seeds:
            start = time.perf_counter()
            scores, recipe = tfbert_run(name, data_dir, checkpoint, seed, work, min_steps)
            ours.append(scores[metric[name]])
            recipes.append(recipe)
            note = f" answers {scores['answers']}" if "answers" in scores else ""
            line = (f"{name} seed {seed}: tfbert {metric[name]} {ours[-1]:.4f}{note} "
                    f"(epoch {recipe['best_epoch']}/{recipe['epochs']}, "
                    f"{time.perf_counter() - start:.0f} s)")
            if reference:
                start = time.perf_counter()
                ref = reference_run(name, data_dir, checkpoint, hf_dir, recipe, seed)
                theirs.append(ref[metric[name]])
                note = f" answers {ref['answers']}" if "answers" in ref else ""
                note += f" {ref['note']}" if "note" in ref else ""
                line += (f"; reference {theirs[-1]:.4f}{note} "
                         f"({time.perf_counter() - start:.0f} s)")
            print(line, flush=True)
            per_seed.append(line)
        m, sd, worst = seed_stats(ours)
        r = recipes[0]
        row = (f"| {name} | {metric[name]} | {len(seeds)} | {m:.4f} +- {sd:.4f} | {worst:.4f} | ")
        if theirs:
            rm, rsd, rworst = seed_stats(theirs)
            row += f"{rm:.4f} +- {rsd:.4f} | {rworst:.4f} | {m - rm:+.4f} | "
        else:
            row += "- | - | - | "
        row += (f"{r['learning_rate']:g}, {r['batch_size']}, {r['epochs']}; "
                f"{','.join(str(x['best_epoch']) for x in recipes)} |")
        lines.append(row)
        print(row, flush=True)
    return lines + [""] + per_seed


if __name__ == "__main__":
    import sys

    sys.path.insert(0, ROOT)  # `benchmarks.*` when run as a script
    from absl import app, flags

    flags.DEFINE_list("tasks", list(TASK_NAMES), "Tasks to run.")
    flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds.")
    flags.DEFINE_string("work", None, "Work directory (data, converted checkpoint, runs).")
    flags.DEFINE_boolean("reference", True, "Also train the transformers reference.")
    flags.DEFINE_integer("min_steps", None, "train.min_steps for tfbert (default: the "
                         "task's floor, 600 for squad, 300 for the others); the reference "
                         "trains the epochs it gives.",
                         lower_bound=1)
    flags.register_validator("seeds", lambda seeds: all(s.isdigit() for s in seeds),
                             "--seeds: comma-separated non-negative integers, e.g. 0,1,2")
    flags.register_validator("tasks", lambda tasks: set(tasks) <= set(TASK_NAMES),
                             f"--tasks: a comma-separated subset of {','.join(TASK_NAMES)}")

    def main(argv):
        del argv
        F = flags.FLAGS
        print("\n".join(run(F.tasks, [int(s) for s in F.seeds], F.work, reference=F.reference,
                             min_steps=F.min_steps)))

    app.run(main)
