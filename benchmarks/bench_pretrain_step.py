r"""Where a budget-recipe step goes: ms per step of the input pipeline alone,
the compiled train step alone and the whole `fit` with the run's callbacks.

    taskset -c 0 python tools/benchmark.py --what=pretrain_step
    taskset -c 0 python benchmarks/bench_pretrain_step.py --fit_minutes=5 --work_dir=/tmp/w

Pin it to one core (`taskset`) to measure what one core buys. The data is
made as a user makes it (`benchmarks/common/pretrain_shards.py`: a few MB of
docstrings and /usr/share/doc text, an 8,000-token vocabulary, shards of 64
wordpieces), once per work dir. Each measurement runs in its own process
(TensorFlow sizes its thread pools once per process):

- pipeline: `pretraining_dataset` as `tfbert.runs.pretrain.run` builds it
  (parse + dynamic masking), batches pulled as fast as they come;
- step: the model and optimizer as `run` compiles them, `fit` on one batch
  repeated, no callbacks (the second epoch of two is timed);
- fit: `run(cfg)` itself (callbacks, per-epoch evaluation, checkpoints) for
  `--fit_minutes` of budget, timed from the first step after
  `WARMUP_SECONDS` (compilation) to the last; and `configs/pretrain_tiny.yaml`,
  a step-count run, the same way.

Each row gives wall ms and CPU ms (all the process's threads) per step: on a
shared machine the wall time grows with the other load, the CPU time much
less; on an idle core the two agree.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

WARMUP_SECONDS = 20.0  # compilation and the first steps, left out of the fit rows
DEFAULT_WORK = os.path.join(tempfile.gettempdir(), "tfbert_bench_pretrain_step")


def _config(name, shards, vocab, model_dir, **overrides):
    """`configs/<name>` with the data, vocab and model_dir; `overrides` name
    fields of its `train:` or `pretrain:` section."""
    from tfbert import config_loader
    from tfbert.runs.pretrain import TRAIN_FIELDS, PretrainConfig

    values = {"pretrain.train_files": shards, "vocab_file": vocab, "model_dir": model_dir}
    values.update({(f"train.{k}" if k in TRAIN_FIELDS else f"pretrain.{k}"): v
                   for k, v in overrides.items()})
    return config_loader.load(PretrainConfig, os.path.join(ROOT, "configs", name), values)


def _clocks():
    return time.perf_counter(), time.process_time()


def measure_pipeline(shards, vocab, batches=300):
    """ms per batch pulling the run's dataset as fast as it comes."""
    from tfbert.data.pretraining.dataset import pretraining_dataset
    from tfbert.text.masking import MaskedLMMasker

    cfg = _config("pretrain_budget.yaml", shards, vocab, "unused")
    pre = cfg.pretrain
    masker = MaskedLMMasker.from_vocab(vocab, max_predictions=pre.max_predictions_per_seq,
                                       mask_rate=pre.masked_lm_prob,
                                       strategy=pre.masking_strategy)
    dataset = pretraining_dataset(shards, cfg.train.batch_size, masker=masker,
                                  seed=cfg.train.seed, shuffle_buffer=pre.shuffle_buffer,
                                  next_sentence_task=pre.next_sentence_task)
    batches_iter = iter(dataset)
    for _ in range(20):  # fill the shuffle buffer and the prefetch
        next(batches_iter)
    wall, cpu = _clocks()
    for _ in range(batches):
        next(batches_iter)
    wall2, cpu2 = _clocks()
    return {"wall_ms": 1000 * (wall2 - wall) / batches, "cpu_ms": 1000 * (cpu2 - cpu) / batches}


