"""Hugging Face BERT -> tfbert: exact parity with transformers and
sentence-transformers on the real all-MiniLM-L6-v2 weights, the pretraining
heads of `BertForPreTraining` files, and clear errors on bad input.

torch, transformers and sentence-transformers are test-only references.
"""

import json
import os
import shutil

import numpy as np
import pytest
import safetensors.numpy

from tfbert import BertEncoder, checkpoint
from tfbert.convert import from_huggingface
from tfbert.convert.huggingface import lower_case_from_tokenizer_files

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A man is playing a guitar on the street corner.",
    "Hello!",
    "Stock markets fell sharply on Tuesday after the central bank raised interest rates.",
    "How do I convert a TensorFlow checkpoint to safetensors?",
    "Paris is the capital of France.",
    "I can't believe it's not butter, said nobody in 1887.",
    "Café déjà vu: naïve résumé.",
    "Deep learning models need lots of data, compute, and patience to train well.",
    "ok",
]


def tfbert_inputs(batch):
    return {
        "input_word_ids": batch["input_ids"].astype(np.int32),
        "input_mask": batch["attention_mask"].astype(np.int32),
        "input_type_ids": batch["token_type_ids"].astype(np.int32),
    }


@pytest.fixture(scope="module")
def minilm_converted(minilm_dir, tmp_path_factory):
    return from_huggingface(minilm_dir, tmp_path_factory.mktemp("minilm") / "tfbert")


def test_minilm_matches_transformers_and_sentence_transformers(minilm_dir, minilm_converted):
    ckpt = checkpoint.read_checkpoint(minilm_converted)
    assert ckpt.config.hidden_act == "gelu"  # exact erf GELU, as transformers computes it
    assert (ckpt.config.hidden_size, ckpt.config.num_layers, ckpt.config.num_heads) == (384, 6, 12)
    assert ckpt.lower_case is True
    assert not ckpt.prefixed_weights("mlm")  # BertModel layout: encoder only

    # Tokenize with the HF tokenizer so the test isolates the converter.
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(minilm_dir))
    batch = tokenizer(SENTENCES, padding=True, return_tensors="np")
    mask = batch["attention_mask"]
    assert mask.min() == 0  # the batch has padding

    model = transformers.BertModel.from_pretrained(str(minilm_dir)).eval()
    with torch.no_grad():
        want = model(**{k: torch.from_numpy(v) for k, v in batch.items()}).last_hidden_state.numpy()
    encoder = BertEncoder.from_pretrained(minilm_converted)
    got = np.asarray(encoder(tfbert_inputs(batch))["sequence_output"])

    diff = np.abs(got - want)
    real_diff = (diff * mask[..., None]).max()
    print(f"MiniLM sequence_output vs transformers: max|diff| real tokens={real_diff:.2e}, "
          f"padding positions={diff.max():.2e}")
    assert real_diff <= 1e-5
    # Padding positions are ill-conditioned junk that nothing reads (masked out of
    # attention and pooling): transformers' own eager and SDPA attention disagree
    # there by ~4e-5. They must still be close, not garbage.
    assert diff.max() <= 2e-4

    # Mean-pooled, L2-normalized sentence embeddings (the model's pooling).
    sentence_transformers = pytest.importorskip("sentence_transformers")
    st_model = sentence_transformers.SentenceTransformer(str(minilm_dir), device="cpu")
    want_emb = st_model.encode(SENTENCES, convert_to_numpy=True, batch_size=len(SENTENCES))
    pooled = (got * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    emb = pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)
    emb_diff = np.abs(emb - want_emb).max()
    print(f"MiniLM embeddings vs sentence-transformers: max|diff|={emb_diff:.2e}")
    assert emb_diff <= 1e-5

    # Raw text in, one call each: the preprocessor reads vocab.txt and the
    # lower-case flag from the same directory and reproduces the HF token ids.
    from tfbert.text import BertPreprocessor

    preprocessor = BertPreprocessor.from_pretrained(minilm_converted, seq_length=32)
    inputs = {k: np.asarray(v) for k, v in preprocessor(np.array(SENTENCES)).items()}
    width = batch["input_ids"].shape[1]
    np.testing.assert_array_equal(inputs["input_word_ids"][:, :width], batch["input_ids"])
    np.testing.assert_array_equal(inputs["input_mask"][:, :width], mask)
    text_out = np.asarray(encoder(inputs)["sequence_output"])
    text_mask = inputs["input_mask"]
    text_pooled = (text_out * text_mask[..., None]).sum(1) / text_mask.sum(1, keepdims=True)
    text_emb = text_pooled / np.linalg.norm(text_pooled, axis=-1, keepdims=True)
    text_diff = np.abs(text_emb - want_emb).max()
    print(f"MiniLM raw text -> tfbert embeddings vs sentence-transformers: max|diff|={text_diff:.2e}")
    assert text_diff <= 1e-5


