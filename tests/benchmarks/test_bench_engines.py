"""The same-weights engine rows of `tools/benchmark.py --peers` on a tiny
random BERT: every row runs, and its pooled output agrees with PyTorch
(speeds are printed by the benchmark, never asserted)."""


import numpy as np
import pytest

from benchmarks import bench_peers
from benchmarks.common.engines import cpu_info

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def tiny_hf_dir(out_dir, vocab=100):
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64,
                                     max_position_embeddings=64)
    transformers.BertModel(config).eval().save_pretrained(str(out_dir), safe_serialization=True)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens += [f"tok{i}" for i in range(vocab - len(tokens))]
    (out_dir / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return out_dir


def test_cpu_info_names_model_and_known_flags():
    info = cpu_info()
    assert info["cores"] >= 1 and isinstance(info["model"], str)
    assert set(info["flags"]) <= {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni",
                                  "avx_vnni", "amx_tile", "amx_bf16", "amx_int8", "avx512_fp16"}


def test_precision_of_row_names():
    assert bench_peers.precision_of("ONNX Runtime int8 dynamic (fused graph)") == "int8"
    assert bench_peers.precision_of("OpenVINO default precision (bf16)") == "bf16"
    assert bench_peers.precision_of("tfbert SavedModel fp32 XLA") == "fp32"


def test_engine_rows_agree_with_pytorch(tmp_path):
    """About two minutes on a 2-layer model: every engine row is built as the
    benchmark builds it (XLA programs, a SavedModel, OpenVINO and ONNX Runtime
    conversions), which is what the test is for."""
    model_dir = tiny_hf_dir(tmp_path / "hf")
    lines, result = bench_peers.engines(str(model_dir), repeats=1, batch=2, seq=16,
                                        use_torch_compile=False, torch_bf16=True)
    expected = {"tfbert fp32 XLA", "tfbert SavedModel fp32 XLA", "tfbert bf16 (mixed_bfloat16)",
                "tfbert TFLite fp32 XNNPACK", "tfbert TFLite int8 dynamic-range XNNPACK",
                "PyTorch fp32 eager", "PyTorch bf16 autocast eager"} | set(bench_peers.ONEDNN_ROWS)
    try:
        import onnxruntime  # noqa: F401

        expected |= {"ONNX Runtime fp32 (fused graph)", "ONNX Runtime int8 dynamic (fused graph)"}
        import openvino  # noqa: F401

        assert "OpenVINO fp32" in result
        assert any(name.startswith("OpenVINO default precision") for name in result)
    except ImportError:
        assert any("skipped" in line for line in lines)
    assert expected <= set(result)
    for name, r in result.items():
        assert r["seq_per_s"] > 0
        diff = r["max_abs_diff_vs_pytorch"]
        # fp32 engines reproduce PyTorch; bf16 and int8 drift, but boundedly.
        bound = {"fp32": 1e-5, "bf16": 0.05, "int8": 0.3}[r["precision"]]
        assert diff <= bound, (name, diff)
    assert result["PyTorch fp32 eager"]["vs_best_fp32_peer"] == pytest.approx(
        result["PyTorch fp32 eager"]["seq_per_s"]
        / max(r["seq_per_s"] for n, r in result.items()
              if not n.startswith("tfbert") and r["precision"] == "fp32"))
    table = "\n".join(lines)
    assert "| same weights (hf), b2 x 16" in table
    assert "max abs diff vs PyTorch fp32 (pooled)" in table


@pytest.mark.slow
def test_classifier_drift_scores_every_path(tmp_path):
    model_dir = tiny_hf_dir(tmp_path / "hf")
    accuracy, dev_size = bench_peers.classifier_drift(
        str(model_dir), str(tmp_path / "work"), train_per_class=2, dev_per_class=3, epochs=1,
        seq_length=16)
    assert dev_size == 15
    assert set(accuracy) == {"tfbert fp32", "tfbert fp32 XLA", "tfbert bf16 (mixed_bfloat16)",
                             "tfbert TFLite fp32 XNNPACK",
                             "tfbert TFLite int8 dynamic-range XNNPACK"}
    assert accuracy["tfbert fp32"]["max_abs_logit_diff"] == 0
    assert accuracy["tfbert TFLite fp32 XNNPACK"]["max_abs_logit_diff"] < 1e-4
    assert all(0 <= r["accuracy"] <= 1 for r in accuracy.values())
    assert np.isfinite([r["max_abs_logit_diff"] for r in accuracy.values()]).all()
