"""tools/benchmark.py imports every benchmark into one process, and rejects
bad flags in one line before measuring anything."""

import importlib
import pathlib
import subprocess

from tools import benchmark
from fresh_python import python_command

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_benchmark_imports_into_one_process():
    # Each benchmark script that defined absl flags at import clashed with
    # another one's (`--init_checkpoint` twice), so `--what=finetune,distill` failed.
    for name in benchmark.BENCHMARKS:
        assert callable(importlib.import_module(f"benchmarks.bench_{name}").run)


def test_every_benchmark_file_is_reachable_by_what():
    files = {path.stem.removeprefix("bench_") for path in (ROOT / "benchmarks").glob("bench_*.py")}
    assert files == set(benchmark.BENCHMARKS)
    assert set(benchmark.SEPARATE) <= set(benchmark.BENCHMARKS)


def test_every_shared_module_imports():
    for path in sorted((ROOT / "benchmarks" / "common").glob("*.py")):
        importlib.import_module(f"benchmarks.common.{path.stem}".removesuffix(".__init__"))


def test_unknown_benchmark_is_one_line_error():
    result = subprocess.run([python_command(), "tools/benchmark.py", "--what=encoder,nope"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode != 0
    assert "benchmark: error: unknown benchmark(s) ['nope']" in result.stderr
    assert "Traceback" not in result.stderr