def measure_step(shards, vocab, steps=100, steps_per_execution=1):
    """ms per step of the compiled train step on one batch repeated."""
    import keras
    import tensorflow as tf

    from tfbert.data.pretraining.dataset import pretraining_dataset
    from tfbert.runs import pretrain
    from tfbert.text.masking import MaskedLMMasker
    from tfbert.text.vocab import load_vocab
    from tfbert.train.optimizer import create_optimizer

    cfg = _config("pretrain_budget.yaml", shards, vocab, "unused", budget_minutes=60,
                  steps_per_execution=steps_per_execution)
    train, pre = cfg.train, cfg.pretrain
    masker = MaskedLMMasker.from_vocab(vocab, max_predictions=pre.max_predictions_per_seq)
    batch = next(iter(pretraining_dataset(shards, train.batch_size, masker=masker,
                                          next_sentence_task=pre.next_sentence_task)))
    model = pretrain.build_model(cfg, load_vocab(vocab))
    optimizer = create_optimizer(
        train.learning_rate, pre.num_train_steps, pre.warmup_steps,
        optimizer_type=train.optimizer_type, weight_decay=train.weight_decay,
        clipnorm=train.clipnorm or None, beta_1=pre.beta_1, beta_2=pre.beta_2,
        epsilon=train.adam_epsilon, budget_seconds=60.0 * pre.budget_minutes)
    model.compile(optimizer=optimizer, jit_compile=train.jit_compile,
                  steps_per_execution=pretrain.updates_per_execution(cfg))
    times = []

    class EpochClock(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            times.append(_clocks())

        def on_epoch_end(self, epoch, logs=None):
            float(logs["loss"])  # the last step has run
            times.append(_clocks())

    data = tf.data.Dataset.from_tensors(batch).repeat()
    model.fit(data, epochs=2, steps_per_epoch=steps, verbose=0, callbacks=[EpochClock()])
    (wall, cpu), (wall2, cpu2) = times[2], times[3]
    return {"wall_ms": 1000 * (wall2 - wall) / steps, "cpu_ms": 1000 * (cpu2 - cpu) / steps}


def measure_fit(shards, vocab, model_dir, config, **overrides):
    """ms per step of `run(cfg)` after WARMUP_SECONDS, and the steps it made."""
    import contextlib
    import io

    import keras

    from tfbert.runs.pretrain import run

    cfg = _config(config, shards, vocab, model_dir, verbose=2, **overrides)
    marks = []  # (wall, cpu, steps done) after each executed batch
    steps_per_epoch = cfg.train.steps_per_epoch

    class StepClock(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch

        def on_train_batch_end(self, batch, logs=None):
            marks.append((*_clocks(), self.epoch * steps_per_epoch + batch + 1))

    original = keras.Model.fit

    def fit(self, *args, callbacks=None, **kwargs):  # the clock after the run's callbacks
        return original(self, *args, callbacks=list(callbacks or []) + [StepClock()], **kwargs)

    keras.Model.fit = fit
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            summary = run(cfg)
    finally:
        keras.Model.fit = original
    timed = [m for m in marks if m[0] - start >= WARMUP_SECONDS]
    if len(timed) < 2:
        raise RuntimeError(f"{config}: fewer than 2 steps after {WARMUP_SECONDS:g} s; "
                           "give the run more time.")
    (wall, cpu, first), (wall2, cpu2, last) = timed[0], timed[-1]
    return {"wall_ms": 1000 * (wall2 - wall) / (last - first),
            "cpu_ms": 1000 * (cpu2 - cpu) / (last - first),
            "steps": summary["step"], "seconds": summary["seconds"]}


def _in_subprocess(function, *args, **kwargs):
    """`function(*args, **kwargs)` in a fresh Python (its own TF thread pools,
    this process's CPU affinity); its JSON result."""
    code = ("import json, sys; from benchmarks.bench_pretrain_step import *; "
            f"print('RESULT ' + json.dumps({function}(*{args!r}, **{kwargs!r})))")
    env = {**os.environ, "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, cwd=tempfile.gettempdir())
    lines = [l for l in result.stdout.splitlines() if l.startswith("RESULT ")]
    if result.returncode or not lines:
        raise RuntimeError(f"{function} failed:\n{result.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def cpu_flags():
    """The CPU's vector flags that matter to the step (from /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next(l for l in f if l.startswith("flags")).split(":")[1].split()
    except (OSError, StopIteration):
        return "unknown"
    wanted = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile")
    return " ".join(f for f in wanted if f in flags) or "no AVX2"


def run(work=None, fit_minutes=2.0, tiny_steps=200, steps_per_execution=25):
    """The profile table's rows (lines); the budget recipe's step and fit with
    `steps_per_execution` updates per call (docs/pretraining.md: 25 saves a few %)."""
    work = os.path.abspath(work or DEFAULT_WORK)
    from benchmarks.common.pretrain_shards import budget_shards

    shards, vocab = budget_shards(work)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    cpus = len(os.sched_getaffinity(0))
    lines = [f"pretrain step profile: {cpus} usable CPU(s) of {os.cpu_count()}, flags "
             f"{cpu_flags()}, load average {os.getloadavg()[0]:.1f} at start; "
             f"budget recipe batch 32 x 64, {steps_per_execution} per call, unless named"]
    rows = [
        ("input pipeline alone (ms per batch)", _in_subprocess("measure_pipeline", shards, vocab)),
        ("compiled step alone, one batch repeated",
         _in_subprocess("measure_step", shards, vocab, steps_per_execution=steps_per_execution)),
        (f"fit with the run's callbacks ({fit_minutes:g}-minute budget)",
         _in_subprocess("measure_fit", shards, vocab, os.path.join(work, f"fit-{stamp}"),
                        "pretrain_budget.yaml", budget_minutes=fit_minutes,
                        steps_per_execution=steps_per_execution)),
        (f"pretrain_tiny.yaml fit ({tiny_steps} steps)",
         _in_subprocess("measure_fit", shards, vocab, os.path.join(work, f"tiny-{stamp}"),
                        "pretrain_tiny.yaml", num_train_steps=tiny_steps)),
    ]
    for name, r in rows:
        extra = f"; {r['steps']} steps in {r['seconds']:.0f} s" if "steps" in r else ""
        lines.append(f"  {name:55s} wall {r['wall_ms']:7.1f} ms  CPU {r['cpu_ms']:7.1f} ms{extra}")
    lines.append(f"  load average at end {os.getloadavg()[0]:.1f}")
    return lines


if __name__ == "__main__":
    from absl import app, flags

    flags.DEFINE_float("fit_minutes", 2.0, "Budget of the timed recipe run.")
    flags.DEFINE_integer("tiny_steps", 200, "Steps of the pretrain_tiny.yaml run.")
    flags.DEFINE_string("work_dir", None, f"Data and runs (default {DEFAULT_WORK}).")
    flags.DEFINE_integer("steps_per_execution", 25, "Updates per call in the recipe's rows.")

    def main(argv):
        del argv
        F = flags.FLAGS
        print("\n".join(run(F.work_dir, F.fit_minutes, F.tiny_steps, F.steps_per_execution)))

    app.run(main)