# -- A small random BertForPreTraining, saved by transformers itself --------
VOCAB = 60


def write_vocab(path, size=VOCAB):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens += [f"tok{i}" for i in range(size - len(tokens))]
    path.write_text("\n".join(tokens) + "\n", encoding="utf-8")


def save_hf_model(out_dir, hidden_act="gelu", cls=None, seed=0):
    """Saves a random small transformers BERT with `save_pretrained` (safetensors)."""
    cls = cls or transformers.BertForPreTraining
    torch.manual_seed(seed)
    config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=40, hidden_act=hidden_act,
    )
    model = cls(config).eval()
    with torch.no_grad():  # larger than the init scale, so nonlinearities matter
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    model.save_pretrained(str(out_dir), safe_serialization=True)
    write_vocab(out_dir / "vocab.txt")
    return model


def edit_weights(src_dir, fn):
    """Rewrites `model.safetensors` as `fn(dict) -> dict`."""
    path = os.path.join(src_dir, "model.safetensors")
    tensors = fn(dict(safetensors.numpy.load_file(path)))
    safetensors.numpy.save_file(tensors, path)


@pytest.fixture(scope="module")
def hf_pretraining_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("hf") / "bert_for_pretraining"
    save_hf_model(out)
    return out


def copy_dir(src, dst):
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("hidden_act,tfbert_act", [
    ("gelu", "gelu"), ("gelu_new", "gelu_tanh"), ("gelu_pytorch_tanh", "gelu_tanh"),
    ("relu", "relu"),
])
def test_small_model_parity_per_activation(tmp_path, hidden_act, tfbert_act):
    model = save_hf_model(tmp_path / "hf", hidden_act=hidden_act)
    out = from_huggingface(tmp_path / "hf", tmp_path / "out")
    assert checkpoint.read_checkpoint(out).config.hidden_act == tfbert_act

    rng = np.random.default_rng(0)
    ids = rng.integers(5, VOCAB, size=(2, 9))
    mask = np.ones_like(ids)
    mask[1, 5:] = 0
    types = np.zeros_like(ids)
    types[0, 4:] = 1
    batch = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    with torch.no_grad():
        ref = model.bert(**{k: torch.from_numpy(v) for k, v in batch.items()})
    got = BertEncoder.from_pretrained(out)(tfbert_inputs(batch))
    seq_diff = np.abs((np.asarray(got["sequence_output"]) - ref.last_hidden_state.numpy())
                      * mask[..., None]).max()
    pooled_diff = np.abs(np.asarray(got["pooled_output"]) - ref.pooler_output.numpy()).max()
    assert seq_diff <= 1e-5, seq_diff
    assert pooled_diff <= 1e-5, pooled_diff


def expected_heads(tensors):
    """The tfbert head arrays the contract derives from HF head tensors."""
    return {
        "mlm/transform/kernel": tensors["cls.predictions.transform.dense.weight"].T,
        "mlm/transform/bias": tensors["cls.predictions.transform.dense.bias"],
        "mlm/layer_norm/gamma": tensors["cls.predictions.transform.LayerNorm.weight"],
        "mlm/layer_norm/beta": tensors["cls.predictions.transform.LayerNorm.bias"],
        "mlm/output_bias": tensors["cls.predictions.bias"],
        "nsp/kernel": tensors["cls.seq_relationship.weight"].T,
        "nsp/bias": tensors["cls.seq_relationship.bias"],
    }


@pytest.mark.parametrize("layout", ["bert_prefix", "no_prefix", "tied_decoder_stored",
                                    "gamma_beta_names"])
