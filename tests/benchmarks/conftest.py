"""Fixtures for the benchmark tests: a benchmark script run as a user runs it."""

import pathlib
import subprocess
import sys

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="session")
def run_benchmark():
    """`run_benchmark("bench_x.py", *flags, timeout=300)`: the script in a fresh
    Python process; its `CompletedProcess` (text stdout and stderr)."""
    def run(script, *flags, timeout=300):
        return subprocess.run([sys.executable, str(BENCHMARKS / script), *flags],
                              capture_output=True, text=True, timeout=timeout)

    return run
