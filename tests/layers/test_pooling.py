import numpy as np
import pytest

from tfbert.layers.pooling import POOLING, check_pooling, pool_tokens


def test_each_mode_ignores_padding():
    rng = np.random.default_rng(0)
    tokens = rng.normal(size=(2, 5, 3)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], "int32")
    # Padding as large as can be: no mode may let it through.
    tokens[0, 3:] = 1e6
    want = {
        "cls": tokens[:, 0],
        "mean": np.stack([tokens[0, :3].mean(0), tokens[1].mean(0)]),
        "max": np.stack([tokens[0, :3].max(0), tokens[1].max(0)]),
    }
    for mode in POOLING:
        np.testing.assert_allclose(pool_tokens(tokens, mask, mode), want[mode], rtol=1e-6)


def test_unknown_mode_is_one_line():
    with pytest.raises(ValueError, match=r"^pooling must be one of \['cls', 'mean', 'max'\], "
                                         r"got 'avg'\.$"):
        check_pooling("avg")
