r"""A user's `TextClassifier.fit` beside the fine-tuning runner, on the shipped
sentiment data from all-MiniLM-L6-v2: training examples/s of the last epoch
(steady state), the ratio fit / runner, and both dev accuracies. Both train
the same model class on the same batches (`training_batches`); the rows differ
only in who calls Keras' `fit`.

    python tools/benchmark.py --what=keras_fit
    python benchmarks/bench_keras_fit.py --epochs=3

Rows: without XLA (Keras' default on CPU for `fit`) and with XLA (the runner's
default; `compile(jit_compile=True)` for the user's model).
"""

import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "tests", "data", "finetune")
LABELS = ["negative", "positive"]
BATCH = 16
SEQ_LENGTH = 64


def _sentiment(split):
    import csv

    with open(os.path.join(DATA, f"sentiment_{split}.tsv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [r["sentence"] for r in rows], [r["label"] for r in rows]


def _examples_per_second(times):
    return (len(times) - 1) * BATCH / (times[-1] - times[0]) if len(times) > 2 else float("nan")


def runner_row(checkpoint, work, epochs, jit_compile):
    from benchmarks.common.timing import timed_finetune
    from tfbert.tasks.classification import ClassificationTask
    from tfbert.train.train_config import TrainConfig

    task = ClassificationTask({"train_file": os.path.join(DATA, "sentiment_train.tsv"),
                               "dev_file": os.path.join(DATA, "sentiment_dev.tsv"),
                               "seq_length": SEQ_LENGTH, "label_list": LABELS})
    train = TrainConfig(batch_size=BATCH, epochs=epochs, seed=1, jit_compile=jit_compile,
                        verbose=0, tensorboard=False)
    result, times = timed_finetune(task, train, os.path.join(work, f"runner_{jit_compile}"),
                                   init_checkpoint=checkpoint)
    return _examples_per_second(times), result.dev_scores[-1]["accuracy"]


def fit_row(checkpoint, epochs, jit_compile):
    import keras
    import numpy as np

    from benchmarks.common.timing import step_timer
    from tfbert import TextClassifier

    times = []
    keras.utils.set_random_seed(1)
    model = TextClassifier.from_pretrained(checkpoint, label_list=LABELS, seq_length=SEQ_LENGTH)
    model.compile(jit_compile=jit_compile)
    texts, labels = _sentiment("train")
    model.fit(texts, labels, batch_size=BATCH, epochs=epochs, seed=1, verbose=0,
              callbacks=[step_timer(times)])
    dev_texts, dev_labels = _sentiment("dev")
    predicted = np.array(LABELS)[model.predict(dev_texts, verbose=0).argmax(-1)]
    return _examples_per_second(times), float(np.mean(predicted == np.array(dev_labels)))


def run(epochs=3, hf_dir=None):
    """Report lines: one row per (XLA, caller)."""
    from benchmarks.common.minilm import minilm_checkpoint

    work = tempfile.mkdtemp(prefix="bench_keras_fit_")
    checkpoint = minilm_checkpoint(work, hf_dir)
    lines = ["", f"TextClassifier.fit vs the runner: sentiment set (160 train, 60 dev), MiniLM, "
                 f"batch {BATCH}, seq {SEQ_LENGTH}, {epochs} epochs, last epoch timed",
             "", "| XLA | runner examples/s | fit examples/s | fit / runner | runner dev acc | "
                 "fit dev acc |", "|---|---|---|---|---|---|"]
    for jit_compile in (False, True):
        runner_speed, runner_accuracy = runner_row(checkpoint, work, epochs, jit_compile)
        fit_speed, fit_accuracy = fit_row(checkpoint, epochs, jit_compile)
        line = (f"| {'on' if jit_compile else 'off'} | {runner_speed:.1f} | {fit_speed:.1f} | "
                f"{fit_speed / runner_speed:.2f}x | {runner_accuracy:.3f} | {fit_accuracy:.3f} |")
        print(line, flush=True)
        lines.append(line)
    return lines


if __name__ == "__main__":
    from absl import app, flags

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # `benchmarks.*`
    flags.DEFINE_integer("epochs", 3, "Epochs of each run (the last one is timed).")
    flags.DEFINE_string("hf_dir", None, "all-MiniLM-L6-v2 directory (default: the pip package's).")

    def main(argv):
        print("\n".join(run(flags.FLAGS.epochs, flags.FLAGS.hf_dir)))

    app.run(main)
