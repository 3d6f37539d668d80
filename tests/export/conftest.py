"""Fixtures shared by the export tests."""

import pytest

from tfbert import BertConfig, BertEncoder


@pytest.fixture(scope="module")
def encoder():
    """A tiny random encoder without dropout (outputs are deterministic)."""
    return BertEncoder(BertConfig.from_preset("tiny", dropout_rate=0.0, attention_dropout_rate=0.0))
