"""The peers benchmark runs every row on a small shape and reports them all;
its FLOP count matches the standard BERT-base figure. (Speeds are printed by
`tools/benchmark.py --peers`, never asserted.)"""

import json

import pytest

# benchmarks/ is a top-level folder of the repository, not part of the package.
from benchmarks import bench_peers


def test_flops_per_sequence_bert_base():
    # 12 layers x (2 x 128 x (4 x 768^2 + 2 x 768 x 3072) + 4 x 128^2 x 768):
    # about 22.4 GFLOPs, the usual "~2 x parameters x tokens" plus attention.
    assert bench_peers.flops_per_sequence(12, 768, 3072) == 22_347_251_712


@pytest.mark.slow
def test_peers_report_has_every_row(tmp_path):
    pytest.importorskip("torch")
    path = tmp_path / "peers.json"
    lines = bench_peers.run(repeats=1, shapes={"small": (2, 128, 2, 512, 4)},
                            preprocess_count=300, bucketing_count=0, use_torch_compile=False,
                            matmul_size=256, json_path=str(path), finetune_epoch=False,
                            engines_model_dir="")
    report = json.loads(path.read_text())
    assert set(report["matmul_gflops"]) == {
        "TensorFlow float32", "TensorFlow float32 XLA", "TensorFlow bfloat16",
        "TensorFlow bfloat16 XLA", "PyTorch float32", "PyTorch bfloat16"}
    assert report["preprocessing_same_tokens_as_hf"] is True
    assert len(report["preprocessing_strings_per_s"]) == 3
    # PyTorch's bf16 row only where its bf16 matmul is fast (AMX / AVX512-BF16).
    torch_bf16 = {"PyTorch bf16 autocast eager"} if report["torch_bf16_rows"] else set()
    assert set(report["inference_seq_per_s"]["small"]) == {
        "tfbert fp32", "tfbert fp32 XLA", "tfbert bf16", "tfbert bf16 XLA",
        "keras-hub fp32 XLA", "PyTorch fp32 eager"} | torch_bf16
    assert set(report["train_seq_per_s"]["small"]) == {"tfbert XLA", "keras-hub XLA",
                                                      "PyTorch eager"}
    rates = [v for rows in report["inference_seq_per_s"].values() for v in rows.values()]
    assert all(v > 0 for v in rates)
    table = "\n".join(lines)
    assert "| small inference b4 x 128" in table and "| small train step b8" in table
    # Each tfbert inference row is compared with the best peer of its own precision.
    fp32_peer = max(v for k, v in report["inference_seq_per_s"]["small"].items()
                    if not k.startswith("tfbert") and "bf16" not in k)
    xla_row = next(line for line in lines if line.startswith("| tfbert fp32 XLA |"))
    ratio = report["inference_seq_per_s"]["small"]["tfbert fp32 XLA"] / fp32_peer
    assert xla_row.endswith(f"| {ratio:.2f}x |")
