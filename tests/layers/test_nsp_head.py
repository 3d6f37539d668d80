"""NextSentenceHead: two float32 logits, checkpoint weight names."""

import keras
import numpy as np

from tfbert.layers.nsp_head import NextSentenceHead


def test_logits_and_weight_names():
    head = NextSentenceHead(name="nsp", dtype="mixed_bfloat16")
    pooled = np.random.default_rng(0).normal(size=(3, 6)).astype("float32")
    out = head(pooled)
    assert tuple(out.shape) == (3, 2)
    assert keras.backend.standardize_dtype(out.dtype) == "float32"
    assert sorted(v.path for v in head.weights) == ["nsp/bias", "nsp/kernel"]
    want = pooled @ head.kernel.numpy() + head.bias.numpy()
    np.testing.assert_allclose(np.asarray(out), want, atol=0.05)  # bf16 matmul