def test_pretraining_heads_round_trip(hf_pretraining_dir, tmp_path, layout):
    src = copy_dir(hf_pretraining_dir, tmp_path / "hf")
    tensors = safetensors.numpy.load_file(str(src / "model.safetensors"))
    assert "bert.embeddings.word_embeddings.weight" in tensors
    if layout == "no_prefix":
        edit_weights(src, lambda t: {k.removeprefix("bert."): v for k, v in t.items()})
    if layout == "tied_decoder_stored":  # older files store the tied copies too
        edit_weights(src, lambda t: {
            **t,
            "cls.predictions.decoder.weight": t["bert.embeddings.word_embeddings.weight"],
            "cls.predictions.decoder.bias": t["cls.predictions.bias"],
            "bert.embeddings.position_ids": np.arange(40, dtype=np.int64)[None],
        })
    if layout == "gamma_beta_names":  # files converted from TF by old transformers
        edit_weights(src, lambda t: {
            k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias",
                                                                     "LayerNorm.beta"): v
            for k, v in t.items()
        })
    ckpt = checkpoint.read_checkpoint(from_huggingface(src, tmp_path / "out"))
    want = expected_heads(tensors)
    assert sorted(k for k in ckpt.weights if not k.startswith("encoder/")) == sorted(want)
    for name, value in want.items():
        np.testing.assert_array_equal(ckpt.weights[name], value, err_msg=name)
    np.testing.assert_array_equal(
        ckpt.weights["encoder/embeddings/word_embeddings/embeddings"],
        tensors["bert.embeddings.word_embeddings.weight"],
    )


def test_lower_case_from_tokenizer_files(tmp_path, minilm_dir):
    assert lower_case_from_tokenizer_files(tmp_path) is True  # BertTokenizer default
    tokenizer_json = json.loads((minilm_dir / "tokenizer.json").read_text(encoding="utf-8"))
    assert tokenizer_json["normalizer"]["lowercase"] is True
    tokenizer_json["normalizer"]["lowercase"] = False
    (tmp_path / "tokenizer.json").write_text(json.dumps(tokenizer_json), encoding="utf-8")
    assert lower_case_from_tokenizer_files(tmp_path) is False
    shutil.copy(minilm_dir / "tokenizer.json", tmp_path)  # BertNormalizer lowercase=True
    assert lower_case_from_tokenizer_files(tmp_path) is True
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    assert lower_case_from_tokenizer_files(tmp_path) is False  # transformers' precedence
    os.remove(tmp_path / "tokenizer.json")
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"do_lower_case": True, "strip_accents": False}))
    with pytest.raises(ValueError, match="strip_accents=False"):
        lower_case_from_tokenizer_files(tmp_path)


