"""Google TF1 BERT checkpoint -> tfbert: a round trip through a real TF1
`Saver` checkpoint with the original variable names, checked against an
independent NumPy BERT forward pass."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertEncoder, checkpoint
from tfbert.convert import from_google
from tfbert.convert.google import lower_case_from_dir_name

H, HEADS, LAYERS, INTER, VOCAB, MAX_POS, TYPES = 32, 4, 2, 64, 40, 24, 2
BERT_CONFIG = {
    "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": H,
    "initializer_range": 0.02,
    "intermediate_size": INTER,
    "max_position_embeddings": MAX_POS,
    "num_attention_heads": HEADS,
    "num_hidden_layers": LAYERS,
    "type_vocab_size": TYPES,
    "vocab_size": VOCAB,
}


def google_variables(seed=0):
    """Random weights under google-research/bert's exact variable names. The
    scale is large enough that attention is far from uniform and tanh vs erf
    GELU differ visibly."""
    rng = np.random.default_rng(seed)

    def rand(*shape, scale=0.3):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def layer_norm(prefix):
        return {f"{prefix}/gamma": 1.0 + rand(H, scale=0.1), f"{prefix}/beta": rand(H, scale=0.1)}

    v = {
        "bert/embeddings/word_embeddings": rand(VOCAB, H, scale=1.0),
        "bert/embeddings/token_type_embeddings": rand(TYPES, H, scale=1.0),
        "bert/embeddings/position_embeddings": rand(MAX_POS, H, scale=1.0),
        **layer_norm("bert/embeddings/LayerNorm"),
    }
    for i in range(LAYERS):
        p = f"bert/encoder/layer_{i}"
        for proj in ("query", "key", "value"):
            v[f"{p}/attention/self/{proj}/kernel"] = rand(H, H)
            v[f"{p}/attention/self/{proj}/bias"] = rand(H, scale=0.1)
        v[f"{p}/attention/output/dense/kernel"] = rand(H, H)
        v[f"{p}/attention/output/dense/bias"] = rand(H, scale=0.1)
        v.update(layer_norm(f"{p}/attention/output/LayerNorm"))
        v[f"{p}/intermediate/dense/kernel"] = rand(H, INTER)
        v[f"{p}/intermediate/dense/bias"] = rand(INTER, scale=0.1)
        v[f"{p}/output/dense/kernel"] = rand(INTER, H, scale=0.2)
        v[f"{p}/output/dense/bias"] = rand(H, scale=0.1)
        v.update(layer_norm(f"{p}/output/LayerNorm"))
    v["bert/pooler/dense/kernel"] = rand(H, H)
    v["bert/pooler/dense/bias"] = rand(H, scale=0.1)
    v["cls/predictions/transform/dense/kernel"] = rand(H, H)
    v["cls/predictions/transform/dense/bias"] = rand(H, scale=0.1)
    v.update(layer_norm("cls/predictions/transform/LayerNorm"))
    v["cls/predictions/output_bias"] = rand(VOCAB, scale=0.1)
    v["cls/seq_relationship/output_weights"] = rand(2, H)
    v["cls/seq_relationship/output_bias"] = rand(2, scale=0.1)
    return v


def write_tf1_checkpoint(prefix, variables, optimizer_slots=True):
    """Saves `variables` with a TF1 `Saver` in graph mode, as google-research/bert
    did, optionally with Adam slots and `global_step` like a training run."""
    with tf.Graph().as_default():
        tf_vars = []
        for name, value in variables.items():
            tf_vars.append(tf.compat.v1.Variable(value, name=name))
            if optimizer_slots:
                tf_vars.append(tf.compat.v1.Variable(np.zeros_like(value), name=name + "/adam_m"))
                tf_vars.append(tf.compat.v1.Variable(np.ones_like(value), name=name + "/adam_v"))
        if optimizer_slots:
            tf_vars.append(tf.compat.v1.Variable(np.int64(1000), name="global_step"))
        saver = tf.compat.v1.train.Saver(tf_vars)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            saver.save(sess, str(prefix), write_meta_graph=False)


def write_vocab(path, size):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens += [f"tok{i}" for i in range(size - len(tokens))]
    path.write_text("\n".join(tokens) + "\n", encoding="utf-8")


def make_google_dir(root, name="uncased_L-2_H-32_A-4", variables=None, config=None, **kwargs):
    src = root / name
    src.mkdir()
    write_tf1_checkpoint(src / "bert_model.ckpt", variables or google_variables(), **kwargs)
    (src / "bert_config.json").write_text(json.dumps(config or BERT_CONFIG))
    write_vocab(src / "vocab.txt", (config or BERT_CONFIG)["vocab_size"])
    return src


# -- NumPy reference: google-research/bert modeling.py, float64 -------------
def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def gelu_erf(x):
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def numpy_bert(v, ids, mask, types, gelu=gelu_tanh):
    """`(sequence_output, pooled_output)` of BERT, written from the paper /
    modeling.py, independent of tfbert and Keras."""
    w = {k: val.astype(np.float64) for k, val in v.items()}
    head_dim = H // HEADS

    def layer_norm(x, prefix):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * w[f"{prefix}/gamma"] + w[f"{prefix}/beta"]

    def dense(x, prefix):
        return x @ w[f"{prefix}/kernel"] + w[f"{prefix}/bias"]

    batch, seq = ids.shape
    x = (w["bert/embeddings/word_embeddings"][ids]
         + w["bert/embeddings/token_type_embeddings"][types]
         + w["bert/embeddings/position_embeddings"][:seq][None])
    x = layer_norm(x, "bert/embeddings/LayerNorm")
    adder = (1.0 - mask[:, None, None, :].astype(np.float64)) * -10000.0
    for i in range(LAYERS):
        p = f"bert/encoder/layer_{i}"

        def heads(t):
            return t.reshape(batch, seq, HEADS, head_dim).transpose(0, 2, 1, 3)

        q = heads(dense(x, f"{p}/attention/self/query"))
        k = heads(dense(x, f"{p}/attention/self/key"))
        val = heads(dense(x, f"{p}/attention/self/value"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head_dim) + adder
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ val).transpose(0, 2, 1, 3).reshape(batch, seq, H)
        x = layer_norm(x + dense(context, f"{p}/attention/output/dense"),
                       f"{p}/attention/output/LayerNorm")
        inner = gelu(dense(x, f"{p}/intermediate/dense"))
        x = layer_norm(x + dense(inner, f"{p}/output/dense"), f"{p}/output/LayerNorm")
    pooled = np.tanh(dense(x[:, 0], "bert/pooler/dense"))
    return x, pooled


def test_round_trip_matches_numpy_reference(tmp_path):
    variables = google_variables()
    src = make_google_dir(tmp_path, variables=variables)
    out = from_google(src, tmp_path / "converted")

    ckpt = checkpoint.read_checkpoint(out)
    assert ckpt.config.hidden_act == "gelu_tanh"  # google-research/bert's gelu
    assert ckpt.config.layer_norm_eps == 1e-12
    assert ckpt.lower_case is True  # "uncased" in the directory name
    assert ckpt.source.startswith("google:")

    rng = np.random.default_rng(1)
    ids = rng.integers(5, VOCAB, size=(3, 11)).astype(np.int32)
    ids[:, 0] = 2
    mask = np.ones_like(ids)
    mask[1, 7:] = 0
    mask[2, 4:] = 0
    ids[mask == 0] = 0
    types = np.zeros_like(ids)
    types[0, 6:] = 1

    encoder = BertEncoder.from_pretrained(out)
    got = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    want_seq, want_pooled = numpy_bert(variables, ids, mask, types)
    seq_diff = np.abs(np.asarray(got["sequence_output"]) - want_seq).max()
    pooled_diff = np.abs(np.asarray(got["pooled_output"]) - want_pooled).max()
    print(f"google round trip: max|seq diff|={seq_diff:.2e} max|pooled diff|={pooled_diff:.2e}")
    assert seq_diff <= 1e-5
    assert pooled_diff <= 1e-5
    # The comparison can tell the GELU forms apart: erf is 10x the tolerance off.
    erf_seq, _ = numpy_bert(variables, ids, mask, types, gelu=gelu_erf)
    erf_diff = np.abs(np.asarray(got["sequence_output"]) - erf_seq).max()
    print(f"google round trip: max|seq diff| against an erf-GELU reference={erf_diff:.2e}")
    assert erf_diff > 1e-4


def test_pretraining_heads_and_skipped_optimizer_slots(tmp_path):
    variables = google_variables()
    src = make_google_dir(tmp_path, variables=variables)  # with adam_m/adam_v/global_step
    ckpt = checkpoint.read_checkpoint(from_google(src, tmp_path / "out"))
    mlm, nsp = ckpt.prefixed_weights("mlm"), ckpt.prefixed_weights("nsp")
    assert sorted(mlm) == ["layer_norm/beta", "layer_norm/gamma", "output_bias",
                           "transform/bias", "transform/kernel"]
    p = "cls/predictions/"
    np.testing.assert_array_equal(mlm["transform/kernel"], variables[p + "transform/dense/kernel"])
    np.testing.assert_array_equal(mlm["transform/bias"], variables[p + "transform/dense/bias"])
    np.testing.assert_array_equal(mlm["layer_norm/gamma"], variables[p + "transform/LayerNorm/gamma"])
    np.testing.assert_array_equal(mlm["layer_norm/beta"], variables[p + "transform/LayerNorm/beta"])
    np.testing.assert_array_equal(mlm["output_bias"], variables[p + "output_bias"])
    # [2, H] in TF1 (used as `matmul(x, w, transpose_b=True)`) -> [H, 2] kernel.
    np.testing.assert_array_equal(nsp["kernel"], variables["cls/seq_relationship/output_weights"].T)
    np.testing.assert_array_equal(nsp["bias"], variables["cls/seq_relationship/output_bias"])
    assert not any("adam" in k or "global_step" in k for k in ckpt.weights)

    # The converted heads give modeling.py's MLM and NSP logits in BertPretrainer.
    from tfbert.models.pretrainer import BertPretrainer

    pretrainer = BertPretrainer.from_checkpoint(ckpt.path)
    ids = np.array([[2, 7, 9, 4, 3, 11, 3, 0]], np.int32)
    mask = (ids > 0).astype(np.int32)
    types = np.array([[0, 0, 0, 0, 0, 1, 1, 0]], np.int32)
    positions = np.array([[1, 3, 5]], np.int32)
    got = pretrainer({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types,
                      "masked_lm_positions": positions})
    seq, pooled = numpy_bert(variables, ids, mask, types)
    w = {k: v.astype(np.float64) for k, v in variables.items()}
    x = gelu_tanh(seq[0, positions[0]] @ w[p + "transform/dense/kernel"]
                  + w[p + "transform/dense/bias"])
    x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
    x = x * w[p + "transform/LayerNorm/gamma"] + w[p + "transform/LayerNorm/beta"]
    want_mlm = x @ w["bert/embeddings/word_embeddings"].T + w[p + "output_bias"]
    want_nsp = (pooled @ w["cls/seq_relationship/output_weights"].T
                + w["cls/seq_relationship/output_bias"])
    np.testing.assert_allclose(np.asarray(got["mlm_logits"])[0], want_mlm, rtol=0, atol=1e-5)
    np.testing.assert_allclose(np.asarray(got["nsp_logits"]), want_nsp, rtol=0, atol=1e-5)


def test_encoder_only_checkpoint_has_no_heads(tmp_path):
    variables = {k: v for k, v in google_variables().items() if not k.startswith("cls/")}
    src = make_google_dir(tmp_path, name="cased_L-2", variables=variables, optimizer_slots=False)
    ckpt = checkpoint.read_checkpoint(from_google(src, tmp_path / "out"))
    assert not ckpt.prefixed_weights("mlm") and not ckpt.prefixed_weights("nsp")
    assert ckpt.lower_case is False  # "cased" in the directory name


def test_lower_case_from_dir_name_and_override(tmp_path):
    assert lower_case_from_dir_name("/x/uncased_L-12_H-768_A-12") is True
    assert lower_case_from_dir_name("/x/multi_cased_L-12_H-768_A-12/") is False
    with pytest.raises(ValueError, match="pass lower_case=True or False"):
        lower_case_from_dir_name("/x/chinese_L-12_H-768_A-12")
    src = make_google_dir(tmp_path, name="chinese_L-2", optimizer_slots=False)
    with pytest.raises(ValueError, match="chinese_L-2.*lower_case"):
        from_google(src, tmp_path / "out")
    out = from_google(src, tmp_path / "out", lower_case=True)
    assert checkpoint.read_checkpoint(out).lower_case is True


# -- Bad input: clear errors naming the problem -----------------------------
def test_config_with_wrong_hidden_size_names_weight_and_shapes(tmp_path):
    src = make_google_dir(tmp_path, config={**BERT_CONFIG, "hidden_size": 48},
                          optimizer_slots=False)
    with pytest.raises(ValueError) as e:
        from_google(src, tmp_path / "out")
    msg = str(e.value)
    assert "'bert/embeddings/word_embeddings' has shape (40, 32)" in msg
    assert "implies (40, 48)" in msg
    assert "bert_config.json" in msg
    assert not (tmp_path / "out").exists()


def test_unexpected_and_missing_variables_are_named(tmp_path):
    variables = google_variables()
    variables["bert/encoder/layer_0/attention/self/rotary"] = np.zeros(3, np.float32)
    del variables["bert/encoder/layer_1/output/dense/bias"]
    src = make_google_dir(tmp_path, variables=variables, optimizer_slots=False)
    with pytest.raises(ValueError) as e:
        from_google(src, tmp_path / "out")
    assert "missing weights ['bert/encoder/layer_1/output/dense/bias']" in str(e.value)
    assert "unexpected weights ['bert/encoder/layer_0/attention/self/rotary']" in str(e.value)


def test_incomplete_head_is_an_error(tmp_path):
    variables = google_variables()
    del variables["cls/predictions/output_bias"]
    src = make_google_dir(tmp_path, variables=variables, optimizer_slots=False)
    with pytest.raises(ValueError, match=r"missing weights \['cls/predictions/output_bias'\]"):
        from_google(src, tmp_path / "out")


def test_missing_files_and_corrupt_checkpoint(tmp_path):
    src = make_google_dir(tmp_path, optimizer_slots=False)
    os.remove(src / "vocab.txt")
    with pytest.raises(FileNotFoundError, match="vocab.txt"):
        from_google(src, tmp_path / "out")
    write_vocab(src / "vocab.txt", VOCAB - 1)
    with pytest.raises(ValueError, match="39 tokens.*40 word embedding rows"):
        from_google(src, tmp_path / "out")
    write_vocab(src / "vocab.txt", VOCAB)

    (data,) = src.glob("bert_model.ckpt.data-*")
    data.write_bytes(data.read_bytes()[:1000])  # truncated download
    with pytest.raises(ValueError, match="bert_model.ckpt.*(truncated or corrupt|cannot read)"):
        from_google(src, tmp_path / "out")

    os.remove(src / "bert_config.json")
    with pytest.raises(FileNotFoundError, match="bert_config.json"):
        from_google(src, tmp_path / "out")
    with pytest.raises(FileNotFoundError, match="directory not found"):
        from_google(tmp_path / "nope", tmp_path / "out")


def test_unsupported_activation_and_no_checkpoint(tmp_path):
    src = tmp_path / "uncased_x"
    src.mkdir()
    (src / "bert_config.json").write_text(json.dumps({**BERT_CONFIG, "hidden_act": "tanh"}))
    write_vocab(src / "vocab.txt", VOCAB)
    with pytest.raises(ValueError, match="hidden_act 'tanh' is not supported"):
        from_google(src, tmp_path / "out")
    (src / "bert_config.json").write_text(json.dumps(BERT_CONFIG))
    with pytest.raises(FileNotFoundError, match="No TF checkpoint"):
        from_google(src, tmp_path / "out")


def test_directory_with_several_checkpoints(tmp_path):
    first, second = google_variables(seed=0), google_variables(seed=1)
    src = make_google_dir(tmp_path, variables=first, optimizer_slots=False)
    write_tf1_checkpoint(src / "model.ckpt-2", second, optimizer_slots=False)
    word = "encoder/embeddings/word_embeddings/embeddings"

    def converted_word_embeddings(**kwargs):
        out = from_google(src, tmp_path / "out", **kwargs)
        return checkpoint.read_checkpoint(out).weights[word]

    # The `checkpoint` state file names the latest save, as in a training directory.
    np.testing.assert_array_equal(converted_word_embeddings(),
                                  second["bert/embeddings/word_embeddings"])
    np.testing.assert_array_equal(converted_word_embeddings(checkpoint_prefix="bert_model.ckpt"),
                                  first["bert/embeddings/word_embeddings"])
    os.remove(src / "checkpoint")
    with pytest.raises(ValueError, match="several TF checkpoints.*checkpoint_prefix"):
        from_google(src, tmp_path / "out")
    with pytest.raises(FileNotFoundError, match="model.ckpt-9.index"):
        from_google(src, tmp_path / "out", checkpoint_prefix="model.ckpt-9")
