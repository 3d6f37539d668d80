"""Encoder export: TF Hub-format SavedModel (legacy hub.KerasLayer, Keras 3
loader, tf.saved_model.load in a fresh process) and TFLite."""

import json
import os

import keras
import numpy as np
import pytest

from tfbert import BertConfig, BertEncoder
from tfbert.export.encoder import export_encoder
from tfbert.export.saved_model_layer import SavedModelEncoder
from tfbert.export.tflite import export_encoder_tflite


def make_inputs(batch=4, seq=16, vocab=1000, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab, size=(batch, seq)).astype("int32")
    ids[:, 0] = 2
    for row in range(1, batch):
        ids[row, seq - 3 * row:] = 0
    return {"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
            "input_type_ids": np.zeros_like(ids)}


@pytest.fixture(scope="module")
def encoder():
    keras.utils.set_random_seed(3)
    return BertEncoder(BertConfig.from_preset("tiny", vocab_size=1000))


def _vocab(tmp_path, size=1000):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                              + [f"w{i}" for i in range(size - 5)]) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def encoder_dir(encoder, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("export")
    return export_encoder(encoder, str(tmp / "encoder"), vocab_file=_vocab(tmp),
                          lower_case=False)


def test_fresh_process_tf_saved_model_load(encoder, encoder_dir, run_python, tmp_path):
    inputs = make_inputs()
    np.savez(tmp_path / "in.npz", **inputs)
    out = run_python(f"""
import json, numpy as np, tensorflow as tf
obj = tf.saved_model.load({encoder_dir!r})
x = dict(np.load({str(tmp_path / 'in.npz')!r}))
res = obj(x, training=False)
sig = obj.signatures["serving_default"](**{{k: tf.constant(v) for k, v in x.items()}})
np.savez({str(tmp_path / 'out.npz')!r}, seq=res["sequence_output"].numpy(),
         pooled=res["pooled_output"].numpy(), sig_seq=sig["sequence_output"].numpy(),
         layer0=sig["encoder_output_0"].numpy())
print(json.dumps({{"lower": bool(obj.do_lower_case.numpy()),
                  "vocab": obj.vocab_file.asset_path.numpy().decode(),
                  "n_vars": len(obj.variables), "n_train": len(obj.trainable_variables),
                  "n_layers": len(res["encoder_outputs"]),
                  "sig_keys": sorted(sig)}}))
""")
    info = json.loads(out.strip().splitlines()[-1])
    assert info["lower"] is False
    assert info["vocab"].endswith("assets/vocab.txt") and os.path.isfile(info["vocab"])
    assert info["n_train"] == len(encoder.trainable_weights)
    assert info["n_layers"] == 2
    assert info["sig_keys"] == ["default", "encoder_output_0", "encoder_output_1",
                                "pooled_output", "sequence_output"]
    got = np.load(tmp_path / "out.npz")
    ref = encoder(inputs)
    assert np.abs(got["seq"] - ref["sequence_output"]).max() <= 1e-5
    assert np.abs(got["sig_seq"] - ref["sequence_output"]).max() <= 1e-5
    assert np.abs(got["pooled"] - ref["pooled_output"]).max() <= 1e-5
    assert np.abs(got["layer0"] - ref["encoder_outputs"][0]).max() <= 1e-5


def _toy_task(seed=0):
    """Label = whether token id 7 occurs: learnable by a fine-tuned encoder."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(10, 1000, size=(32, 8)).astype("int32")
    ids[:, 0] = 2
    labels = (rng.random(32) < 0.5).astype("int32")
    ids[labels == 1, 4] = 7
    return ({"input_word_ids": ids, "input_mask": np.ones_like(ids),
             "input_type_ids": np.zeros_like(ids)}, labels)


def test_keras3_loader_fine_tunes_with_adam(encoder_dir, encoder):
    layer = SavedModelEncoder(encoder_dir, trainable=True)
    assert len(layer.trainable_weights) == len(encoder.trainable_weights)
    assert all(":" not in w.name for w in layer.weights)
    inputs = {n: keras.Input((None,), dtype="int32", name=n)
              for n in ("input_word_ids", "input_mask", "input_type_ids")}
    logits = keras.layers.Dense(2)(layer(inputs)["pooled_output"])
    model = keras.Model(inputs, logits)
    model.compile(keras.optimizers.Adam(1e-3),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = _toy_task()
    before = [w.numpy().copy() for w in layer.trainable_weights]
    history = model.fit(x, y, epochs=6, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    moved = max(np.abs(w.numpy() - b).max() for w, b in zip(layer.trainable_weights, before))
    assert moved > 1e-4
    # Dropout follows `training`: inference is deterministic, training is not.
    a = layer(x, training=False)["pooled_output"]
    np.testing.assert_array_equal(a, layer(x, training=False)["pooled_output"])
    assert np.abs(a - layer(x, training=True)["pooled_output"]).max() > 1e-4


@pytest.mark.slow
def test_legacy_keras_hub_keraslayer_fine_tunes(encoder_dir, run_python):
    out = run_python(f"""
import numpy as np, tensorflow as tf, tensorflow_hub as hub, tf_keras
layer = hub.KerasLayer({encoder_dir!r}, trainable=True)
names = ("input_word_ids", "input_mask", "input_type_ids")
inputs = {{n: tf_keras.Input((None,), dtype=tf.int32, name=n) for n in names}}
model = tf_keras.Model(inputs, tf_keras.layers.Dense(2)(layer(inputs)["pooled_output"]))
model.compile(tf_keras.optimizers.Adam(1e-3),
              tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))
