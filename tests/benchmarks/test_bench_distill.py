"""`benchmarks/bench_distill.py --seeds`: a bad seed list is one line naming
the flag and the item, before any model is built (its figures are measured
by hand: docs/smaller_models.md)."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).parents[2]


def test_bad_seed_is_one_line():
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_distill.py"),
                             "--seeds=1,x"], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert result.stderr.strip() == "--seeds: 'x' is not a seed (whole numbers, comma-separated)."
