"""Head pruning of a fine-tuned all-MiniLM-L6-v2: the pruning curve over seeds and
the speed of the pruned export (issue 63; Michel, Levy & Neubig 2019).

    python tools/benchmark.py --what=pruning
    python benchmarks/bench_pruning.py [seeds]

The curve: on two tasks (the five docstring families, `tfbert.datasets.
docstring_families`, 100 train / 300 dev texts; the shipped sentiment set, 160 /
60), MiniLM is fine-tuned at each seed, its heads are scored once on the dev file
(`head_importance`, the gradient of the dev loss with respect to a head mask), and
the least important fraction of them is removed (`heads_to_prune_by_importance`,
all layers ranked together), without fine-tuning again: dev accuracy per fraction,
mean +- sd (worst seed).

The speed: the first seed's docstring model pruned at each fraction, as the
encoder alone at batch 32 x 128 tokens (plain TensorFlow graph) and as the
strings-in SavedModel the runner exports, on 256 real dev texts in batches of 32;
interleaved rounds, best of each, as a ratio to the unpruned model. Beside it the
share of the encoder's FLOPs the removed heads held: each head's query, key, value
and output rows and its share of the attention scores (at 128 tokens MiniLM's
attention is 37% of a layer's FLOPs; the feed-forward part stays).
"""

import os
import sys
import tempfile
import time

if __name__ == "__main__":  # `benchmarks.common` when run as a script
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
SPEED_FRACTIONS = (0.3, 0.5)
SEEDS = (0, 1, 2)
TIMING_ROUNDS = 3


def attention_flop_share(config, seq_length):
    """The share of one layer's multiply-adds per token that its attention holds
    (the four projections and the two score products; the feed-forward part is the
    rest), so removing a fraction p of the heads removes about p x this."""
    h, inner = config.hidden_size, config.intermediate_size
    attention = 4 * h * h + 2 * seq_length * h
    return attention / (attention + 2 * h * inner)


def _tasks(work):
    from tfbert.datasets import docstring_families as families
    from tfbert.tasks.classification import ClassificationTask

    docstrings = os.path.join(work, "docstrings")
    families.build_docstring_task(docstrings, **families.TASK_SIZES)
    sentiment = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "tests", "data", "finetune")
    return {
        "docstring families (5 classes)": (
            lambda: ClassificationTask(dict(
                train_file=os.path.join(docstrings, "train.tsv"),
                dev_file=os.path.join(docstrings, "dev.tsv"), seq_length=families.SEQ_LENGTH)),
            dict(families.TEACHER_TRAIN)),
        "sentiment (2 classes)": (
            lambda: ClassificationTask(dict(
                train_file=os.path.join(sentiment, "sentiment_train.tsv"),
                dev_file=os.path.join(sentiment, "sentiment_dev.tsv"), seq_length=64)),
            dict(batch_size=16, learning_rate=1e-4, epochs=3)),
    }


def pruning_curve(task, model):
    """`{fraction: dev accuracy}` of `model` pruned by one importance ranking."""
    from tfbert.analysis.head_importance import head_importance
    from tfbert.analysis.head_pruning import heads_to_prune_by_importance
    from tfbert.runs.prune import importance_inputs

    dev = task.eval_data(task.config.dev_file, 32)
    metric = task.main_metric
    scores = {0.0: float(task.evaluate(model, dev)[metric])}
    batches, loss_of = importance_inputs(task, model)
    importance = head_importance(model.encoder, batches, loss_of)
    heads = {}
    for fraction in FRACTIONS:
        heads[fraction] = heads_to_prune_by_importance(importance, fraction)
        scores[fraction] = float(task.evaluate(model.prune_heads(heads[fraction]), dev)[metric])
    return scores, heads


