"""The analysis tests' shared pieces: a tiny random encoder on the real
uncased vocabulary saved as a checkpoint (once per session) and the hand-made
sample files of tests/data/analysis/."""

import pathlib

import pytest

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "analysis"


@pytest.fixture(scope="session")
def analysis_data():
    return DATA


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, uncased_vocab_file):
    """A 2-layer tiny BERT (random init, seed 0, dropout off) as a tfbert checkpoint."""
    import keras

    from tfbert import BertConfig, BertEncoder
    from tfbert.checkpoint import save_checkpoint

    keras.utils.set_random_seed(0)
    config = BertConfig.from_preset("tiny", dropout_rate=0.0, attention_dropout_rate=0.0)
    encoder = BertEncoder(config)
    path = tmp_path_factory.mktemp("analysis") / "tiny"
    save_checkpoint(str(path), config, encoder.get_named_weights(), uncased_vocab_file, True)
    return str(path)


@pytest.fixture(scope="session")
def tiny_pair(tiny_checkpoint):
    """`(encoder, preprocessor)` of the tiny checkpoint."""
    from tfbert.analysis.layer_features import encoder_and_preprocessor

    return encoder_and_preprocessor(tiny_checkpoint)
