r"""Fine-tuning on the shipped sentiment data: full fine-tuning with XLA on
and off, and the frozen-encoder mode; dev accuracy, wall time and training
examples/s. The numbers in the README's fine-tuning section come from here.

    python benchmarks/bench_finetune.py --init_checkpoint=checkpoints/minilm
    python benchmarks/bench_finetune.py --hf_dir=<all-MiniLM-L6-v2 dir>  # converts first
"""

import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags

flags.DEFINE_string("init_checkpoint", None, "tfbert checkpoint dir (converted weights).")
flags.DEFINE_string("hf_dir", None, "Hugging Face BERT dir to convert when no checkpoint is given.")
flags.DEFINE_list("modes", ["full_xla", "full_no_xla", "frozen", "random_init"], "What to run.")
flags.DEFINE_integer("epochs", 2, "Fine-tuning epochs (full modes).")
FLAGS = flags.FLAGS

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "tests", "data", "finetune")


def main(argv):
    import keras

    from tfbert.checkpoint import read_checkpoint
    from tfbert.tasks.classification import ClassificationConfig, ClassificationTask
    from tfbert.tasks.runner import TrainConfig, finetune

    work = tempfile.mkdtemp(prefix="bench_finetune_")
    ckpt = FLAGS.init_checkpoint
    if not ckpt:
        from tfbert.convert import from_huggingface

        ckpt = from_huggingface(FLAGS.hf_dir, os.path.join(work, "ckpt"))

    class StepTimer(keras.callbacks.Callback):
        """Steady-state speed: training batches of the last epoch, first batch excluded."""

        def on_epoch_begin(self, epoch, logs=None):
            self.times = []

        def on_train_batch_end(self, batch, logs=None):
            self.times.append(time.perf_counter())

    rows = []
    for mode in FLAGS.modes:
        task = ClassificationTask(ClassificationConfig(
            train_file=os.path.join(DATA, "sentiment_train.tsv"),
            dev_file=os.path.join(DATA, "sentiment_dev.tsv"), seq_length=24))
        train = TrainConfig(batch_size=16, learning_rate=5e-5, epochs=FLAGS.epochs, seed=1,
                            jit_compile=mode != "full_no_xla", verbose=0,
                            frozen_encoder=mode == "frozen", head_epochs=20)
        timer = StepTimer()
        original = keras.Model.fit

        def fit(self, *args, callbacks=None, **kwargs):  # add the timer to the runner's fit
            return original(self, *args, callbacks=list(callbacks or []) + [timer], **kwargs)

        keras.Model.fit = fit
        try:
            kwargs = ({"init_checkpoint": ckpt} if mode != "random_init" else
                      {"encoder_config": read_checkpoint(ckpt).config,
                       "vocab_file": os.path.join(ckpt, "vocab.txt")})
            result = finetune(task, train, os.path.join(work, mode), **kwargs)
        finally:
            keras.Model.fit = original
        speed = ""
        if mode != "frozen" and len(timer.times) > 2:
            speed = f"{(len(timer.times) - 1) * 16 / (timer.times[-1] - timer.times[0]):.1f}"
        rows.append((mode, result.best_score, result.seconds, speed))
        print(f"{mode}: dev accuracy {result.best_score:.3f}, {result.seconds:.0f} s, "
              f"train examples/s {speed or '-'}", flush=True)

    print("\n| mode | dev accuracy | wall time (s) | train examples/s |\n|---|---|---|---|")
    for mode, score, seconds, speed in rows:
        print(f"| {mode} | {score:.3f} | {seconds:.0f} | {speed or '-'} |")


if __name__ == "__main__":
    app.run(main)
