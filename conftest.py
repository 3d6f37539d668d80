"""Doctest namespace for `pytest --doctest-modules tfbert` (see pytest.ini):
the names the docstring examples use without importing them."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The repository root on sys.path, once for every test: tests import
# `benchmarks.*` and `tools.*`, and --import-mode=importlib does not add it.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pytest


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
