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
# two workers' ends close: what is left at the end is small). The units are the
# slowest in the last measurement (the worker seconds of each file, or of each
# test of a SPREAD file, in a full run's `--durations=0`), slowest first; each
# test of a file in SPREAD is a unit of its own (files of independent tool runs,
# or whose shared setup is made once across workers by tests/conftest.py's
# `made_once`).
SLOWEST_FIRST = (
    "tests/test_docs.py::test_page_examples[docs/keras_workflow.md]",
    # Second, so that the other worker is busy while the first builds the docs'
    # shared setup (tests/test_docs.py's docs_workdir, made_once) instead of waiting.
    "tests/benchmarks/test_bench_quality_squad.py",
    "tests/export/test_openvino.py",
    "tests/tasks/test_sentence_embedding_e2e.py",
    "tests/tools/test_pretrain_e2e.py",
    "tests/models/test_text_classifier.py",
    "tests/tasks/test_distillation.py",
    "tests/test_docs.py::test_page_examples[docs/export.md]",
    "tests/test_docs.py::test_page_examples[docs/finetuning.md]",
    "tests/tools/test_multi_worker_scripts.py",
    "tests/tools/test_finetune.py",
    "tests/tasks/test_end_to_end.py",
    "tests/tools/test_export_tool.py",
    "tests/test_docs.py::test_page_examples[docs/pretraining.md]",
    "tests/models/test_token_classifier_strings.py",
    "tests/benchmarks/test_bench_engines.py",
    "tests/tools/test_quickstart.py",
    "tests/models/test_question_answerer.py",
    "tests/test_docs.py::test_page_examples[docs/question_answering.md]",
    "tests/test_docs.py::test_page_examples[docs/sentence_embeddings.md]",
    "tests/models/test_cross_encoder.py",
    "tests/export/test_preprocessor_export.py",
    "tests/export/test_tflite_text.py",
    "tests/tools/test_create_pretraining_data.py",
    "tests/benchmarks/test_bench_latency.py",
    "tests/models/test_token_classifier_windows.py",
    "tests/tools/test_distill_tool.py",
    "tests/tools/test_visualize.py",
    "tests/models/test_sentence_encoder_fit.py",
    "tests/train/test_lora.py",
    "tests/train/test_distill.py",
    "tests/tools/test_prune.py",
    "tests/export/test_compiled_call.py",
    "tests/test_docs.py",
    "tests/train/test_resume.py",
    "tests/export/test_task_model.py",
    "tests/benchmarks/common/test_bucketing.py",
    "tests/train/test_multi_worker.py",
    "tests/export/test_encoder_export.py",
    "tests/data/test_pretraining_beam.py",
    "tests/tools/test_bad_tool_inputs.py",
    "tests/retrieval/test_corpus_encoding.py",
    "tests/benchmarks/test_bench_peers.py",
)
SPREAD = ("tests/test_docs.py", "tests/data/test_pretraining_beam.py",
          "tests/retrieval/test_corpus_encoding.py", "tests/tools/test_finetune.py",
          "tests/tools/test_bad_tool_inputs.py")


# tryfirst: pytest-xdist's own hook reads the xdist_group marks (it names each
# item's group in its node id); run after it, the marks were never seen and
# every file was spread test by test, its module fixtures made on both workers.
@pytest.hookimpl(tryfirst=True)
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
