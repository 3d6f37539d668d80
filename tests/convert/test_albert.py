"""Hugging Face ALBERT -> tfbert's ALBERT-style config (factorized embeddings,
shared layers): parity with randomly initialised transformers models saved
locally, the MLM and sentence-order heads, and clear refusals."""

import json

import numpy as np
import pytest
import safetensors.numpy

from tfbert import BertEncoder, checkpoint
from tfbert.convert import from_huggingface

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB = 60


def write_vocab(path, size=VOCAB):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens += [f"tok{i}" for i in range(size - len(tokens))]
    path.write_text("\n".join(tokens) + "\n", encoding="utf-8")


def save_albert(out_dir, cls=None, groups=1, seed=0, **overrides):
    """A random small transformers ALBERT saved with `save_pretrained` (safetensors)."""
    cls = cls or transformers.AlbertModel
    torch.manual_seed(seed)
    config = transformers.AlbertConfig(**{
        "vocab_size": VOCAB, "embedding_size": 16, "hidden_size": 32, "num_hidden_layers": 3,
        "num_hidden_groups": groups, "num_attention_heads": 4, "intermediate_size": 64,
        "max_position_embeddings": 40, "hidden_act": "gelu_new", **overrides})
    config._attn_implementation = "eager"
    model = cls(config).eval()
    with torch.no_grad():  # larger than the init scale, so nonlinearities matter
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    model.save_pretrained(str(out_dir), safe_serialization=True)
    write_vocab(out_dir / "vocab.txt")
    return model


def batch():
    rng = np.random.default_rng(0)
    ids = rng.integers(5, VOCAB, size=(2, 10))
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    types = np.zeros_like(ids)
    types[:, 5:] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def tfbert_inputs(b):
    return {"input_word_ids": b["input_ids"].astype(np.int32),
            "input_mask": b["attention_mask"].astype(np.int32),
            "input_type_ids": b["token_type_ids"].astype(np.int32)}


@pytest.mark.parametrize("groups,shared", [(1, True), (3, False)])
def test_albert_model_hidden_states_match_transformers(tmp_path, groups, shared):
    model = save_albert(tmp_path / "hf", groups=groups)
    out = from_huggingface(tmp_path / "hf", tmp_path / "out")
    config = checkpoint.read_checkpoint(out).config
    assert (config.embedding_size, config.share_layers, config.hidden_act) == (16, shared,
                                                                                "gelu_tanh")
    encoder = BertEncoder.from_pretrained(out)
    assert encoder.count_params() == sum(p.numel() for p in model.parameters())
    b = batch()
    with torch.no_grad():
        ref = model(**{k: torch.from_numpy(v) for k, v in b.items()}, output_hidden_states=True)
    got = encoder(tfbert_inputs(b))
    mask = b["attention_mask"][..., None]
    seq_diff = np.abs((np.asarray(got["sequence_output"]) - ref.last_hidden_state.numpy())
                      * mask).max()
    pooled_diff = np.abs(np.asarray(got["pooled_output"]) - ref.pooler_output.numpy()).max()
    layer_diff = max(np.abs((np.asarray(g) - r.numpy()) * mask).max()
                     for g, r in zip(got["encoder_outputs"], ref.hidden_states[1:]))
    print(f"ALBERT groups={groups}: max|seq diff|={seq_diff:.2e} pooled={pooled_diff:.2e} "
          f"layers={layer_diff:.2e}")
    assert len(ref.hidden_states) == 4
    assert seq_diff <= 1e-5 and pooled_diff <= 1e-5 and layer_diff <= 1e-5


def test_albert_for_masked_lm_logits_match_transformers(tmp_path):
    from tfbert.models.pretrainer import BertPretrainer

    model = save_albert(tmp_path / "hf", cls=transformers.AlbertForMaskedLM)
    out = from_huggingface(tmp_path / "hf", tmp_path / "out")  # no pooler: made fresh
    pretrainer = BertPretrainer.from_checkpoint(out, next_sentence_task="none")
    b = batch()
    positions = np.array([[1, 4, 7], [2, 3, 0]])
    with torch.no_grad():
        ref = model(**{k: torch.from_numpy(v) for k, v in b.items()}).logits.numpy()
    want = np.take_along_axis(ref, positions[:, :, None], axis=1)
    got = pretrainer({**tfbert_inputs(b), "masked_lm_positions": positions.astype(np.int32)})
    diff = np.abs(np.asarray(got["mlm_logits"]) - want).max()
    print(f"AlbertForMaskedLM logits: max|diff|={diff:.2e}")
    assert diff <= 1e-5


def test_albert_for_pretraining_sop_head_is_the_nsp_head(tmp_path):
    from tfbert.models.pretrainer import BertPretrainer

    model = save_albert(tmp_path / "hf", cls=transformers.AlbertForPreTraining)
    out = from_huggingface(tmp_path / "hf", tmp_path / "out")
    pretrainer = BertPretrainer.from_checkpoint(out)
    b = batch()
    with torch.no_grad():
        ref = model(**{k: torch.from_numpy(v) for k, v in b.items()})
    got = pretrainer({**tfbert_inputs(b), "masked_lm_positions": np.zeros((2, 1), np.int32)})
    assert np.abs(np.asarray(got["nsp_logits"]) - ref.sop_logits.numpy()).max() <= 1e-5


def test_albert_layouts_that_do_not_fit_are_refused(tmp_path):
    src = tmp_path / "hf"
    save_albert(src)
    config = json.loads((src / "config.json").read_text())

    def convert_with(**changes):
        (src / "config.json").write_text(json.dumps({**config, **changes}))
        return from_huggingface(src, tmp_path / "out")

    with pytest.raises(ValueError, match="num_hidden_groups=2 with num_hidden_layers=3"):
        convert_with(num_hidden_groups=2)
    with pytest.raises(ValueError, match="inner_group_num=2 is not supported"):
        convert_with(inner_group_num=2)
    with pytest.raises(ValueError, match="embedding_size = hidden_size = 32"):
        convert_with(embedding_size=32)
    # A config that says unshared (3 groups) for a file with one group: every missing
    # layer is named, nothing is written.
    with pytest.raises(ValueError, match=r"missing weights.*albert_layer_groups\.1"):
        convert_with(num_hidden_groups=3)
    with pytest.raises(ValueError, match=r"word_embeddings.weight' has shape "
                                         r"\(60, 16\), but the config implies \(60, 8\)"):
        convert_with(embedding_size=8)
    assert not (tmp_path / "out").exists()
    (src / "config.json").write_text(json.dumps(config))
    path = str(src / "model.safetensors")
    tensors = dict(safetensors.numpy.load_file(path))
    tensors["classifier.weight"] = np.zeros((2, 32), np.float32)
    safetensors.numpy.save_file(tensors, path)
    with pytest.raises(ValueError, match=r"unexpected weights \['classifier.weight'\]"):
        from_huggingface(src, tmp_path / "out")
    (src / "vocab.txt").unlink()
    (src / "spiece.model").write_bytes(b"\0")
    with pytest.raises(FileNotFoundError, match="SentencePiece spiece.model"):
        from_huggingface(src, tmp_path / "out")
