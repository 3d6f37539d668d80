"""Benchmarks, one module per capability: `bench_<name>.py` with `run(...) -> list[str]`;
the code they share is in `benchmarks/common/`.

The entry point is `tools/benchmark.py --what=<name>,...`, which runs them side
by side in one process and writes the report; this package is their only home.
No `bench_*` module imports another (tests/test_layering.py).
"""