rng = np.random.default_rng(0)
ids = rng.integers(10, 1000, size=(32, 8)).astype("int32"); ids[:, 0] = 2
y = (rng.random(32) < 0.5).astype("int32"); ids[y == 1, 4] = 7
x = {{"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}}
before = [v.numpy().copy() for v in layer.trainable_weights]
h = model.fit(x, y, epochs=6, batch_size=16, verbose=0)
moved = max(np.abs(v.numpy() - b).max() for v, b in zip(layer.trainable_weights, before))
print(len(layer.trainable_weights), h.history["loss"][0], h.history["loss"][-1], moved)
""", env={"TF_USE_LEGACY_KERAS": "1"})
    n_train, first, last, moved = out.split()[-4:]
    assert int(n_train) == 39
    assert float(last) < float(first)
    assert float(moved) > 1e-4


def test_mlm_sub_object(encoder, tmp_path):
    import tensorflow as tf

    from tfbert.models.pretrainer import BertPretrainer

    pretrainer = BertPretrainer(encoder)
    path = export_encoder(encoder, str(tmp_path / "enc"), pretrainer=pretrainer)
    obj = tf.saved_model.load(path)
    inputs = make_inputs()
    positions = np.array([[1, 2], [3, 0], [1, 1], [2, 5]], "int32")
    out = obj.mlm({**inputs, "masked_lm_positions": positions}, training=False)
    ref = pretrainer({**inputs, "masked_lm_positions": positions})
    assert out["mlm_logits"].shape == (4, 2, 1000)
    assert np.abs(out["mlm_logits"] - ref["mlm_logits"]).max() <= 1e-5
    assert np.abs(out["sequence_output"] - encoder(inputs)["sequence_output"]).max() <= 1e-5


def test_export_is_atomic_and_checks_inputs(encoder, tmp_path):
    with pytest.raises(FileNotFoundError, match="Vocabulary file not found"):
        export_encoder(encoder, str(tmp_path / "enc"), vocab_file=str(tmp_path / "none.txt"))
    assert os.listdir(tmp_path) == []


def test_tflite_encoder_matches_keras(encoder, tmp_path):
    from ai_edge_litert.interpreter import Interpreter

    inputs = make_inputs(seq=16)
    ref = encoder(inputs)
    sizes, errors = {}, {}
    for quantization in (None, "dynamic_range"):
        path = export_encoder_tflite(encoder, str(tmp_path / f"{quantization}.tflite"),
                                     seq_length=16, quantization=quantization)
        runner = Interpreter(model_path=path).get_signature_runner("serve")
        out = runner(**inputs)
        sizes[quantization] = os.path.getsize(path)
        errors[quantization] = float(np.abs(out["sequence_output"]
                                            - ref["sequence_output"]).max())
    print("tflite sizes", sizes, "max abs error", errors)
    assert errors[None] <= 1e-4
    assert sizes["dynamic_range"] < 0.4 * sizes[None]
    assert errors["dynamic_range"] < 0.1  # int8 weights: small, bounded drift
    with pytest.raises(ValueError, match="quantization must be one of"):
        export_encoder_tflite(encoder, str(tmp_path / "x.tflite"), quantization="int4")
    with pytest.raises(ValueError, match=r"seq_length must be in \[2, 512\]"):
        export_encoder_tflite(encoder, str(tmp_path / "x.tflite"), seq_length=600)


def test_keras_tfsmlayer_loads_with_defaults(encoder, encoder_dir):
    layer = keras.layers.TFSMLayer(encoder_dir)  # default endpoint "serve"
    inputs = make_inputs()
    np.testing.assert_allclose(layer(inputs)["pooled_output"],
                               encoder(inputs)["pooled_output"], atol=1e-5)


def test_albert_style_encoder_exports_with_mlm_and_tflite(tmp_path):
    """Factorized embeddings + shared layers: SavedModel (op rule, MLM
    signature with the H -> E head) and TFLite agree with Keras."""
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    from tfbert.export.op_check import check_op_rule
    from tfbert.models.pretrainer import BertPretrainer

    keras.utils.set_random_seed(4)
    config = BertConfig.from_preset("tiny", vocab_size=1000, num_layers=3, embedding_size=32,
                                    share_layers=True)
    encoder = BertEncoder(config)
    pretrainer = BertPretrainer(encoder)
    assert pretrainer.head_weights()["mlm"]["transform/kernel"].shape == (128, 32)
    path = export_encoder(encoder, str(tmp_path / "enc"), pretrainer=pretrainer)
    check_op_rule(path)
    obj = tf.saved_model.load(path)
    inputs = make_inputs()
    positions = np.array([[1, 2], [3, 0], [1, 1], [2, 5]], "int32")
    out = obj.mlm({**inputs, "masked_lm_positions": positions}, training=False)
    ref = pretrainer({**inputs, "masked_lm_positions": positions})
    assert np.abs(out["mlm_logits"] - ref["mlm_logits"]).max() <= 1e-5
    tfl = export_encoder_tflite(encoder, str(tmp_path / "enc.tflite"), seq_length=16)
    got = Interpreter(model_path=tfl).get_signature_runner("serve")(**inputs)
    assert np.abs(got["sequence_output"] - encoder(inputs)["sequence_output"]).max() <= 1e-4


def test_full_integer_tflite_calibrated_on_training_text(tmp_path, uncased_vocab_file):
    """int8 weights and activations, calibrated on the shipped training
    sentences; loads in the LiteRT interpreter and stays near float."""
    from ai_edge_litert.interpreter import Interpreter

    from tfbert.export.tflite import read_representative_texts, representative_inputs
    from tfbert.text.preprocessor import BertPreprocessor

    keras.utils.set_random_seed(5)
    encoder = BertEncoder(BertConfig.from_preset("tiny", num_layers=1))
    pre = BertPreprocessor(vocab_file=uncased_vocab_file, seq_length=16)
    data = os.path.join(os.path.dirname(__file__), "..", "data", "finetune")
    texts = read_representative_texts(os.path.join(data, "sentiment_train.tsv"))
    assert len(texts) == 160
    calibration = representative_inputs(pre, texts[:40])
    path = export_encoder_tflite(encoder, str(tmp_path / "int8.tflite"), seq_length=16,
                                 quantization="full_integer", representative_data=calibration)
    interpreter = Interpreter(model_path=path)
    types = {d["dtype"] for d in interpreter.get_tensor_details()}
    assert np.int8 in types  # activations and weights are int8 tensors
    dev = representative_inputs(pre, read_representative_texts(
        os.path.join(data, "sentiment_dev.tsv"))[:8])
    ref = np.concatenate([encoder(x)["pooled_output"] for x in dev])
    runner = interpreter.get_signature_runner("serve")
    got = np.concatenate([runner(**x)["pooled_output"] for x in dev])
    cos = (got * ref).sum(-1) / np.linalg.norm(got, axis=-1) / np.linalg.norm(ref, axis=-1)
    float_bytes = 4 * encoder.count_params()
    print(f"full-integer: {os.path.getsize(path)} bytes for {float_bytes} bytes of float32 "
          f"weights; pooled cosine to float min {cos.min():.4f}")
    assert cos.min() > 0.95
    assert os.path.getsize(path) < 0.4 * float_bytes
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty.tsv: the file is empty"):
        read_representative_texts(str(empty))
    blank = tmp_path / "blank.txt"
    blank.write_text("\n\n")
    with pytest.raises(ValueError, match="blank.txt: the representative data file holds no text"):
        read_representative_texts(str(blank))
    with pytest.raises(ValueError, match="needs representative_data"):
        export_encoder_tflite(encoder, str(tmp_path / "x.tflite"), quantization="full_integer")
    with pytest.raises(ValueError, match="representative_data is empty"):
        export_encoder_tflite(encoder, str(tmp_path / "x.tflite"), quantization="full_integer",
                              representative_data=[])
    assert not (tmp_path / "x.tflite").exists()


def test_pre_layer_norm_encoder_saved_model_and_tflite_match_keras(tmp_path):
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    keras.utils.set_random_seed(6)
    encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=1000, norm_first=True))
    inputs = make_inputs()
    want = encoder(inputs)
    path = export_encoder(encoder, str(tmp_path / "enc"), vocab_file=_vocab(tmp_path),
                          lower_case=False)
    got = tf.saved_model.load(path)(inputs, training=False)
    for key in ("sequence_output", "pooled_output"):
        assert np.abs(got[key] - want[key]).max() <= 1e-5, key
    tfl = export_encoder_tflite(encoder, str(tmp_path / "enc.tflite"), seq_length=16)
    got = Interpreter(model_path=tfl).get_signature_runner("serve")(**inputs)
    assert np.abs(got["sequence_output"] - want["sequence_output"]).max() <= 1e-4
