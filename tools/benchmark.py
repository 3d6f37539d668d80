"""Benchmarks on this machine, measured side by side in one run.

    python tools/benchmark.py                       # everything
    python tools/benchmark.py --what=encoder,tokenizer
    python tools/benchmark.py --what=tokenizer --roberta_dir=roberta-base  # WordPiece and BPE
    python tools/benchmark.py --what=encoder --presets=tiny --output=bench.txt
    python tools/benchmark.py --peers --output=peers.md --json=peers.json
    python tools/benchmark.py --what=latency --output=latency.md --json=latency.json
    python tools/benchmark.py --what=quality      # fine-tuning quality over seeds vs transformers
    python tools/benchmark.py --what=rerank       # retrieval + cross-encoder rerank over seeds

One home for benchmarks: each lives in `benchmarks/bench_<name>.py` with
`run() -> lines` (most also run alone: `python benchmarks/bench_<name>.py`)
and what they share in `benchmarks/common/`; this script is the entry point that runs them side by side and keeps the
report. Numbers on shared CPUs are noisy: compare the ratios printed within
one run, never absolute figures across runs.
"""

import importlib
import os
import platform
import sys
import time

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BENCHMARKS = ("encoder", "tokenizer", "pretrain", "finetune", "qa", "sentence_embedding",
              "bucketing", "distill", "pretrain_payoff", "long_text", "peers", "quality",
              "latency", "accumulation", "lora", "index", "rerank", "keras_fit", "pretrain_step",
              "probe", "pruning")
# Not in the default run: peers (needs the bench extra) and quality (about two
# hours on 2 cores: every task over seeds, tfbert and the transformers reference).
# latency: serving latency from raw strings against the peers (bench extra).
# lora: LoRA against full fine-tuning over 3 seeds (about half an hour).
# index: 120,000 passages encoded by MiniLM (~15 min on 2 shared cores) and 4 ANN libraries.
# rerank: bi-encoders and cross-encoders over 3 seeds (about 40 minutes per seed; quality
# runs it too, as its `rerank` task).
# probe: tools/probe.py --task=tags on MiniLM over 5,000 sentences (goal: under 10 minutes).
# pruning: MiniLM's head-pruning curve over 3 seeds on two tasks, and the pruned export's
# speed (about 15 minutes).
SEPARATE = ("peers", "quality", "latency", "lora", "index", "rerank", "probe", "pruning")

FLAGS = flags.FLAGS
flags.DEFINE_list("what", [b for b in BENCHMARKS if b not in SEPARATE],
                  f"Benchmarks to run, from {list(BENCHMARKS)}.")
flags.DEFINE_bool("peers", False, "Only the side-by-side run against keras-hub, transformers "
                  "and tokenizers (benchmarks/bench_peers.py; pip install -e '.[bench]').")
flags.DEFINE_string("json", None, "With --peers (or --what=latency alone): also write its "
                    "figures as JSON here.")
flags.DEFINE_list("presets", None, "Encoder presets for the encoder benchmark (default tiny,base).")
flags.DEFINE_string("output", None, "Also write the report to this file.")
flags.DEFINE_string("roberta_dir", None, "The tokenizer benchmark's byte-level BPE: a RoBERTa "
                    "tokenizer directory (vocab.json + merges.txt); default: one trained on the "
                    "benchmark's corpus.")


def main(argv):
    del argv
    unknown = sorted(set(FLAGS.what) - set(BENCHMARKS))
    if unknown:
        sys.exit(f"benchmark: error: unknown benchmark(s) {unknown}; "
                 f"choose from {list(BENCHMARKS)}.")
    json_for = "peers" if FLAGS.peers or "peers" in FLAGS.what else (
        "latency" if FLAGS.what == ["latency"] else None)
    if FLAGS.json and json_for is None:
        sys.exit("benchmark: error: --json holds the --peers (or --what=latency) figures; "
                 "add --peers.")
    for flag in ("output", "json"):  # fail now, not after minutes of measuring
        path = getattr(FLAGS, flag)
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            sys.exit(f"benchmark: error: --{flag}={path}: its directory does not exist.")
    import tensorflow as tf

    what = ["peers"] if FLAGS.peers else FLAGS.what
    lines = [f"# tfbert benchmark {time.strftime('%Y-%m-%d %H:%M')} on {platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} cores, TF {tf.__version__}"]
    for name in what:
        module = importlib.import_module(f"benchmarks.bench_{name}")
        kwargs = {"presets": tuple(FLAGS.presets)} if name == "encoder" and FLAGS.presets else {}
        if name == "tokenizer" and FLAGS.roberta_dir:
            kwargs = {"roberta_dir": FLAGS.roberta_dir}
        if name == json_for:
            kwargs = {"json_path": FLAGS.json}
        start = time.perf_counter()
        result = module.run(**kwargs)
        lines += result + [f"({name}: {time.perf_counter() - start:.0f} s)"]
        print("\n".join(result), flush=True)
    if FLAGS.output:
        with open(FLAGS.output, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    app.run(main)
