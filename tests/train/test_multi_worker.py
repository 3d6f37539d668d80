"""Distribution: MirroredStrategy on 2 logical CPUs equals one device, and
Keras `fit` under a real 2-process MultiWorkerMirroredStrategy on 127.0.0.1."""

import json
import os
import subprocess
import sys

import pytest

from tfbert.train import multi_worker

# One training run: a tiny BERT classifier fitted for a few steps with dropout
# off; prints the final weights' checksum and saves them to OUT. An optional
# 4th argument N: batches of 8/N accumulated over N steps (the same 6 updates).
TRAIN_SCRIPT = r"""
import json, os, sys
import numpy as np
import keras, tensorflow as tf
from tfbert import BertConfig, BertEncoder
from tfbert.train.optimizer import create_optimizer
from tfbert.train.strategy import get_strategy

strategy = get_strategy(sys.argv[1], num_devices=int(sys.argv[2]))
out = sys.argv[3]
accumulate = int(sys.argv[4]) if len(sys.argv) > 4 else 1
keras.utils.set_random_seed(0)
with strategy.scope():
    cfg = BertConfig.from_preset("tiny", vocab_size=500, dropout_rate=0.0,
                                 attention_dropout_rate=0.0)
    encoder = BertEncoder(cfg)
    names = ("input_word_ids", "input_mask", "input_type_ids")
    inputs = {n: keras.Input((None,), dtype="int32", name=n) for n in names}
    logits = keras.layers.Dense(2, name="head")(encoder(inputs)["pooled_output"])
    model = keras.Model(inputs, logits)
    model.compile(create_optimizer(1e-3, num_train_steps=6, num_warmup_steps=1,
                                   gradient_accumulation_steps=accumulate,
                                   dense_gradients=True),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
rng = np.random.default_rng(1)
ids = rng.integers(5, 500, size=(48, 12)).astype("int32")
labels = (ids[:, 3] > 250).astype("int32")
x = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
options = tf.data.Options()
options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
ds = tf.data.Dataset.from_tensor_slices((x, labels)).batch(8 // accumulate)
ds = ds.with_options(options)
history = model.fit(ds, epochs=1, verbose=0)
np.savez(out, *[w.numpy() for w in model.weights])
print(json.dumps({"replicas": strategy.num_replicas_in_sync,
                  "steps": int(model.optimizer.iterations.numpy()),
                  "accumulators": [float(np.abs(v.numpy()).max()) for v in model.optimizer.variables
                                   if "gradient_accumulator" in v.path],
                  "loss": history.history["loss"][-1]}))
"""


def _run(args, env=None, timeout=240):
    proc = subprocess.run([sys.executable, "-c", TRAIN_SCRIPT, *args], capture_output=True,
                          text=True, timeout=timeout,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _load(path):
    import numpy as np

    data = np.load(path)
    return [data[k] for k in sorted(data.files, key=lambda k: int(k.split("_")[1]))]


@pytest.fixture(scope="module")
def one_device(tmp_path_factory):
    """The reference run: one device, batches of 8."""
    path = tmp_path_factory.mktemp("one_device") / "one.npz"
    return _run(["off", "1", str(path)]), path


def test_mirrored_two_logical_cpus_equals_one_device(tmp_path, one_device):
    import numpy as np

    one, one_path = one_device
    two = _run(["mirrored", "2", str(tmp_path / "two.npz")])
    assert one["replicas"] == 1 and two["replicas"] == 2
    assert one["steps"] == two["steps"] == 6
    a, b = _load(one_path), _load(tmp_path / "two.npz")
    assert len(a) == len(b)
    diff = max(float(np.abs(x - y).max()) for x, y in zip(a, b))
    moved = max(float(np.abs(x).max()) for x in a)
    assert diff <= 1e-5, diff
    assert moved > 0


@pytest.mark.slow
def test_keras_fit_under_two_worker_processes(tmp_path, tf_configs):
    import numpy as np

    procs = []
    for i, config in enumerate(tf_configs(2)):
        procs.append(subprocess.Popen(
            [sys.executable, "-c", TRAIN_SCRIPT, "multi_worker_mirrored", "1",
             str(tmp_path / f"w{i}.npz")],
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_CONFIG": config},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        results = [p.communicate(timeout=240) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err[-3000:]
    infos = [json.loads(out.strip().splitlines()[-1]) for out, _ in results]
    assert [i["replicas"] for i in infos] == [2, 2]
    # The dataset's batch (8) is the global batch, 4 per worker: 6 steps.
    assert [i["steps"] for i in infos] == [6, 6]
    assert infos[0]["loss"] == infos[1]["loss"]
    w0, w1 = _load(tmp_path / "w0.npz"), _load(tmp_path / "w1.npz")
    assert all(np.array_equal(a, b) for a, b in zip(w0, w1))


def test_chief_from_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert multi_worker.is_chief() and multi_worker.task() == (None, 0)
    cluster = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}
    for index, chief in ((0, True), (1, False)):
        monkeypatch.setenv("TF_CONFIG", json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": index}}))
        assert multi_worker.is_chief() is chief
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": {**cluster, "chief": ["127.0.0.1:3"]}, "task": {"type": "worker", "index": 0}}))
    assert not multi_worker.is_chief()


def test_accumulated_micro_batches_on_two_replicas_equal_one_large_batch(tmp_path, one_device):
    """train.gradient_accumulation_steps under a 2-replica MirroredStrategy:
    4 micro-batches of 2 (1 per replica) give the weights of one batch of 8 on
    one device, clipping included (clipnorm=1 is active at lr 1e-3 here).
    Keras' own accumulation fails under MirroredStrategy on CPUs (a
    merge_call inside its cond): `tfbert.train.optimizer` runs it in the
    cross-replica context. The default strategy: tests/train/test_optimizer.py."""
    import numpy as np

    full, full_path = one_device
    acc = _run(["mirrored", "2", str(tmp_path / "acc.npz"), "4"])
    assert acc["replicas"] == 2
    assert acc["steps"] == full["steps"] == 6  # optimizer updates, not micro-batches
    assert acc["accumulators"] and max(acc["accumulators"]) == 0.0  # reset at the 6th update
    a, b = _load(full_path), _load(tmp_path / "acc.npz")
    diff = max(float(np.abs(x - y).max()) for x, y in zip(a, b))
    assert diff <= 1e-5, diff
