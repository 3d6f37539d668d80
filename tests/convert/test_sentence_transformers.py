"""The Hugging Face converter reads sentence-transformers metadata
(`tfbert.convert.sentence_transformers`: modules.json, 1_Pooling,
sentence_bert_config.json, Dense, Normalize) into the checkpoint's `sentence`
section; unsupported modules are clear errors. The 1e-5 parity with
sentence-transformers itself is in tests/tasks/test_sentence_embedding_e2e.py (slow)."""

import json
import shutil

import numpy as np
import pytest
from safetensors.numpy import save_file

from tfbert.checkpoint import SentenceSettings, read_checkpoint
from tfbert.convert import from_huggingface


@pytest.fixture()
def st_dir(tmp_path, minilm_dir):
    """A writable copy of all-MiniLM-L6-v2 (weights linked, metadata copied)."""
    out = tmp_path / "st"
    shutil.copytree(minilm_dir, out, copy_function=shutil.copy)
    return out


def test_minilm_metadata(tmp_path, minilm_dir):
    ckpt = read_checkpoint(from_huggingface(minilm_dir, str(tmp_path / "out")))
    assert ckpt.sentence == SentenceSettings(pooling="mean", normalize=True, seq_length=256,
                                             dense_units=None, dense_activation="tanh")


def test_plain_bert_dir_has_no_sentence_section(tmp_path, st_dir):
    (st_dir / "modules.json").unlink()
    assert read_checkpoint(from_huggingface(st_dir, str(tmp_path / "out"))).sentence is None


def test_cls_pooling_dense_no_normalize(tmp_path, st_dir):
    from tfbert import SentenceEncoder

    modules = json.loads((st_dir / "modules.json").read_text())
    modules[2] = {"idx": 2, "name": "2", "path": "2_Dense",
                  "type": "sentence_transformers.models.Dense"}
    (st_dir / "modules.json").write_text(json.dumps(modules))
    pooling = json.loads((st_dir / "1_Pooling" / "config.json").read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    (st_dir / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (st_dir / "2_Dense").mkdir()
    (st_dir / "2_Dense" / "config.json").write_text(json.dumps(
        {"in_features": 384, "out_features": 8, "bias": True,
         "activation_function": "torch.nn.modules.activation.Tanh"}))
    rng = np.random.default_rng(0)
    weight = rng.normal(size=(8, 384)).astype(np.float32)
    bias = rng.normal(size=8).astype(np.float32)
    save_file({"linear.weight": weight, "linear.bias": bias},
              str(st_dir / "2_Dense" / "model.safetensors"))
    out = from_huggingface(st_dir, str(tmp_path / "out"))
    assert read_checkpoint(out).sentence.pooling == "cls"
    model = SentenceEncoder.from_pretrained(out, seq_length=32)
    assert (model.pooling, model.dense_units, model.normalize) == ("cls", 8, False)
    text = ["Return the number of items in the container."]
    ids = model.preprocessor(np.array(text))
    cls = model.encoder(ids)["sequence_output"].numpy()[:, 0]
    np.testing.assert_allclose(model.encode(text), np.tanh(cls @ weight.T + bias), atol=1e-5)


@pytest.mark.parametrize("edit, match", [
    (lambda d: (d / "modules.json").write_text(json.dumps(
        [{"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"},
         {"idx": 1, "path": "x", "type": "sentence_transformers.models.LayerNorm"}])),
     r"modules\.json: module type .*LayerNorm.* is not supported"),
    (lambda d: (d / "1_Pooling" / "config.json").write_text(json.dumps(
        {"pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": True})),
     r"1_Pooling/config\.json: pooling modes .* are not supported"),
    (lambda d: (d / "1_Pooling" / "config.json").write_text(json.dumps(
        {"pooling_mode_mean_sqrt_len_tokens": True})),
     r"1_Pooling/config\.json: pooling modes \['pooling_mode_mean_sqrt_len_tokens'\]"),
])
def test_unsupported_metadata_is_an_error(tmp_path, st_dir, edit, match):
    edit(st_dir)
    with pytest.raises(ValueError, match=match):
        from_huggingface(st_dir, str(tmp_path / "out"))
