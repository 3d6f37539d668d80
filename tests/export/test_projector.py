"""The projector files parse with TensorBoard's own config proto and hold the rows."""

import numpy as np
import pytest
from google.protobuf import text_format
from tensorboard.plugins.projector import projector_config_pb2

from tfbert.export.projector import write_projector


def read_config(log_dir):
    config = projector_config_pb2.ProjectorConfig()
    text_format.Parse((log_dir / "projector_config.pbtxt").read_text(), config)
    return config


def test_files_and_config(tmp_path):
    emb = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    write_projector(str(tmp_path), emb, {"text": ["a\tb", "c\nd", "e", "f"], "module": list("wxyz")})
    config = read_config(tmp_path)
    (entry,) = config.embeddings
    assert entry.tensor_name == "embedding" and list(entry.tensor_shape) == [4, 3]
    np.testing.assert_allclose(np.loadtxt(tmp_path / entry.tensor_path, delimiter="\t"), emb,
                               rtol=1e-5)
    lines = (tmp_path / entry.metadata_path).read_text().splitlines()
    assert lines == ["text\tmodule", "a b\tw", "c d\tx", "e\ty", "f\tz"]


def test_second_embedding_is_added(tmp_path):
    write_projector(str(tmp_path), np.ones((2, 2)), ["a", "b"], name="before")
    write_projector(str(tmp_path), np.ones((2, 2)), ["a", "b"], name="after")
    write_projector(str(tmp_path), np.zeros((2, 2)), ["a", "b"], name="after")
    names = [e.tensor_name for e in read_config(tmp_path).embeddings]
    assert sorted(names) == ["after", "before"]
    assert (tmp_path / "before_metadata.tsv").read_text() == "a\nb\n"  # one column: no header


def test_bad_inputs(tmp_path):
    with pytest.raises(ValueError, match="has 1 rows, embeddings have 2"):
        write_projector(str(tmp_path), np.ones((2, 2)), ["a"])
    with pytest.raises(ValueError, match="NaN"):
        write_projector(str(tmp_path), np.full((2, 2), np.nan))
