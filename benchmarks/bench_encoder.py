"""Encoder inference throughput: eager graph vs XLA, fp32 vs bf16, side by side."""

import time

import keras
import numpy as np
import tensorflow as tf

from tfbert import BertConfig, BertEncoder


def _inputs(batch, seq, vocab):
    ids = np.random.default_rng(0).integers(5, vocab, size=(batch, seq)).astype("int32")
    return {"input_word_ids": tf.constant(ids), "input_mask": tf.ones_like(ids),
            "input_type_ids": tf.zeros_like(ids)}


def _seconds_per_call(fn, inputs, repeats):
    fn(inputs)["pooled_output"].numpy()  # trace / compile
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(inputs)["pooled_output"].numpy()
        best = min(best, time.perf_counter() - start)
    return best


def run(presets=("tiny", "base"), batch=8, seq=128, repeats=3):
    """One line per (preset, dtype, XLA) with sequences/s; best of `repeats`."""
    lines = []
    for preset in presets:
        config = BertConfig.from_preset(preset)
        ref = BertEncoder(config)
        inputs = _inputs(batch, seq, config.vocab_size)
        results = {}
        for dtype in ("float32", "mixed_bfloat16"):
            enc = BertEncoder(config, dtype=dtype)
            enc.set_named_weights(ref.get_named_weights())
            for xla in (False, True):
                fn = tf.function(lambda x, e=enc: e(x, training=False), jit_compile=xla)
                seconds = _seconds_per_call(fn, inputs, repeats)
                results[(dtype, xla)] = batch / seconds
                lines.append(f"encoder {preset:5s} {dtype:15s} xla={str(xla):5s} "
                             f"batch {batch}x{seq}: {batch / seconds:8.1f} seq/s")
        base = results[("float32", False)]
        lines.append(f"encoder {preset:5s} speedup vs fp32 no-XLA: " + ", ".join(
            f"{d}/xla={x}: {v / base:.2f}x" for (d, x), v in results.items()))
        keras.backend.clear_session()
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
