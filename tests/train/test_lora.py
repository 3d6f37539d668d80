"""LoRA adapters (`train.lora_rank`): Keras' built-in LoRA on the encoder's
projections, frozen encoder, adapters that survive save/load, the adapters
file, and the merged export (fresh process)."""

import json
import os

import keras
import numpy as np
import pytest

from tfbert import BertConfig, BertEncoder
from tfbert.models.classifier import BertClassifier
from tfbert.train import lora
from tfbert.train.train_config import TrainConfig

DATA = os.path.join(os.path.dirname(__file__), os.pardir, "data", "finetune")
VOCAB = "tests/data/pretraining/vocab.txt"


def tiny_classifier(seed=0):
    keras.utils.set_random_seed(seed)
    config = BertConfig.from_preset("tiny", vocab_size=1931, dropout_rate=0.0,
                                    attention_dropout_rate=0.0)
    return BertClassifier(BertEncoder(config), num_classes=2, dropout=0.0)


def inputs(seed=1):
    ids = np.random.default_rng(seed).integers(5, 1931, size=(3, 9)).astype("int32")
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids),
            "input_type_ids": np.zeros_like(ids)}


def test_only_adapters_and_head_train_and_backups_keep_the_adapters(tmp_path):
    model = tiny_classifier()
    layers = lora.enable_lora(model, rank=4)
    assert len(layers) == 2 * model.encoder.config.num_layers  # query, value per block
    names = {w.path.split("/")[-1] for w in model.trainable_weights}
    assert names == {"lora_kernel_a", "lora_kernel_b", "kernel", "bias"}
    assert all("logits" in w.path for w in model.trainable_weights
               if not w.path.endswith(("lora_kernel_a", "lora_kernel_b")))
    for layer in layers:  # as if trained: B moved away from zero
        layer.lora_kernel_b.assign(np.full(layer.lora_kernel_b.shape, 0.01, "float32"))
    want = model(inputs()).numpy()
    # A weights file (what KeepBest and the resume backup write) restores A and B;
    # Keras' own LoRA saving would merge them into the kernel and zero both.
    model.save_weights(str(tmp_path / "w.weights.h5"))
    again = tiny_classifier(seed=5)
    lora.enable_lora(again, rank=4)
    again.load_weights(str(tmp_path / "w.weights.h5"))
    b = lora.lora_layers(again)[0].lora_kernel_b.numpy()
    assert np.abs(b - 0.01).max() == 0
    np.testing.assert_allclose(again(inputs()).numpy(), want, atol=1e-6)
    # The adapters file: adapters and head only, into a model on the same encoder.
    (tmp_path / "a.npz").write_bytes(lora.adapters_npz(model))
    with np.load(tmp_path / "a.npz") as saved:
        assert sum(saved[k].size for k in saved.files) == sum(
            w.numpy().size for w in model.trainable_weights)  # a classifier head has no state
    fresh = tiny_classifier()
    lora.enable_lora(fresh, rank=4)
    lora.load_adapters(fresh, str(tmp_path / "a.npz"))
    np.testing.assert_allclose(fresh(inputs()).numpy(), want, atol=1e-6)
    assert os.path.getsize(tmp_path / "a.npz") < 0.1 * os.path.getsize(tmp_path / "w.weights.h5")


def test_rank_and_targets_errors():
    with pytest.raises(ValueError, match=r"TrainConfig.lora_rank: must be >= 1, got 0"):
        TrainConfig(lora_rank=0)
    with pytest.raises(ValueError, match=r"TrainConfig.lora_targets: must be a non-empty list"):
        TrainConfig(lora_rank=2, lora_targets=["qkv"])
    model = tiny_classifier()
    head_size = model.encoder.config.hidden_size // model.encoder.config.num_heads
    with pytest.raises(ValueError, match=rf"train.lora_rank: {head_size + 1} is not in "
                                         rf"\[1, {head_size}\]"):
        lora.enable_lora(model, rank=head_size + 1)
    assert lora.lora_layers(model) == []  # nothing half-done
    assert all(w.trainable for w in model.encoder.weights)


def test_a_pruned_encoder_takes_adapters_where_it_has_heads():
    model = tiny_classifier()
    pruned = model.prune_heads({0: [0], 1: [0, 1]})  # layer 1 has no heads left
    layers = lora.enable_lora(pruned, rank=4, targets=("query", "value", "intermediate"))
    assert len(layers) == 4  # layer 0's query and value; both intermediate layers
    for layer in layers:
        layer.lora_kernel_b.assign(np.full(layer.lora_kernel_b.shape, 0.01, "float32"))
    assert pruned(inputs()).shape == (3, 2)


def test_finetune_with_lora_freezes_the_encoder_and_exports_merged(tmp_path, run_python):
    from tfbert.checkpoint import read_checkpoint, save_checkpoint
    from tfbert.tasks.classification import ClassificationTask
    from tfbert.tasks.runner import export_task, finetune

    encoder = tiny_classifier().encoder
    save_checkpoint(str(tmp_path / "ckpt"), encoder.config, encoder.get_named_weights(), VOCAB,
                    lower_case=True)
    task = ClassificationTask({"train_file": os.path.join(DATA, "sentiment_train.tsv"),
                               "dev_file": os.path.join(DATA, "sentiment_dev.tsv"),
                               "seq_length": 16})
    train = TrainConfig(epochs=1, steps_per_epoch=6, batch_size=8, lora_rank=4,
                        jit_compile=False, tensorboard=False, verbose=0)
    result = finetune(task, train, str(tmp_path / "run"), init_checkpoint=str(tmp_path / "ckpt"))
    assert result.summary["learning_rate"] == pytest.approx(1e-2)  # 10x the tiny model's 1e-3
    assert "auto LoRA: 10x" in result.summary["recipe"]["learning_rate"]
    model = result.model
    assert result.summary["trainable_params"] == sum(w.numpy().size
                                                     for w in model.trainable_weights)
    assert result.summary["trainable_params"] < 0.05 * sum(w.numpy().size for w in model.weights)
    # The encoder's own weights did not move; the adapters did.
    before = read_checkpoint(str(tmp_path / "ckpt")).encoder_weights()
    after = model.encoder.get_named_weights()
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value)
    assert max(float(np.abs(l.lora_kernel_b.numpy()).max()) for l in lora.lora_layers(model)) > 0
    assert os.path.isfile(result.summary["lora_adapters"])

    texts = ["a great film .", "dull and far too long ."]
    unmerged = task.predict(model, texts)["probabilities"]
    export_dir = export_task(task, model, str(tmp_path / "export"))
    assert lora.lora_layers(model) == []  # merged
    out = run_python(f"""
import json, tensorflow as tf
import tensorflow_text
m = tf.saved_model.load({export_dir!r})
f = m.signatures["serving_default"]
r = f(text=tf.constant({texts!r}))
print(json.dumps({{"p": r["probabilities"].numpy().tolist(),
                  "lora": [v.name for v in f.variables if "lora" in v.name]}}))
""")
    served = json.loads(out.strip().splitlines()[-1])
    assert served["lora"] == []  # the served graph reads no adapter
    np.testing.assert_allclose(served["p"], unmerged, atol=1e-5)
