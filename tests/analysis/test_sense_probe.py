"""tfbert.analysis.sense_probe: nearest centroid picks among the lemma's
training senses only, and the most-frequent-sense baseline is counted by
hand on the WordNet sample."""

import collections

import numpy as np
import pytest

from tfbert.analysis.sense_items import read_sense_items
from tfbert.analysis.sense_probe import sense_accuracy


def test_centroids_choose_within_the_lemma():
    # Dev item "bank" lies nearest to a "bass" centroid, which is not a bank sense.
    train = np.array([[[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]], [[0.0, 0.0, 1.0]]])
    result = sense_accuracy(train, ["bank", "bank", "bass"], ["money", "river", "fish"],
                            np.array([[[0.1, 0.2, 1.0]], [[1.0, 1.0, 0.0]]]),
                            ["bank", "oak"], ["river", "tree"])
    assert result["per_layer"] == [1.0] and (result["scored"], result["unscored"]) == (1, 1)


def test_baseline_on_the_wordnet_sample(analysis_data):
    train = read_sense_items(str(analysis_data / "senses_train.jsonl"))
    dev = read_sense_items(str(analysis_data / "senses_dev.jsonl"))
    counts = collections.defaultdict(collections.Counter)
    for item in train:
        counts[item.lemma][item.sense] += 1
    # The lemma's most frequent training sense (ties: the first in sorted order).
    most_frequent = {lemma: sorted(c, key=lambda s: (-c[s], s))[0] for lemma, c in counts.items()}
    expected = np.mean([most_frequent[i.lemma] == i.sense for i in dev])
    assert 0.2 < expected < 0.6  # 0.345: the lemmas' senses are not one dominant sense
    rng = np.random.default_rng(0)
    result = sense_accuracy(rng.normal(size=(len(train), 2, 4)), [i.lemma for i in train],
                            [i.sense for i in train], rng.normal(size=(len(dev), 2, 4)),
                            [i.lemma for i in dev], [i.sense for i in dev])
    assert result["baseline"] == pytest.approx(expected)
    assert result["scored"] == len(dev) and len(result["per_layer"]) == 2
