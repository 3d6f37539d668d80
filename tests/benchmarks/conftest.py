"""Fixtures for the benchmark tests: a benchmark script run as a user runs it."""

import pathlib
import subprocess

import pytest
from fresh_python import python_command

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="session")
def run_benchmark():
    """`run_benchmark("bench_x.py", *flags, timeout=300)`: the script in a fresh
    Python process (tests/fresh_python.py); its `CompletedProcess` (text stdout and stderr)."""
    def run(script, *flags, timeout=300):
        return subprocess.run([python_command(), str(BENCHMARKS / script), *flags],
                              capture_output=True, text=True, timeout=timeout)

    return run
