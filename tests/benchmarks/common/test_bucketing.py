"""The bucketing benchmark runs its rows with tfbert and PyTorch on the same
real tokens (a tokenizer mix-up there once fed PyTorch one [UNK] per word).
Speeds are printed by `tools/benchmark.py --what=bucketing`, never asserted."""


import pytest

# benchmarks/ is a top-level folder of the repository, not part of the package.
from benchmarks.common import bucketing


@pytest.mark.slow
def test_rows_with_pytorch_on_the_same_tokens(tmp_path):
    """About a minute: the benchmark's own rows run (MiniLM at each width, two
    short fine-tunings, PyTorch's); the token check is inside them."""
    pytest.importorskip("torch")
    # One batch and two training steps an epoch are enough: both rows raise
    # when PyTorch's token count differs from tfbert's, whatever the sizes. No
    # XLA, in inference or training: each bucket width would compile MiniLM again
    # (the benchmark's own XLA rows run in tools/benchmark.py --what=bucketing).
    lines = bucketing.run(count=32, repeats=1, finetune=False, jit_compile=False)
    assert "tfbert sorted + bucketed / PyTorch" in lines[-1]
    lines = bucketing.finetune_epoch(
        work=str(tmp_path),
        finetune=dict(batch_size=10, learning_rate=1e-4, epochs=2, seed=1, jit_compile=False),
        sizes=dict(train_per_class=4, dev_per_class=2, pool_per_class=0))
    rows = [line for line in lines if "dev accuracy" in line]
    assert [r.split()[1:3] for r in rows] == [["tfbert", "fixed"], ["tfbert", "bucketed"],
                                              ["PyTorch", "group_by_length"]]
    assert "tfbert bucketed / PyTorch" in lines[-1]
