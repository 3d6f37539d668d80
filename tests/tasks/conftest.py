"""Shared fixtures for task tests: the real uncased vocab and the shipped data."""

import os

import pytest

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "finetune")


@pytest.fixture()
def data_dir():
    return DATA


@pytest.fixture()
def make_preprocessor(uncased_vocab_file):
    from tfbert.text.preprocessor import BertPreprocessor

    def make(seq_length=32):
        return BertPreprocessor(vocab_file=uncased_vocab_file, seq_length=seq_length)

    return make
