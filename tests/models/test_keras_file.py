"""`tfbert.load_model`: a `.keras` file that is missing, a directory,
truncated or corrupt is one line naming the file and the problem, raised
before Keras reads it (Keras says "File not found" for a truncated file and
zipfile's "Bad CRC-32" for a damaged one); a good file loads as Keras'
`load_model` loads it."""

import pathlib

import numpy as np
import pytest

import tfbert
from tfbert import BertConfig, BertEncoder, BertPreprocessor, TextClassifier

VOCAB = pathlib.Path(__file__).parents[1] / "data" / "pretraining" / "vocab.txt"


@pytest.fixture(scope="module")
def keras_file(tmp_path_factory):
    """`(path, model)`: a 1-layer tiny TextClassifier saved as a `.keras` file."""
    config = BertConfig.from_preset("tiny", vocab_size=1931, num_layers=1)
    model = TextClassifier(BertEncoder(config), BertPreprocessor(vocab_file=str(VOCAB),
                                                                 seq_length=16), num_classes=2)
    path = tmp_path_factory.mktemp("keras_file") / "model.keras"
    model.save(str(path))
    return path, model


def test_a_good_file_loads(keras_file):
    path, model = keras_file
    again = tfbert.load_model(str(path))
    assert isinstance(again, TextClassifier)
    for loaded, saved in zip(again.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(loaded, saved)  # (its strings path: test_text_classifier)


def test_bad_files_are_one_line_naming_the_file(keras_file, tmp_path,
                                                raises_one_line_from_tfbert):
    data = keras_file[0].read_bytes()
    truncated = tmp_path / "truncated.keras"
    truncated.write_bytes(data[: len(data) // 2])
    corrupt = bytearray(data)
    middle = len(data) // 2  # inside model.weights.h5, the bulk of the archive
    corrupt[middle: middle + 64] = bytes(64)
    (tmp_path / "corrupt.keras").write_bytes(bytes(corrupt))
    (tmp_path / "empty.keras").write_bytes(b"")
    (tmp_path / "folder.keras").mkdir()
    for name, pattern in [
        ("truncated.keras", r"truncated\.keras is not a readable \.keras archive \(truncated or "
                            r"corrupt: File is not a zip file\)\.$"),
        ("corrupt.keras", r"corrupt\.keras is not a readable \.keras archive \(truncated or "
                          r"corrupt: bad CRC-32 for model\.weights\.h5\)\.$"),
        ("empty.keras", r"empty\.keras is not a readable \.keras archive"),
        ("folder.keras", r"^\.keras file: \S*folder\.keras is a directory, not a file\.$"),
        ("missing.keras", r"^\.keras file: no such file: \S*missing\.keras$"),
    ]:
        raises_one_line_from_tfbert(name, lambda: tfbert.load_model(str(tmp_path / name)),
                                    pattern)
    raises_one_line_from_tfbert("None", lambda: tfbert.load_model(None),
                                r"^\.keras file must be a path \(a string\), got None\.$")
