"""Benchmarks run by `tools/benchmark.py`; each module has `run(...) -> list[str]`."""
