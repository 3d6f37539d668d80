"""BertPretrainer: tied decoder, loss over real predictions, heads, checkpoints."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertEncoder
from tfbert.models.pretrainer import BertPretrainer
from tfbert.train.optimizer import create_optimizer

VOCAB = 60


def make_batch(batch=4, seq=12, preds=4, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, VOCAB, size=(batch, seq)).astype("int32")
    x = {
        "input_word_ids": ids,
        "input_mask": np.ones_like(ids),
        "input_type_ids": np.zeros_like(ids),
        "masked_lm_positions": rng.integers(1, seq, size=(batch, preds)).astype("int32"),
    }
    y = {
        "masked_lm_ids": rng.integers(5, VOCAB, size=(batch, preds)).astype("int32"),
        "masked_lm_weights": np.ones((batch, preds), "float32"),
        "next_sentence_labels": rng.integers(0, 2, size=(batch,)).astype("int32"),
    }
    return x, y


@pytest.fixture()
def model(tiny_config):
    return BertPretrainer(BertEncoder(tiny_config.replace(vocab_size=VOCAB)))


def test_decoder_is_the_word_embedding_variable(model):
    embedding = model.encoder.token_embedding
    assert model.mlm_head.embedding_layer.embeddings is embedding
    shaped = [v for v in model.trainable_variables if tuple(v.shape) == tuple(embedding.shape)]
    assert len(shaped) == 1
    # A training step moves the shared variable, and the logits follow it.
    x, y = make_batch()
    before = embedding.numpy().copy()
    model.compile(optimizer=keras.optimizers.SGD(0.5))
    model.train_on_batch(x, y)
    assert not np.allclose(before, embedding.numpy())
    embedding.assign(np.zeros_like(before))
    logits = model(x)["mlm_logits"].numpy()
    np.testing.assert_allclose(logits, np.broadcast_to(model.mlm_head.output_bias.numpy(), logits.shape), atol=1e-6)


def test_mlm_loss_ignores_padding_predictions(model):
    x, y = make_batch()
    y["masked_lm_weights"][:, 2:] = 0.0
    pred = model(x)
    loss = float(model.compute_loss(x, y, pred))
    # Changing what sits in padded prediction slots changes nothing.
    y2 = {k: v.copy() for k, v in y.items()}
    y2["masked_lm_ids"][:, 2:] = 7
    x2 = dict(x, masked_lm_positions=x["masked_lm_positions"].copy())
    x2["masked_lm_positions"][:, 2:] = 0
    assert float(model.compute_loss(x2, y2, model(x2))) == pytest.approx(loss, rel=1e-5)
    # And it is the mean over the real predictions only, plus NSP.
    mlm = keras.losses.sparse_categorical_crossentropy(
        y["masked_lm_ids"][:, :2], pred["mlm_logits"][:, :2], from_logits=True
    ).numpy().mean()
    nsp = keras.losses.sparse_categorical_crossentropy(
        y["next_sentence_labels"], pred["nsp_logits"], from_logits=True
    ).numpy().mean()
    assert loss == pytest.approx(mlm + nsp, rel=1e-5)


def test_all_padding_batch_has_zero_mlm_loss(tiny_config):
    model = BertPretrainer(BertEncoder(tiny_config.replace(vocab_size=VOCAB)),
                           next_sentence_task="none")
    x, y = make_batch()
    y["masked_lm_weights"][:] = 0.0
    assert float(model.compute_loss(x, y, model(x))) == 0.0
    assert "nsp_logits" not in model(x)


def test_head_weight_names_follow_the_checkpoint_contract(model):
    heads = model.head_weights()
    assert sorted(heads["mlm"]) == [
        "layer_norm/beta", "layer_norm/gamma", "output_bias", "transform/bias", "transform/kernel"
    ]
    assert heads["mlm"]["output_bias"].shape == (VOCAB,)
    assert sorted(heads["nsp"]) == ["bias", "kernel"]
    assert heads["nsp"]["kernel"].shape == (128, 2)
    with pytest.raises(ValueError, match="mlm/output_bias"):
        model.set_head_weights({"mlm": {**heads["mlm"], "output_bias": np.zeros(3)}})


def test_checkpoint_round_trip_with_heads(model, tmp_path, uncased_vocab_file):
    x, _ = make_batch()
    want = model(x)
    model.save_checkpoint(str(tmp_path / "ckpt"), uncased_vocab_file, lower_case=True)
    loaded = BertPretrainer.from_checkpoint(str(tmp_path / "ckpt"))
    got = loaded(x)
    for key in want:
        np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), atol=1e-5)


def test_encoder_only_checkpoint_gets_fresh_heads(model, tmp_path, uncased_vocab_file):
    from tfbert import checkpoint

    checkpoint.save_checkpoint(str(tmp_path / "enc"), model.config,
                               model.encoder.get_named_weights(), uncased_vocab_file, True)
    loaded = BertPretrainer.from_checkpoint(str(tmp_path / "enc"))
    np.testing.assert_array_equal(loaded.encoder.token_embedding.numpy(),
                                  model.encoder.token_embedding.numpy())
    assert not loaded.head_weights()["mlm"]["output_bias"].any()


def test_weight_decay_skips_layer_norm_and_bias(model):
    optimizer = create_optimizer(1e-3, num_train_steps=10)
    optimizer.build(model.trainable_variables)
    decayed = {v.path: optimizer._use_weight_decay(v) for v in model.trainable_variables}
    assert decayed["mlm/transform/kernel"] and decayed["embeddings/word_embeddings/embeddings"]
    assert not decayed["mlm/transform/bias"]
    assert not decayed["mlm/layer_norm/gamma"] and not decayed["mlm/layer_norm/beta"]
    assert not decayed["mlm/output_bias"] and not decayed["nsp/bias"]


def test_fit_with_xla_lowers_the_loss(model):
    x, y = make_batch(batch=8)
    model.compile(optimizer=create_optimizer(3e-3, num_train_steps=40, num_warmup_steps=2),
                  jit_compile=True)
    ds = tf.data.Dataset.from_tensors((x, y)).repeat()
    history = model.fit(ds, steps_per_epoch=20, epochs=2, verbose=0).history
    assert set(history) >= {"loss", "mlm_loss", "mlm_accuracy", "nsp_loss", "nsp_accuracy"}
    assert history["mlm_loss"][-1] < 0.7 * history["mlm_loss"][0]


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_keeps_float32_logits(tiny_config, policy):
    keras.mixed_precision.set_global_policy(policy)
    try:
        model = BertPretrainer(BertEncoder(tiny_config.replace(vocab_size=VOCAB)))
        model.compile(optimizer=create_optimizer(1e-3, num_train_steps=10))
        x, y = make_batch()
        logs = model.train_on_batch(x, y, return_dict=True)
        out = model(x)
        assert out["mlm_logits"].dtype == tf.float32 and out["nsp_logits"].dtype == tf.float32
        assert model.encoder.token_embedding.dtype == "float32"
        assert np.isfinite(logs["loss"])
        if policy == "mixed_float16":  # Keras wraps the optimizer for loss scaling
            assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_continue_from_converted_minilm(minilm_dir, tmp_path):
    """Real released weights (all-MiniLM-L6-v2, no heads) -> fresh heads."""
    from tfbert import convert

    out = str(tmp_path / "minilm")
    convert.from_huggingface(str(minilm_dir), out)
    model = BertPretrainer.from_checkpoint(out, next_sentence_task="none")
    reference = BertEncoder.from_pretrained(out)
    ids = np.array([[101, 7592, 103, 2088, 102]], "int32")
    x = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
    np.testing.assert_allclose(model.encoder(x)["sequence_output"], reference(x)["sequence_output"],
                               atol=1e-5)
    assert model.head_weights()["mlm"]["output_bias"].shape == (30522,)
    assert not model.encoder.pooler.trainable  # MLM only: NSP's pooler is frozen
    logits = model(dict(x, masked_lm_positions=np.array([[2]], "int32")))["mlm_logits"]
    assert logits.shape == (1, 1, 30522)


def test_mlm_model_has_the_tf_hub_signature(model):
    x, _ = make_batch()
    mlm = model.mlm_model()
    out = mlm(x)
    assert {"sequence_output", "pooled_output", "default", "encoder_outputs", "mlm_logits"} <= set(out)
    np.testing.assert_allclose(out["mlm_logits"], model(x)["mlm_logits"], atol=1e-5)
    assert len(mlm.weights) == len(model.weights) - 2  # all but the NSP head, shared


def test_span_boundary_objective(tiny_config, tmp_path, uncased_vocab_file):
    from tfbert.text.masking import MaskedLMMasker

    model = BertPretrainer(BertEncoder(tiny_config.replace(vocab_size=VOCAB)),
                           next_sentence_task="none", use_sbo=True)
    masker = MaskedLMMasker(vocab_size=VOCAB, mask_id=4, special_ids=[0, 2, 3], max_predictions=6,
                            strategy="span")
    x, y = make_batch(batch=8, seq=24)
    masked = masker(x["input_word_ids"], seed=[1, 1])
    x = dict(x, **{k: v for k, v in masked.items() if k.startswith("masked_lm_") and k not in y})
    x["input_word_ids"] = masked["input_word_ids"]
    y = {"masked_lm_ids": masked["masked_lm_ids"], "masked_lm_weights": masked["masked_lm_weights"]}
    pred = model(x)
    assert pred["sbo_logits"].shape == (8, 6, VOCAB)
    w = y["masked_lm_weights"].numpy()

    def ce(logits):
        per = keras.losses.sparse_categorical_crossentropy(y["masked_lm_ids"], logits, from_logits=True)
        return float((per.numpy() * w).sum() / w.sum())

    loss = float(model.compute_loss(x, y, pred))
    assert loss == pytest.approx(ce(pred["mlm_logits"]) + ce(pred["sbo_logits"]), rel=1e-5)
    assert sorted(model.head_weights()["sbo"]) == [
        "layer_norm_1/beta", "layer_norm_1/gamma", "layer_norm_2/beta", "layer_norm_2/gamma",
        "output_bias", "position_embeddings", "transform_1/bias", "transform_1/kernel",
        "transform_2/bias", "transform_2/kernel",
    ]
    model.compile(optimizer=create_optimizer(1e-3, num_train_steps=10), jit_compile=True)
    logs = model.fit(tf.data.Dataset.from_tensors((x, y)).repeat(), steps_per_epoch=3,
                     verbose=0).history
    assert "sbo_loss" in logs and np.isfinite(logs["loss"][0])
    model.save_checkpoint(str(tmp_path / "sbo"), uncased_vocab_file, lower_case=True)
    loaded = BertPretrainer.from_checkpoint(str(tmp_path / "sbo"), next_sentence_task="none",
                                            use_sbo=True)
    np.testing.assert_allclose(loaded(x)["sbo_logits"], model(x)["sbo_logits"], atol=1e-5)


def test_sentence_order_prediction_uses_the_binary_head(tiny_config, tmp_path, uncased_vocab_file):
    model = BertPretrainer(BertEncoder(tiny_config.replace(vocab_size=VOCAB)),
                           next_sentence_task="sop")
    assert model.use_nsp and model.nsp_head is not None
    x, y = make_batch()
    model.compile(optimizer=keras.optimizers.SGD(0.1))
    logs = model.train_on_batch(x, y, return_dict=True)
    assert {"sop_loss", "sop_accuracy", "mlm_loss"} <= set(logs) and "nsp_loss" not in logs
    # The head keeps its checkpoint name, so SOP weights load as a binary head.
    model.save_checkpoint(str(tmp_path / "sop"), uncased_vocab_file, lower_case=True)
    loaded = BertPretrainer.from_checkpoint(str(tmp_path / "sop"), next_sentence_task="sop")
    np.testing.assert_allclose(loaded(x)["nsp_logits"], model(x)["nsp_logits"], atol=1e-5)
    assert BertPretrainer.from_config(model.get_config()).next_sentence_task == "sop"
    assert BertPretrainer(BertEncoder(tiny_config.replace(vocab_size=VOCAB)),
                          use_nsp=False).next_sentence_task == "none"


def test_use_nsp_is_the_old_name_of_next_sentence_task(tiny_config):
    import warnings

    from tfbert.data.pretraining import instances as pretraining_instances

    encoder = lambda: BertEncoder(tiny_config.replace(vocab_size=VOCAB))
    pretraining_instances._WARNED.clear()
    with pytest.warns(FutureWarning, match=r"^use_nsp is deprecated: set next_sentence_task "):
        assert BertPretrainer(encoder(), use_nsp=False).next_sentence_task == "none"
    model = BertPretrainer(encoder(), next_sentence_task="sop")
    assert "use_nsp" not in model.get_config()
    # Configs saved under the old key load, without a warning: the user did not write them.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for old, task in (({"use_nsp": False}, "none"), ({"use_nsp": True}, "nsp"),
                          ({"use_nsp": True, "next_sentence_task": "sop"}, "sop"),
                          ({"use_nsp": False, "next_sentence_task": ""}, "none")):
            config = {k: v for k, v in model.get_config().items() if k != "next_sentence_task"}
            loaded = BertPretrainer.from_config({**config, **old})
            assert (loaded.next_sentence_task, loaded.use_nsp) == (task, task != "none")


def test_pre_layer_norm_trains_and_round_trips(tiny_config, tmp_path, uncased_vocab_file):
    keras.utils.set_random_seed(1)
    model = BertPretrainer(BertEncoder(tiny_config.replace(vocab_size=VOCAB, norm_first=True)))
    assert "final_layer_norm/gamma" in model.encoder.get_named_weights()
    x, y = make_batch(batch=8)
    model.compile(optimizer=create_optimizer(3e-3, num_train_steps=40, num_warmup_steps=2),
                  jit_compile=True)
    ds = tf.data.Dataset.from_tensors((x, y)).repeat()
    history = model.fit(ds, steps_per_epoch=20, epochs=2, verbose=0).history
    assert history["mlm_loss"][-1] < 0.7 * history["mlm_loss"][0]

    want = model(x)
    model.save_checkpoint(str(tmp_path / "ckpt"), uncased_vocab_file, lower_case=True)
    loaded = BertPretrainer.from_checkpoint(str(tmp_path / "ckpt"))
    assert loaded.config.norm_first
    for key in want:
        np.testing.assert_allclose(loaded(x)[key].numpy(), want[key].numpy(), atol=1e-5)
    with pytest.raises(ValueError, match="holds pre-LayerNorm weights; norm_first cannot "
                                         "change") as error:
        BertPretrainer.from_checkpoint(str(tmp_path / "ckpt"),
                                       config_overrides={"norm_first": False})
    assert "\n" not in str(error.value)
