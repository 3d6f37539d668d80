"""tfbert.analysis.structural_probe recovers trees that are planted in the
vectors: on the hand-annotated sample's trees, layer 0 holds each word's
path to the root (so squared distances are tree distances and squared norms
depths, up to a linear map), layer 1 holds noise. The trained probe must give
the trees back on dev from layer 0 and not from layer 1."""

import numpy as np
import pytest

from tfbert.analysis.conllu import read_conllu, syntax_of
from tfbert.analysis.structural_probe import ParsedSentences, probe_structure

WIDTH = 16  # more than the longest sample sentence


def planted(path, seed):
    """Layer 0: h_i[c] = 1 for every word c on the path from i up to (not
    including) the root; layer 1: Gaussian noise."""
    rng = np.random.default_rng(seed)
    sentences = read_conllu(path)
    vectors, heads, punctuation = [], [], []
    for s in sentences:
        tree = syntax_of(s)
        paths = np.zeros((len(tree), WIDTH), np.float32)
        for i in range(len(tree)):
            node = i
            while tree[node]:
                paths[i, node] = 1.0
                node = tree[node] - 1
        vectors.append(np.stack([paths, rng.normal(size=paths.shape)], axis=1))
        heads.append(tree)
        punctuation.append([u == "PUNCT" for u in s.column("upos")])
    return ParsedSentences(vectors, heads, punctuation)


def test_planted_trees_come_back_from_their_layer_only(analysis_data):
    train = planted(str(analysis_data / "syntax_train.conllu"), 0)
    dev = planted(str(analysis_data / "syntax_dev.conllu"), 1)
    result = probe_structure(train, dev, train, dev, seeds=(0,), rank=WIDTH, epochs=25,
                             batch_size=4, learning_rate=3e-2)
    uuas, noise = result["per_layer"]
    assert uuas > 0.9 and noise < 0.6, result["per_layer"]
    assert result["spearman"][0] > 0.9 > result["spearman"][1]
    assert result["root_accuracy"][0] > 0.8 and result["depth_spearman"][0] > 0.8
    assert result["random_init_per_layer"] == pytest.approx(result["per_layer"])
