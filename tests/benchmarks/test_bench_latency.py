"""The serving-latency benchmark (`tools/benchmark.py --what=latency`) on a
tiny random sentence-transformers BERT: every engine answers raw strings at
batch 1 and 8 with the embeddings sentence-transformers gives (latencies are
printed by the benchmark, never asserted)."""

import json

import pytest

from benchmarks import bench_latency

# Slow: it builds every engine and compiles XLA programs in-process (the XLA
# export row, plain_vs_xla): 30-80 s.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("sentence_transformers")

WORDS = ("the a file is opened read written to from socket mail date time text number "
         "thread lock queue process returns value string list").split()


def tiny_sentence_dir(out_dir):
    """A random 2-layer BERT saved as a sentence-transformers model (mean
    pooling, normalized), with a small real-word vocabulary."""
    torch.manual_seed(0)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "'"] + WORDS
    config = transformers.BertConfig(vocab_size=len(tokens), hidden_size=32,
                                     num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=64)
    transformers.BertModel(config).eval().save_pretrained(str(out_dir), safe_serialization=True)
    (out_dir / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    (out_dir / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "BertTokenizer", "do_lower_case": True}), encoding="utf-8")
    (out_dir / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize",
         "type": "sentence_transformers.models.Normalize"}]), encoding="utf-8")
    (out_dir / "1_Pooling").mkdir()
    (out_dir / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True}), encoding="utf-8")
    (out_dir / "sentence_bert_config.json").write_text(json.dumps(
        {"max_seq_length": 32, "do_lower_case": False}), encoding="utf-8")
    return out_dir


def test_every_engine_answers_strings_like_sentence_transformers(tmp_path, monkeypatch):
    """About two minutes on a 2-layer model: every engine is built as the
    benchmark builds it (TFLite conversions, XLA programs, OpenVINO) and
    answers raw strings."""
    model_dir = tiny_sentence_dir(tmp_path / "st")
    sentences = [" ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(3 + i % 9)) + "."
                 for i in range(40)]
    monkeypatch.setattr("benchmarks.common.corpora.real_sentences", lambda n: sentences[:n])
    path = tmp_path / "latency.json"
    lines = bench_latency.run(str(model_dir), requests=3, warmup=1, seq_length=32,
                              json_path=str(path))
    report = json.loads(path.read_text())
    names = set(report["max_abs_diff"])
    assert {"tfbert SavedModel (strings in)", "tfbert SavedModel (strings in, XLA)",
            "tfbert TFLite (strings in) XNNPACK",
            "tfbert TFLite int8 dynamic-range (strings in) XNNPACK",
            "tfbert TFLite (strings in, pads to 32) XNNPACK",
            "PyTorch fp32 eager + HF tokenizers", "sentence-transformers encode"} <= names
    assert report["reference"] == "sentence-transformers encode"
    for name, diff in report["max_abs_diff"].items():
        bound = 0.2 if "int8" in name else 0.02 if "bf16" in name else 1e-5
        assert diff <= bound, (name, diff)
    for batch in ("1", "8"):
        assert set(report["latency_ms"][batch]) == names
        assert all(r["p50"] > 0 and r["p99"] >= r["p50"]
                   for r in report["latency_ms"][batch].values())
    assert any(line.startswith("| engine | b1 p50 ms | b1 p99 ms | b8 p50 ms") for line in lines)
    # The encoder-only table: every shape that fits seq_length 32, both paths timed.
    assert set(report["encoder_ms"]) == {"1x16", "1x32", "4x32", "8x32"}
    assert all(plain > 0 and xla > 0 for plain, xla in report["encoder_ms"].values())
    assert "| 8 x 32 |" in "\n".join(lines)
    # Where the time goes: widths within seq_length, every part timed.
    for batch in ("1", "8"):
        parts = report["breakdown_ms"][batch]
        assert 3 <= parts["width_p50"] <= parts["width_p90"] <= 32
        assert all(parts[k] > 0 for k in ("tfbert tokenize + pack", "encoder (plain graph)",
                                            "HF tokenizers"))
    assert any(line.startswith("| batch | width p50 |") for line in lines)
