"""benchmarks/bench_rerank.py: bad flags fail with one line (before any work where the
flag alone shows it)."""

import pytest


@pytest.mark.parametrize("flag, message", [
    ("--extra_train_pairs=-5", "--extra_train_pairs must be 0 or more, not -5"),
    ("--epochs=0", "--epochs must be 1 or more, not 0"),
    ("--ce_pooling=avg", "argument --ce_pooling: invalid choice: 'avg'"),
])
def test_a_bad_flag_is_one_line(tmp_path, run_benchmark, flag, message):
    run = run_benchmark("bench_rerank.py", flag, f"--work={tmp_path}")
    assert run.returncode == 2
    assert message in run.stderr.strip().splitlines()[-1]
    assert "Traceback" not in run.stderr
    assert not any(tmp_path.iterdir())  # nothing converted or written


@pytest.mark.slow
def test_more_package_pairs_than_installed_is_one_line(tmp_path, run_benchmark):
    # Parses the installed tensorflow, keras and numpy sources (about a minute).
    run = run_benchmark("bench_rerank.py", "--extra_train_pairs=10000000", f"--work={tmp_path}",
                        timeout=900)
    assert run.returncode == 2, run.stderr[-2000:]
    last = run.stderr.strip().splitlines()[-1]
    assert "--extra_train_pairs=10000000: the installed tensorflow, keras and numpy give" in last
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "data" / "done.json").exists()  # no rows left as if built
