"""Pretraining throughput (tokens/s): train steps of BertPretrainer, fp32 vs
bf16, XLA on/off, plus the dynamic-masking input pipeline on its own."""

import time

import keras
import numpy as np
import tensorflow as tf

from tfbert import BertConfig, BertEncoder
from tfbert.models.pretrainer import BertPretrainer
from tfbert.text.masking import MaskedLMMasker
from tfbert.train.optimizer import create_optimizer


def _batch(batch, seq, vocab, masker):
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, vocab, size=(batch, seq)).astype("int32")
    ids[:, 0], ids[:, seq // 2], ids[:, -1] = 101, 102, 102
    masked = masker(ids, seed=[0, 0])
    x = {"input_word_ids": masked["input_word_ids"], "input_mask": tf.ones_like(ids),
         "input_type_ids": tf.constant((np.arange(seq) > seq // 2).astype("int32")[None].repeat(batch, 0)),
         "masked_lm_positions": masked["masked_lm_positions"]}
    y = {"masked_lm_ids": masked["masked_lm_ids"], "masked_lm_weights": masked["masked_lm_weights"],
         "next_sentence_labels": tf.zeros([batch], tf.int32)}
    return x, y


def _train_tokens_per_second(preset, policy, xla, batch, seq, steps, masker):
    keras.mixed_precision.set_global_policy(policy)
    try:
        model = BertPretrainer(BertEncoder(BertConfig.from_preset(preset)))
        model.compile(optimizer=create_optimizer(1e-4, 1000, 10), jit_compile=xla)
        x, y = _batch(batch, seq, model.config.vocab_size, masker)
        model.train_on_batch(x, y)  # trace / compile
        model.train_on_batch(x, y)
        start = time.perf_counter()
        for _ in range(steps):
            logs = model.train_on_batch(x, y, return_dict=True)
        float(logs["loss"])
        return batch * seq * steps / (time.perf_counter() - start)
    finally:
        keras.mixed_precision.set_global_policy("float32")
        keras.backend.clear_session()


def _pipeline_tokens_per_second(batch, seq, masker, batches=50):
    ids = np.random.default_rng(1).integers(1000, 30522, size=(batch * batches, seq)).astype("int32")
    ds = tf.data.Dataset.from_tensor_slices(ids).batch(batch, drop_remainder=True).enumerate()
    ds = ds.map(lambda i, x: masker(x, seed=tf.stack([tf.constant(0, tf.int64), i])),
                num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
    for _ in ds.take(2):
        pass
    start = time.perf_counter()
    n = sum(1 for _ in ds)
    return n * batch * seq / (time.perf_counter() - start)


def run(presets=("tiny", "base"), seq=128, steps=None):
    """One line per (preset, dtype, XLA): training tokens/s (batch x seq per step)."""
    masker = MaskedLMMasker(vocab_size=30522, mask_id=103, special_ids=[0, 101, 102],
                            max_predictions=20)
    lines = [f"pretrain masking pipeline (tf.data, batch 32x{seq}): "
             f"{_pipeline_tokens_per_second(32, seq, masker):,.0f} tokens/s"]
    for preset in presets:
        batch = 32 if preset == "tiny" else 8
        n = steps or (20 if preset == "tiny" else 3)
        for policy in ("float32", "mixed_bfloat16"):
            for xla in (False, True):
                tps = _train_tokens_per_second(preset, policy, xla, batch, seq, n, masker)
                lines.append(f"pretrain {preset:5s} {policy:15s} xla={str(xla):5s} batch {batch}x{seq}: "
                             f"{tps:9,.0f} tokens/s")
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
