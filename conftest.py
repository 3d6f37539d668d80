"""Doctest namespace for `pytest --doctest-modules tfbert` (see pytest.ini):
the names the docstring examples use without importing them."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The repository root on sys.path, once for every test: tests import
# `benchmarks.*` and `tools.*`, and --import-mode=importlib does not add it.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pytest

# .ci/run's schedule for two pytest-xdist workers (`--dist loadgroup
# --no-loadscope-reorder`): a test file is one unit, so its module fixtures are
# made once, and the units that take longest go first (longest-first keeps the
# two workers' ends close: what is left at the end is small). The files are the
# slowest in the last landings' measurements (`--durations` in CI's log), slowest
# first; each test of a file in SPREAD is a unit of its own (its shared setup is
# made once across workers by tests/conftest.py's `made_once`).
SLOWEST_FIRST = (
    "tests/test_docs.py::test_page_examples[docs/keras_workflow.md]",
    # Second, so that the other worker is busy while the first builds the docs'
    # shared setup (tests/test_docs.py's docs_workdir, made_once) instead of waiting.
    "tests/benchmarks/test_bench_quality_squad.py",
    "tests/tasks/test_sentence_embedding_e2e.py",
    "tests/test_docs.py::test_page_examples[docs/finetuning.md]",
    "tests/test_docs.py::test_page_examples[docs/pretraining.md]",
    "tests/test_docs.py::test_page_examples[docs/export.md]",
    "tests/test_docs.py::test_page_examples[docs/sentence_embeddings.md]",
    "tests/test_docs.py",
    "tests/tasks/test_distillation.py",
    "tests/benchmarks/common/test_bucketing.py",
    "tests/export/test_openvino.py",
    "tests/tools/test_quickstart.py",
    "tests/tools/test_multi_worker_scripts.py",
    "tests/tools/test_pretrain_e2e.py",
    "tests/tasks/test_end_to_end.py",
    "tests/benchmarks/test_bench_latency.py",
    "tests/benchmarks/test_bench_engines.py",
    "tests/data/test_pretraining_beam.py",
    "tests/retrieval/test_corpus_encoding.py",
    "tests/benchmarks/test_bench_peers.py",
    "tests/train/test_multi_worker.py",
)
SPREAD = ("tests/test_docs.py", "tests/data/test_pretraining_beam.py",
          "tests/retrieval/test_corpus_encoding.py")


def pytest_collection_modifyitems(config, items):
    def unit(item):
        path = item.nodeid.split("::")[0]
        return item.nodeid if path in SPREAD else path

    def rank(item):
        return next((i for i, prefix in enumerate(SLOWEST_FIRST)
                     if item.nodeid.startswith(prefix)), len(SLOWEST_FIRST))

    items[:] = sorted(items, key=rank)  # stable: collection order within a rank
    for item in items:
        item.add_marker(pytest.mark.xdist_group(unit(item)))


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace):
    import keras
    import numpy as np
    import tensorflow as tf

    import tfbert
    from tfbert import BertConfig, BertEncoder, BertPreprocessor

    doctest_namespace.update(np=np, tf=tf, keras=keras, tfbert=tfbert, BertConfig=BertConfig,
                             BertEncoder=BertEncoder, BertPreprocessor=BertPreprocessor)


@pytest.fixture(autouse=True)
def _doctest_temp_dirs(request, monkeypatch):
    # Docstring examples write with tempfile.mkdtemp(); under pytest they
    # write into the test's own temporary directory, removed when it passes,
    # instead of leaving exports and checkpoints in /tmp.
    if type(request.node).__name__ == "DoctestItem":
        import tempfile

        monkeypatch.setattr(tempfile, "tempdir", str(request.getfixturevalue("tmp_path")))


# Balance, seen at every run: each pytest-xdist worker's busy time (setup, call
# and teardown of its tests), printed after the slowest tests, and the test
# files that took longest in all (where the long tail of small tests goes, which
# the slowest-tests list does not show; SLOWEST_FIRST is ordered from it).
_WORKER_SECONDS = {}
_FILE_SECONDS = {}


def pytest_runtest_logreport(report):
    node = getattr(report, "node", None)  # set on the controller under xdist
    if node is not None:
        worker = node.gateway.id
        tests, seconds = _WORKER_SECONDS.get(worker, (0, 0.0))
        _WORKER_SECONDS[worker] = (tests + (report.when == "call"), seconds + report.duration)
        path = report.nodeid.split("::")[0]
        _FILE_SECONDS[path] = _FILE_SECONDS.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if _WORKER_SECONDS:
        terminalreporter.write_line("worker time: " + ", ".join(
            f"{worker} {seconds:.0f} s over {tests} tests"
            for worker, (tests, seconds) in sorted(_WORKER_SECONDS.items())))
        slowest = sorted(_FILE_SECONDS.items(), key=lambda item: -item[1])[:25]
        terminalreporter.write_line("slowest files (worker seconds): " + ", ".join(
            f"{path} {seconds:.0f}" for path, seconds in slowest))
