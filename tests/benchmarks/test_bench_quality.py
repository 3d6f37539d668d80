"""benchmarks/bench_quality.py rejects a bad flag in one line, before any work.
(The benchmark itself runs for hours: docs/quality.md has its figures; its QA
path runs in tests/benchmarks/test_bench_quality_squad.py.)"""

import pytest


@pytest.mark.parametrize("flag, words", [
    ("--min_steps=0", "--min_steps=0: 0 is not a positive integer"),
    ("--seeds=zero", "--seeds: comma-separated non-negative integers"),
    ("--tasks=squad,qa", "--tasks: a comma-separated subset of squad,docstrings"),
])
def test_a_bad_flag_is_one_line(tmp_path, run_benchmark, flag, words):
    result = run_benchmark("bench_quality.py", flag, f"--work={tmp_path / 'work'}", timeout=120)
    assert result.returncode != 0
    assert words in result.stderr
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert not (tmp_path / "work").exists()
