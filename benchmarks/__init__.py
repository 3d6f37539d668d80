"""Benchmarks, one module per capability: `bench_<name>.py` with `run(...) -> list[str]`.

The entry point is `tools/benchmark.py --what=<name>,...`, which runs them side
by side in one process and writes the report; this package is their only home.
"""