def test_lower_case_travels_and_can_be_overridden(hf_pretraining_dir, tmp_path):
    src = copy_dir(hf_pretraining_dir, tmp_path / "hf")
    (src / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    assert checkpoint.read_checkpoint(from_huggingface(src, tmp_path / "a")).lower_case is False
    out = from_huggingface(src, tmp_path / "b", lower_case=True)
    assert checkpoint.read_checkpoint(out).lower_case is True


# -- Bad input: clear errors naming the problem -----------------------------
def test_truncated_safetensors(hf_pretraining_dir, tmp_path):
    src = copy_dir(hf_pretraining_dir, tmp_path / "hf")
    path = src / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(ValueError, match="model.safetensors: cannot read safetensors file"):
        from_huggingface(src, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_config_with_wrong_hidden_size_names_weight_and_shapes(hf_pretraining_dir, tmp_path):
    src = copy_dir(hf_pretraining_dir, tmp_path / "hf")
    config = json.loads((src / "config.json").read_text())
    (src / "config.json").write_text(json.dumps({**config, "hidden_size": 48}))
    with pytest.raises(ValueError) as e:
        from_huggingface(src, tmp_path / "out")
    msg = str(e.value)
    assert "'bert.embeddings.word_embeddings.weight' has shape (60, 32)" in msg
    assert "implies (60, 48)" in msg
    assert "config.json" in msg
    assert "more mis-shaped weights" in msg  # the rest are counted, not listed
    assert len(msg) < 2000


def test_vocab_from_tokenizer_json_when_vocab_txt_is_missing(minilm_dir, tmp_path):
    src = tmp_path / "minilm_no_vocab"
    shutil.copytree(minilm_dir, src, ignore=shutil.ignore_patterns("vocab.txt", "*.safetensors"))
    os.symlink(minilm_dir / "model.safetensors", src / "model.safetensors")
    ckpt = checkpoint.read_checkpoint(from_huggingface(src, tmp_path / "out"))
    assert (open(ckpt.vocab_file, encoding="utf-8").read().splitlines()
            == open(minilm_dir / "vocab.txt", encoding="utf-8").read().splitlines())


def test_missing_files(hf_pretraining_dir, tmp_path):
    src = copy_dir(hf_pretraining_dir, tmp_path / "hf")
    os.remove(src / "vocab.txt")
    with pytest.raises(FileNotFoundError, match="vocab.txt"):
        from_huggingface(src, tmp_path / "out")
    (src / "tokenizer.json").write_text(json.dumps({"model": {"type": "BPE", "vocab": {}}}))
    with pytest.raises(FileNotFoundError, match="No vocab.txt.*no WordPiece vocabulary"):
        from_huggingface(src, tmp_path / "out")
    os.remove(src / "tokenizer.json")
    # A RoBERTa directory whose config.json lost its model_type reads as BERT: say so.
    (src / "vocab.json").write_text(json.dumps({"<s>": 0}))
    with pytest.raises(FileNotFoundError, match="BPE vocab.json.*check config.json's model_type"):
        from_huggingface(src, tmp_path / "out")
    os.remove(src / "vocab.json")
    write_vocab(src / "vocab.txt", VOCAB + 3)
    with pytest.raises(ValueError, match="63 tokens.*60 word embedding rows"):
        from_huggingface(src, tmp_path / "out")
    write_vocab(src / "vocab.txt")
    os.rename(src / "model.safetensors", src / "pytorch_model.bin")
    with pytest.raises(FileNotFoundError, match="No model.safetensors.*pytorch_model.bin"):
        from_huggingface(src, tmp_path / "out")
    os.remove(src / "config.json")
    with pytest.raises(FileNotFoundError, match="config.json"):
        from_huggingface(src, tmp_path / "out")


def test_missing_extra_and_unknown_layout(hf_pretraining_dir, tmp_path):
    src = copy_dir(hf_pretraining_dir, tmp_path / "hf")
    edit_weights(src, lambda t: {
        **{k: v for k, v in t.items() if k != "bert.encoder.layer.1.output.dense.bias"},
        "qa_outputs.weight": np.zeros((2, 32), np.float32),
    })
    with pytest.raises(ValueError) as e:
        from_huggingface(src, tmp_path / "out")
    assert "missing weights ['bert.encoder.layer.1.output.dense.bias']" in str(e.value)
    assert "unexpected weights ['qa_outputs.weight']" in str(e.value)

    edit_weights(src, lambda t: {k.replace("bert.", "roberta."): v for k, v in t.items()})
    with pytest.raises(ValueError, match="unknown key layout"):
        from_huggingface(src, tmp_path / "out")


def test_untied_decoder_and_bad_config_values(hf_pretraining_dir, tmp_path):
    src = copy_dir(hf_pretraining_dir, tmp_path / "hf")
    edit_weights(src, lambda t: {
        **t, "cls.predictions.decoder.weight": t["bert.embeddings.word_embeddings.weight"] + 1})
    with pytest.raises(ValueError, match="'cls.predictions.decoder.weight' differs from "
                                         "'bert.embeddings.word_embeddings.weight'"):
        from_huggingface(src, tmp_path / "out")

    config = json.loads((src / "config.json").read_text())
    for change, error in [
        ({"hidden_act": "silu"}, "hidden_act 'silu' is not supported"),
        ({"model_type": "xlnet"}, "model_type is .xlnet.; tfbert converts bert, roberta"),
        ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
        ({"num_attention_heads": 5}, "divisible"),
    ]:
        (src / "config.json").write_text(json.dumps({**config, **change}))
        with pytest.raises(ValueError, match=error):
            from_huggingface(src, tmp_path / "out")
    (src / "config.json").write_text(json.dumps({
        k: v for k, v in config.items() if k != "num_hidden_layers"}))
    with pytest.raises(ValueError, match="required key 'num_hidden_layers' is missing"):
        from_huggingface(src, tmp_path / "out")


def test_pretrainer_logits_match_transformers(hf_pretraining_dir, tmp_path):
    """The converted heads load into `BertPretrainer` and give transformers'
    `BertForPreTraining` MLM and NSP logits."""
    from tfbert.models.pretrainer import BertPretrainer

    model = transformers.BertForPreTraining.from_pretrained(str(hf_pretraining_dir)).eval()
    out = from_huggingface(hf_pretraining_dir, tmp_path / "out")
    pretrainer = BertPretrainer.from_checkpoint(out)

    rng = np.random.default_rng(0)
    ids = rng.integers(5, VOCAB, size=(2, 10))
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    types = np.zeros_like(ids)
    types[:, 5:] = 1
    positions = np.array([[1, 4, 7], [2, 3, 0]])
    batch = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    with torch.no_grad():
        ref = model(**{k: torch.from_numpy(v) for k, v in batch.items()})
    want_mlm = np.take_along_axis(ref.prediction_logits.numpy(), positions[:, :, None], axis=1)
    got = pretrainer({**tfbert_inputs(batch), "masked_lm_positions": positions.astype(np.int32)})
    mlm_diff = np.abs(np.asarray(got["mlm_logits"]) - want_mlm).max()
    nsp_diff = np.abs(np.asarray(got["nsp_logits"]) - ref.seq_relationship_logits.numpy()).max()
    print(f"BertForPreTraining logits: max|MLM diff|={mlm_diff:.2e} max|NSP diff|={nsp_diff:.2e}")
    assert mlm_diff <= 1e-5
    assert nsp_diff <= 1e-5


def test_bfloat16_and_float16_weights_convert_exactly(tmp_path):
    """NumPy has no bfloat16; the reader decodes BF16 itself (exactly)."""
    for dtype in (torch.bfloat16, torch.float16):
        src = tmp_path / str(dtype).split(".")[-1]
        model = save_hf_model(src)
        model.to(dtype).save_pretrained(str(src), safe_serialization=True)
        ckpt = checkpoint.read_checkpoint(from_huggingface(src, tmp_path / f"out_{dtype}"))
        want = model.bert.encoder.layer[1].intermediate.dense.weight.float().detach().numpy().T
        got = ckpt.weights["encoder/transformer_layer_1/intermediate_dense/kernel"]
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want)


def test_model_without_pooler_is_explained(tmp_path):
    save_hf_model(tmp_path / "mlm", cls=transformers.BertForMaskedLM)
    with pytest.raises(ValueError, match="no pooler weights.*BertForMaskedLM"):
        from_huggingface(tmp_path / "mlm", tmp_path / "out")


def test_output_dir_that_would_destroy_data_is_refused(hf_pretraining_dir, tmp_path):
    with pytest.raises(ValueError, match="would replace the input"):
        from_huggingface(hf_pretraining_dir, hf_pretraining_dir)
    with pytest.raises(ValueError, match="would replace the input"):
        from_huggingface(hf_pretraining_dir, hf_pretraining_dir.parent)
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not a tfbert checkpoint; refusing"):
        from_huggingface(hf_pretraining_dir, precious)
    assert (precious / "notes.txt").read_text() == "keep me"
    # An existing tfbert checkpoint is replaced (re-running a conversion).
    out = from_huggingface(hf_pretraining_dir, tmp_path / "out")
    from_huggingface(hf_pretraining_dir, out)
    assert checkpoint.read_checkpoint(out).config.hidden_size == 32


def test_sharded_safetensors(hf_pretraining_dir, tmp_path):
    model = transformers.BertForPreTraining.from_pretrained(str(hf_pretraining_dir))
    src = tmp_path / "sharded"
    model.save_pretrained(str(src), safe_serialization=True, max_shard_size="20KB")
    write_vocab(src / "vocab.txt")
    assert (src / "model.safetensors.index.json").exists()
    assert len(list(src.glob("model-*.safetensors"))) > 1
    sharded = checkpoint.read_checkpoint(from_huggingface(src, tmp_path / "a")).weights
    single = checkpoint.read_checkpoint(from_huggingface(hf_pretraining_dir, tmp_path / "b")).weights
    assert sorted(sharded) == sorted(single)
    for name in single:
        np.testing.assert_array_equal(sharded[name], single[name], err_msg=name)
    index_path = src / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    del index["weight_map"]["cls.seq_relationship.bias"]
    index_path.write_text(json.dumps(index))
    with pytest.raises(ValueError, match="weight_map disagrees.*cls.seq_relationship.bias"):
        from_huggingface(src, tmp_path / "c")
