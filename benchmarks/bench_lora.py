r"""LoRA adapters against full fine-tuning on the shipped tasks, over seeds:
dev quality, trainable parameters, training step time and peak memory.

    python tools/benchmark.py --what=lora
    python benchmarks/bench_lora.py --tasks=sentiment,ner --seeds=0,1,2 --rank=8

Each run is `tfbert.tasks.runner.finetune` from the converted all-MiniLM-L6-v2
with the recipe's defaults (LoRA: `train.lora_rank`, default targets query
and value, the recipe's LoRA learning rate), in a fresh process: peak memory
is that process's peak resident set (`ru_maxrss`). Step time: after
training, 10 timed `train_on_batch` calls on one training batch of 16 (2
untimed first), the median.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "finetune")
TASKS = {
    "sentiment": ("classification", dict(train_file=os.path.join(DATA, "sentiment_train.tsv"),
                                         dev_file=os.path.join(DATA, "sentiment_dev.tsv"),
                                         seq_length=32), "accuracy"),
    "ner": ("tagging", dict(train_file=os.path.join(DATA, "ner_train.conll"),
                            dev_file=os.path.join(DATA, "ner_dev.conll"), seq_length=64), "f1"),
}

_ONE = r"""
import json, resource, shutil, statistics, sys, time
import numpy as np
from tfbert.tasks import get_task
from tfbert.tasks.runner import TrainConfig, finetune

task_name, config, checkpoint, model_dir, seed, rank = json.loads(sys.argv[1])
shutil.rmtree(model_dir, ignore_errors=True)
task = get_task(task_name)(config)
result = finetune(task, TrainConfig(seed=seed, verbose=0, lora_rank=rank), model_dir,
                  init_checkpoint=checkpoint)
batch = next(iter(task.dataset(config["train_file"], 16, training=True, seed=seed)))
times = []
for i in range(12):
    start = time.perf_counter()
    result.model.train_on_batch(*batch)
    times.append(time.perf_counter() - start)
print(json.dumps({"scores": {k: v for k, v in result.dev_scores[result.best_epoch - 1].items()
                             if np.isscalar(v)},
                  "trainable_params": result.summary["trainable_params"],
                  "learning_rate": result.summary["learning_rate"],
                  "epochs": result.summary["epochs"], "best_epoch": result.best_epoch,
                  "step_ms": 1000 * statistics.median(times[2:]),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "seconds": result.seconds}))
"""


def one_run(task, checkpoint, work, seed, rank):
    kind, config, _ = TASKS[task]
    model_dir = os.path.join(work, f"{task}_{seed}_{'lora' if rank else 'full'}")
    proc = subprocess.run([sys.executable, "-c", _ONE, json.dumps(
        [kind, config, checkpoint, model_dir, seed, rank])], capture_output=True, text=True,
        cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "2"})
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(tasks=tuple(TASKS), seeds=(0, 1, 2), rank=8, work=None):
    """Returns the report lines (Markdown); per-seed lines are printed as they finish."""
    from benchmarks.common.minilm import minilm_checkpoint
    from benchmarks.common.seed_stats import format_seed_stats

    work = work or tempfile.mkdtemp(prefix="bench_lora_")
    checkpoint = minilm_checkpoint(work)
    lines = [f"## LoRA (rank {rank}, query+value) against full fine-tuning, MiniLM, "
             f"seeds {','.join(map(str, seeds))}",
             "| task | mode | dev metric: mean +- sd (worst) | trainable params | lr | "
             "step ms (b16, median) | peak RSS MB |", "|---|---|---|---|---|---|---|"]
    per_seed = []
    for task in tasks:
        metric = TASKS[task][2]
        for mode, r in (("full", None), ("lora", rank)):
            runs = []
            for seed in seeds:
                runs.append(one_run(task, checkpoint, work, seed, r))
                per_seed.append(f"{task} {mode} seed {seed}: {metric} "
                                f"{runs[-1]['scores'][metric]:.4f}, epoch "
                                f"{runs[-1]['best_epoch']}/{runs[-1]['epochs']}, "
                                f"{runs[-1]['step_ms']:.0f} ms/step, "
                                f"{runs[-1]['peak_mb']:.0f} MB, {runs[-1]['seconds']:.0f} s")
                print(per_seed[-1], flush=True)
            lines.append(
                f"| {task} | {mode} | {metric} "
                f"{format_seed_stats([x['scores'][metric] for x in runs], 4)} | "
                f"{runs[0]['trainable_params']:,} | {runs[0]['learning_rate']:g} | "
                f"{statistics.median(x['step_ms'] for x in runs):.0f} | "
                f"{max(x['peak_mb'] for x in runs):.0f} |")
            print(lines[-1], flush=True)
    return lines + [""] + per_seed


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    from absl import app, flags

    flags.DEFINE_list("tasks", list(TASKS), "Tasks to run.")
    flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds.")
    flags.DEFINE_integer("rank", 8, "train.lora_rank.")
    flags.DEFINE_string("work", None, "Work directory.")

    def main(argv):
        del argv
        F = flags.FLAGS
        print("\n".join(run(F.tasks, [int(s) for s in F.seeds], F.rank, F.work)))

    app.run(main)
