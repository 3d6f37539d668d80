import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertConfig, BertEncoder


def make_inputs(batch=3, seq=12, vocab=1000, pad_from=(12, 7, 4), seed=0):
    """Word ids with [CLS]=2-style first token and trailing padding per row."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab, size=(batch, seq)).astype("int32")
    mask = np.zeros((batch, seq), "int32")
    types = np.zeros((batch, seq), "int32")
    for row, length in enumerate(pad_from[:batch]):
        mask[row, :length] = 1
        ids[row, length:] = 0
        types[row, length // 2:length] = 1
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


@pytest.fixture(scope="module")
def encoder():
    cfg = BertConfig.from_preset("tiny", vocab_size=1000, dropout_rate=0.0,
                                 attention_dropout_rate=0.0)
    keras.utils.set_random_seed(1)
    return BertEncoder(cfg)


def test_output_contract(encoder):
    inputs = make_inputs()
    out = encoder(inputs)
    assert set(out) == {"sequence_output", "pooled_output", "encoder_outputs", "default"}
    assert out["sequence_output"].shape == (3, 12, 128)
    assert out["pooled_output"].shape == (3, 128)
    assert len(out["encoder_outputs"]) == 2
    np.testing.assert_array_equal(out["default"], out["pooled_output"])
    np.testing.assert_array_equal(out["encoder_outputs"][-1], out["sequence_output"])
    for t in [out["sequence_output"], out["pooled_output"], *out["encoder_outputs"]]:
        assert t.dtype == tf.float32
    # Pooler is dense + tanh over the [CLS] position.
    kernel, bias = encoder.pooler.get_weights()
    expected = np.tanh(out["sequence_output"].numpy()[:, 0] @ kernel + bias)
    np.testing.assert_allclose(out["pooled_output"], expected, atol=1e-5)


def test_padding_invariance(encoder):
    inputs = make_inputs()
    base = encoder(inputs)
    padded = {k: np.pad(v, [(0, 0), (0, 20)]) for k, v in inputs.items()}
    # Padding positions hold junk ids: masked keys must not matter.
    padded["input_word_ids"][:, 12:] = 77
    out = encoder(padded)
    mask = inputs["input_mask"].astype(bool)
    diff = np.abs(out["sequence_output"].numpy()[:, :12][mask]
                  - base["sequence_output"].numpy()[mask]).max()
    assert diff < 1e-5
    assert np.abs(out["pooled_output"] - base["pooled_output"]).max() < 1e-5
    # Junk in masked positions of the original length does not matter either.
    junk = {k: v.copy() for k, v in inputs.items()}
    junk["input_word_ids"][~mask] = 123
    out = encoder(junk)
    assert np.abs(out["sequence_output"].numpy()[mask]
                  - base["sequence_output"].numpy()[mask]).max() < 1e-5


def test_base_parameter_count_is_bert_base():
    encoder = BertEncoder(BertConfig.from_preset("base"))
    assert encoder.count_params() == 109_482_240


def test_xla_equals_eager(encoder):
    inputs = make_inputs()
    eager = encoder(inputs)
    graph = tf.function(encoder)(inputs)
    xla = tf.function(encoder, jit_compile=True)(inputs)
    for out in (graph, xla):
        for key in ("sequence_output", "pooled_output"):
            assert np.abs(out[key] - eager[key]).max() < 1e-5


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_outputs_float32_and_close(encoder, policy):
    mixed = BertEncoder(encoder.config, dtype=policy)
    mixed.set_named_weights(encoder.get_named_weights())
    assert mixed.embeddings.compute_dtype == policy.split("_")[1]
    assert all(v.dtype == "float32" for v in mixed.weights)
    inputs = make_inputs()
    ref = encoder(inputs)
    out = mixed(inputs)
    for key in ("sequence_output", "pooled_output", "default"):
        assert out[key].dtype == tf.float32
    assert all(t.dtype == tf.float32 for t in out["encoder_outputs"])
    a = out["sequence_output"].numpy()[inputs["input_mask"].astype(bool)]
    b = ref["sequence_output"].numpy()[inputs["input_mask"].astype(bool)]
    cos = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    assert cos.min() >= 0.999, cos.min()
    xla = tf.function(mixed, jit_compile=True)(inputs)
    assert xla["sequence_output"].dtype == tf.float32


def test_attention_probs_are_optional_and_masked(encoder):
    probing = BertEncoder(encoder.config, return_attention_probs=True)
    probing.set_named_weights(encoder.get_named_weights())
    inputs = make_inputs()
    out = probing(inputs)
    assert "attention_probs" not in encoder(inputs)
    probs = [p.numpy() for p in out["attention_probs"]]
    assert len(probs) == 2 and probs[0].shape == (3, 2, 12, 12)
    np.testing.assert_allclose(probs[0].sum(-1), 1.0, atol=1e-5)
    # No attention goes to padded keys.
    pad = ~inputs["input_mask"].astype(bool)
    for p in probs:
        assert np.abs(p * pad[:, None, None, :]).max() < 1e-6
    np.testing.assert_allclose(out["sequence_output"], encoder(inputs)["sequence_output"],
                               atol=1e-6)


def test_get_config_round_trip(encoder):
    clone = BertEncoder.from_config(encoder.get_config())
    assert clone.config == encoder.config
    assert clone.get_config() == encoder.get_config()
    assert clone.count_params() == encoder.count_params()


def test_keras_file_round_trip(encoder, tmp_path):
    path = str(tmp_path / "encoder.keras")
    encoder.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, BertEncoder)
    inputs = make_inputs()
    np.testing.assert_allclose(loaded(inputs)["sequence_output"],
                               encoder(inputs)["sequence_output"], atol=1e-6)


def test_encoder_inside_a_functional_model(encoder):
    inputs = {name: keras.Input((None,), dtype="int32", name=name)
              for name in ("input_word_ids", "input_mask", "input_type_ids")}
    logits = keras.layers.Dense(2)(encoder(inputs)["pooled_output"])
    model = keras.Model(inputs, logits)
    assert model(make_inputs()).shape == (3, 2)


def test_dropout_only_in_training():
    cfg = BertConfig.from_preset("tiny", vocab_size=1000)  # dropout 0.1
    enc = BertEncoder(cfg)
    inputs = make_inputs()
    a = enc(inputs, training=False)["sequence_output"]
    b = enc(inputs, training=False)["sequence_output"]
    c = enc(inputs, training=True)["sequence_output"]
    np.testing.assert_array_equal(a, b)
    assert np.abs(a - c).max() > 1e-3


@pytest.mark.parametrize("act", ["gelu", "gelu_tanh", "relu"])
def test_feed_forward_activation(encoder, act):
    from scipy.special import erf

    enc = BertEncoder(encoder.config.replace(hidden_act=act))
    x = np.linspace(-4, 4, 81).astype("float32")
    got = np.asarray(enc.transformer_layers[0].intermediate_dense.activation(x))
    expected = {
        "gelu": 0.5 * x * (1 + erf(x / np.sqrt(2))),
        "gelu_tanh": 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
        "relu": np.maximum(x, 0),
    }[act]
    np.testing.assert_allclose(got, expected, atol=2e-6)
    # The exact and tanh forms really differ (by ~1e-4 near |x|=2).
    assert np.abs(expected - 0.5 * x * (1 + erf(x / np.sqrt(2)))).max() > (
        1e-4 if act != "gelu" else -1)


# -- Bad input gets a clear error --------------------------------------------

def test_missing_and_unknown_keys(encoder):
    inputs = make_inputs()
    del inputs["input_mask"]
    with pytest.raises(ValueError, match=r"missing \['input_mask'\]"):
        encoder(inputs)
    inputs = make_inputs()
    inputs["input_ids"] = inputs["input_word_ids"]
    with pytest.raises(ValueError, match=r"unexpected \['input_ids'\]"):
        encoder(inputs)
    with pytest.raises(TypeError, match="takes a dict"):
        encoder(make_inputs()["input_word_ids"])


def test_wrong_dtype_rank_and_length(encoder):
    inputs = make_inputs()
    inputs["input_mask"] = inputs["input_mask"].astype("float32")
    with pytest.raises(TypeError, match="'input_mask' must be int32, got float32"):
        encoder(inputs)
    inputs = make_inputs()
    inputs["input_word_ids"] = tf.constant([["a", "b"]])
    with pytest.raises(TypeError, match="'input_word_ids' must be int32, got string"):
        encoder(inputs)
    inputs = {k: v[0] for k, v in make_inputs().items()}
    with pytest.raises(ValueError, match=r"must be \[batch, seq_length\], got shape \(12,\)"):
        encoder(inputs)
    long = make_inputs(batch=1, seq=513, pad_from=(513,))
    with pytest.raises(ValueError, match="sequence length 513.*max_position_embeddings=512"):
        encoder(long)
    inputs = make_inputs()
    inputs["input_type_ids"] = inputs["input_type_ids"][:, :5]
    with pytest.raises(ValueError, match="share one shape"):
        encoder(inputs)


def test_int64_inputs_are_accepted(encoder):
    inputs = make_inputs()
    ref = encoder(inputs)["sequence_output"]
    out = encoder({k: v.astype("int64") for k, v in inputs.items()})["sequence_output"]
    np.testing.assert_array_equal(out, ref)


def test_too_long_at_run_time_in_a_graph(encoder):
    spec = tf.TensorSpec([None, None], tf.int32)
    fn = tf.function(encoder, input_signature=[{
        "input_word_ids": spec, "input_mask": spec, "input_type_ids": spec}])
    long = make_inputs(batch=1, seq=600, pad_from=(600,))
    with pytest.raises(tf.errors.InvalidArgumentError, match="exceeds max_position_embeddings"):
        fn(long)


def test_bad_config_argument():
    with pytest.raises(TypeError, match="needs a BertConfig"):
        BertEncoder("base")
    with pytest.raises(ValueError, match=r"^config: unknown key\(s\) \['hidden'\] for BertConfig"):
        BertEncoder({"hidden": 3})


# === ALBERT-style options: factorized embeddings and shared layers ===

def test_albert_base_parameter_count_matches_transformers():
    import torch
    import transformers

    config = BertConfig.from_preset("base", embedding_size=128, share_layers=True)
    ours = BertEncoder(config).count_params()
    torch.manual_seed(0)
    albert = transformers.AlbertModel(transformers.AlbertConfig(
        vocab_size=30522, embedding_size=128, hidden_size=768, num_hidden_layers=12,
        num_attention_heads=12, intermediate_size=3072))  # with the pooler, as by default
    theirs = sum(p.numel() for p in albert.parameters())
    assert ours == theirs == 11_750_400


@pytest.fixture(scope="module")
def albert_style():
    cfg = BertConfig.from_preset("tiny", vocab_size=1000, num_layers=3, embedding_size=32,
                                 share_layers=True, dropout_rate=0.0, attention_dropout_rate=0.0)
    keras.utils.set_random_seed(2)
    return BertEncoder(cfg)


def test_shared_layers_apply_one_block_num_layers_times(albert_style):
    inputs = make_inputs()
    out = albert_style(inputs)
    names = albert_style.get_named_weights()
    assert not any(n.startswith("transformer_layer_1") for n in names)
    assert names["embeddings/word_embeddings/embeddings"].shape == (1000, 32)
    assert names["embeddings/embedding_projection/kernel"].shape == (32, 128)
    # By hand: embeddings (E wide, projected to H), then the one block 3 times.
    x = albert_style.embeddings(inputs["input_word_ids"], inputs["input_type_ids"])
    mask = np.asarray(inputs["input_mask"], bool)[:, None, :]
    block = albert_style.transformer_layers[0]
    assert len(albert_style.transformer_layers) == 1
    for i in range(3):
        x = block(x, attention_mask=mask)
        np.testing.assert_allclose(out["encoder_outputs"][i], x, atol=1e-5)
    assert len(out["encoder_outputs"]) == 3
    assert out["sequence_output"].shape == (3, 12, 128)


def test_albert_style_round_trips(albert_style, tmp_path):
    from tfbert import checkpoint
    from tfbert.convert import common

    config = albert_style.config
    want = {n: v.shape for n, v in albert_style.get_named_weights().items()}
    assert common.encoder_weight_shapes(config) == want
    clone = BertEncoder.from_config(albert_style.get_config())
    assert clone.config == config and clone.count_params() == albert_style.count_params()
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"w{i}\n" for i in range(1000)))
    path = checkpoint.save_checkpoint(str(tmp_path / "ckpt"), config,
                                      albert_style.get_named_weights(), str(vocab), True)
    loaded = BertEncoder.from_pretrained(path)
    assert loaded.config.embedding_size == 32 and loaded.config.share_layers
    inputs = make_inputs()
    np.testing.assert_array_equal(loaded(inputs)["sequence_output"],
                                  albert_style(inputs)["sequence_output"])
    # An unshared model cannot take the shared weights: a clear error, nothing loaded.
    with pytest.raises(ValueError, match="missing weights.*transformer_layer_1"):
        BertEncoder(config.replace(share_layers=False)).set_named_weights(
            albert_style.get_named_weights())


def test_bert_defaults_keep_bert_weights():
    config = BertConfig.from_preset("tiny", vocab_size=100)
    assert config.embedding_size is None and config.share_layers is False
    names = BertEncoder(config).get_named_weights()
    assert not any("embedding_projection" in n for n in names)
    # embedding_size = hidden_size is BERT too (no projection).
    same = BertEncoder(config.replace(embedding_size=128)).get_named_weights()
    assert {n: v.shape for n, v in same.items()} == {n: v.shape for n, v in names.items()}
    with pytest.raises(ValueError, match="embedding_size: must be > 0, got 0"):
        config.replace(embedding_size=0)
    with pytest.raises(ValueError, match="share_layers: expected true or false, got 'yes'"):
        config.replace(share_layers="yes")


@pytest.fixture(scope="module")
def pre_layer_norm():
    cfg = BertConfig.from_preset("tiny", vocab_size=1000, num_layers=2, norm_first=True,
                                 dropout_rate=0.0, attention_dropout_rate=0.0)
    keras.utils.set_random_seed(5)
    return BertEncoder(cfg)


def test_pre_layer_norm_blocks_by_hand(pre_layer_norm):
    """Each sub-layer normalizes its input; the stream is normalized once, at the end."""
    inputs = make_inputs()
    out = pre_layer_norm(inputs)
    x = pre_layer_norm.embeddings(inputs["input_word_ids"], inputs["input_type_ids"])
    mask = np.asarray(inputs["input_mask"], bool)[:, None, :]
    for i, block in enumerate(pre_layer_norm.transformer_layers):
        normed = block.attention_layer_norm(x)
        x = x + block.self_attention(normed, normed, attention_mask=mask)
        x = x + block.output_dense(block.intermediate_dense(block.output_layer_norm(x)))
        if i == 0:
            np.testing.assert_allclose(out["encoder_outputs"][0], x, atol=1e-5)
    x = pre_layer_norm.final_layer_norm(x)
    np.testing.assert_allclose(out["sequence_output"], x, atol=1e-5)
    np.testing.assert_allclose(out["encoder_outputs"][-1], x, atol=1e-5)


def test_pre_layer_norm_round_trips(pre_layer_norm, tmp_path):
    from tfbert import checkpoint
    from tfbert.convert import common

    config = pre_layer_norm.config
    names = pre_layer_norm.get_named_weights()
    assert names["final_layer_norm/gamma"].shape == (128,)
    assert common.encoder_weight_shapes(config) == {n: v.shape for n, v in names.items()}
    clone = BertEncoder.from_config(pre_layer_norm.get_config())
    assert clone.config == config and clone.get_config() == pre_layer_norm.get_config()
    inputs = make_inputs()
    want = pre_layer_norm(inputs)["sequence_output"]
    pre_layer_norm.save(str(tmp_path / "encoder.keras"))
    loaded = keras.models.load_model(str(tmp_path / "encoder.keras"))
    np.testing.assert_allclose(loaded(inputs)["sequence_output"], want, atol=1e-6)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"w{i}\n" for i in range(1000)))
    path = checkpoint.save_checkpoint(str(tmp_path / "ckpt"), config, names, str(vocab), True)
    from_ckpt = BertEncoder.from_pretrained(path)
    assert from_ckpt.config.norm_first
    np.testing.assert_allclose(from_ckpt(inputs)["sequence_output"], want, atol=1e-6)


def test_norm_first_defaults_to_post_layer_norm():
    config = BertConfig.from_preset("tiny", vocab_size=100)
    assert config.norm_first is False
    assert "final_layer_norm/gamma" not in BertEncoder(config).get_named_weights()
    with pytest.raises((TypeError, ValueError), match="norm_first"):
        config.replace(norm_first="yes")
