"""tfbert.analysis.geometry: self-similarity, anisotropy and their difference."""

import numpy as np
import pytest

from tfbert.analysis.geometry import contextuality


def test_static_vectors_are_fully_self_similar_and_noise_is_not():
    rng = np.random.default_rng(0)
    words = ["file", "open", "close", "read"] * 5
    static = {w: rng.normal(size=64) for w in set(words)}
    layer0 = np.stack([static[w] for w in words])  # one vector per type: no context
    layer1 = rng.normal(size=(len(words), 64))  # every occurrence unrelated
    result = contextuality(np.stack([layer0, layer1], 1), words, pairs=200)
    assert result["types"] == 4
    assert result["self_similarity"][0] == pytest.approx(1.0, abs=1e-5)
    assert abs(result["self_similarity"][1]) < 0.1 and abs(result["anisotropy"][1]) < 0.1
    assert result["adjusted"] == pytest.approx(
        np.subtract(result["self_similarity"], result["anisotropy"]).tolist())
