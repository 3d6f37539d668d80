r"""Gradient accumulation against the full batch: peak memory and training
time per example, for one effective batch on a MiniLM-shaped classifier
(6 layers, hidden 384, 12 heads, intermediate 1536; random weights: speed and
memory do not depend on their values).

    python tools/benchmark.py --what=accumulation
    python benchmarks/bench_accumulation.py

Each setting runs in a fresh process (peak memory is the process's peak
resident set, `ru_maxrss`, and "training" is that peak minus the resident
set after the model and optimizer were built), XLA on, 2 warm-up updates,
then `UPDATES` timed updates of the same effective batch.
"""

import json
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UPDATES = 4

_ONE = r"""
import json, resource, sys, time
import numpy as np, keras, tensorflow as tf
from tfbert import BertConfig, BertEncoder
from tfbert.models.classifier import BertClassifier
from tfbert.train.optimizer import create_optimizer

batch, seq, accumulate, updates = (int(a) for a in sys.argv[1:5])
micro = batch // accumulate
keras.utils.set_random_seed(0)
config = BertConfig.from_preset("small", num_layers=6, hidden_size=384, num_heads=12,
                                intermediate_size=1536)
model = BertClassifier(BertEncoder(config), num_classes=2)
model.compile(create_optimizer(1e-4, num_train_steps=100, gradient_accumulation_steps=accumulate),
              keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True)
rng = np.random.default_rng(0)
n = batch * (updates + 2)
ids = rng.integers(1000, config.vocab_size, size=(n, seq)).astype("int32")
x = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
ds = tf.data.Dataset.from_tensor_slices((x, rng.integers(0, 2, n).astype("int32"))).batch(micro)
model(dict((k, v[:micro]) for k, v in x.items()))
model.optimizer.build(model.trainable_variables)
built = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
times = []
class Clock(keras.callbacks.Callback):
    def on_train_batch_end(self, b, logs=None):
        times.append(time.perf_counter())
model.fit(ds, epochs=1, verbose=0, callbacks=[Clock()])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
timed = times[2 * accumulate - 1:]  # after 2 warm-up updates (compilation)
seconds = (timed[-1] - timed[0]) / (len(timed) - 1) * accumulate  # per update
print(json.dumps({"built_mb": built / 1024, "peak_mb": peak / 1024,
                  "ms_per_example": 1000 * seconds / batch,
                  "updates": int(model.optimizer.iterations.numpy())}))
"""


def measure(batch, seq, accumulate, updates=UPDATES):
    proc = subprocess.run([sys.executable, "-c", _ONE, str(batch), str(seq), str(accumulate),
                           str(updates)], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "2"})
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(batch=32, seq=128, settings=(1, 4, 8)):
    """Returns the report lines: one per accumulation setting."""
    lines = [f"## Gradient accumulation (MiniLM shape, effective batch {batch} x {seq} tokens, "
             f"XLA, {UPDATES} timed updates)",
             "| micro-batch x steps | peak RSS MB | training MB (peak - built) | ms/example |",
             "|---|---|---|---|"]
    for n in settings:
        r = measure(batch, seq, n)
        lines.append(f"| {batch // n} x {n} | {r['peak_mb']:.0f} | "
                     f"{r['peak_mb'] - r['built_mb']:.0f} | {r['ms_per_example']:.1f} |")
        print(lines[-1], flush=True)
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