def _best_of(calls, rounds=TIMING_ROUNDS):
    """Interleaved rounds over `{name: call}`; the best time of each."""
    best = {name: float("inf") for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def speed_rows(task, model, heads, work, texts):
    """Report lines: the pruned encoder and export against the unpruned ones."""
    import numpy as np
    import tensorflow as tf

    from tfbert.analysis.head_pruning import count_heads
    from tfbert.tasks.runner import export_task

    models = {0.0: model, **{f: model.prune_heads(heads[f]) for f in SPEED_FRACTIONS}}
    ids = tf.constant(np.random.default_rng(0).integers(1000, 20000, (32, 128)), tf.int32)
    encoder_inputs = {"input_word_ids": ids, "input_mask": tf.ones_like(ids),
                      "input_type_ids": tf.zeros_like(ids)}
    encoders, served = {}, {}
    for fraction, m in models.items():
        fn = tf.function(lambda x, e=m.encoder: e(x, training=False)["pooled_output"])
        fn(encoder_inputs)  # traced before timing
        encoders[fraction] = lambda fn=fn: fn(encoder_inputs).numpy()
        path = export_task(task, m, os.path.join(work, f"export_{fraction}", "1"))
        serve = tf.saved_model.load(path).signatures["serving_default"]
        batches = [tf.constant(texts[i:i + 32]) for i in range(0, len(texts), 32)]
        serve(text=batches[0])
        served[fraction] = lambda s=serve, b=batches: [s(text=x)["logits"].numpy() for x in b]
    encoder_time, served_time = _best_of(encoders), _best_of(served)
    share = attention_flop_share(model.encoder.config, 128)
    total = count_heads(model)
    lines = [f"pruning speed: encoder at 32 x 128 (plain graph), strings-in SavedModel on "
             f"{len(texts)} real dev texts (batches of 32); best of {TIMING_ROUNDS} interleaved"]
    for fraction in models:
        kept = count_heads(models[fraction])
        removed = (total - kept) / total
        lines.append(
            f"pruning {removed:4.0%} of heads ({kept:3d} kept)  encoder "
            f"{32 / encoder_time[fraction]:6.1f} seq/s {encoder_time[0.0] / encoder_time[fraction]:5.2f}x  "
            f"export {len(texts) / served_time[fraction]:6.1f} seq/s "
            f"{served_time[0.0] / served_time[fraction]:5.2f}x  "
            f"(FLOPs removed at 128 tokens: {removed * share:4.1%})")
    return lines


def run(seeds=SEEDS):
    import keras

    from benchmarks.common.minilm import minilm_checkpoint
    from benchmarks.common.seed_stats import format_seed_stats
    from tfbert.tasks.runner import TrainConfig, finetune

    work = tempfile.mkdtemp(prefix="bench_pruning_")
    checkpoint = minilm_checkpoint(work)
    lines = [f"pruning: all-MiniLM-L6-v2 fine-tuned, heads ranked by importance on the dev "
             f"file, pruned without fine-tuning again; dev accuracy over seeds {list(seeds)}"]
    for name, (make_task, train) in _tasks(work).items():
        curves = []
        for seed in seeds:
            keras.backend.clear_session()
            result = finetune(make_task(), TrainConfig(**{**train, "seed": seed},
                                                       jit_compile=False, verbose=0),
                              os.path.join(work, f"{name.split()[0]}_{seed}"),
                              init_checkpoint=checkpoint)
            curve, heads = pruning_curve(result.task, result.model)
            curves.append(curve)
            print(f"{name}, seed {seed}: " + ", ".join(f"{f:.0%} {s:.3f}" for f, s in curve.items()),
                  flush=True)
            if seed == seeds[0] and name.startswith("docstring"):
                dev, _ = result.task.read(result.task.config.dev_file)
                speed = speed_rows(result.task, result.model, heads, work, list(dev.text[:256]))
        lines.append(f"pruning curve, {name}:")
        for fraction in curves[0]:
            lines.append(f"  {fraction:4.0%} of heads removed: "
                         f"{format_seed_stats([c[fraction] for c in curves])}")
    return lines + speed


if __name__ == "__main__":
    chosen = tuple(int(s) for s in sys.argv[1].split(",")) if len(sys.argv) > 1 else SEEDS
    print("\n".join(run(chosen)))
