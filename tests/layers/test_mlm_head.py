"""MaskedLMHead: gathers before projecting, tied decoder, float32 logits, config."""

import keras
import numpy as np
from keras import ops

from tfbert.layers.mlm_head import MaskedLMHead


def embedding(vocab=40, hidden=8):
    layer = keras.layers.Embedding(vocab, hidden)
    layer.build((None,))
    return layer


def test_logits_at_positions_equal_the_full_projection():
    emb = embedding()
    head = MaskedLMHead(emb, hidden_size=8, name="mlm")
    seq = keras.random.normal((2, 5, 8), seed=1)
    positions = np.array([[4, 0, 2], [1, 1, 3]], "int32")
    logits = ops.convert_to_numpy(head(seq, positions))
    full = ops.convert_to_numpy(head(seq, np.tile(np.arange(5, dtype="int32"), (2, 1))))
    np.testing.assert_allclose(logits, np.take_along_axis(full, positions[:, :, None], axis=1),
                               atol=1e-5)
    # Decoder = the embedding matrix itself.
    head.output_bias.assign(np.zeros(40))
    x = head.layer_norm(head.transform(ops.take_along_axis(seq, positions[:, :, None], axis=1)))
    np.testing.assert_allclose(logits, ops.convert_to_numpy(ops.matmul(x, ops.transpose(emb.embeddings))),
                               atol=1e-5)
    assert sorted(v.path for v in head.weights if v.path.startswith("mlm/")) == [
        "mlm/layer_norm/beta", "mlm/layer_norm/gamma", "mlm/output_bias",
        "mlm/transform/bias", "mlm/transform/kernel",
    ]


def test_bfloat16_policy_gives_float32_logits_and_config_round_trips():
    head = MaskedLMHead(embedding(), hidden_size=8, hidden_act="relu", dtype="mixed_bfloat16")
    out = head(keras.random.normal((1, 3, 8)), np.array([[0, 2]], "int32"))
    assert keras.backend.standardize_dtype(out.dtype) == "float32"
    config = head.get_config()
    assert config["hidden_act"] == "relu" and config["hidden_size"] == 8
    clone = MaskedLMHead(embedding(), **{k: v for k, v in config.items() if k != "dtype"})
    assert clone.hidden_act == "relu"
