"""tfbert.analysis.tag_probe on the hand-annotated UPOS sample: the probe on
a tiny random encoder's embeddings (word identity) beats the majority
baseline on dev; the control task keys on word types; the report carries
every control and the mix summaries."""

import numpy as np
import pytest

from tfbert.analysis.conllu import read_conllu
from tfbert.analysis.layer_features import LayerFeatures
from tfbert.analysis.tag_probe import TaggedWords, control_labels, probe_tags


@pytest.fixture(scope="module")
def upos(tiny_pair, analysis_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("tags")
    splits = {}
    for split in ("train", "dev"):
        sentences = read_conllu(str(analysis_data / f"syntax_{split}.conllu"), "upos")
        features = LayerFeatures.extract(tiny_pair, [s.words for s in sentences], out / split)
        splits[split] = TaggedWords(features.vectors, [u for s in sentences for u in s.column(
            "upos")], [w for s in sentences for w in s.words])
    return splits


def test_control_task_gives_each_word_type_one_label(upos):
    train, dev = control_labels(upos["train"], upos["dev"], seed=0)
    by_type = {}
    for word, label in zip(upos["train"].words + upos["dev"].words, list(train) + list(dev)):
        assert by_type.setdefault(word.lower(), label) == label
    assert len(set(train)) > 3  # drawn from the label distribution, not one label
    assert not np.array_equal(train, control_labels(upos["train"], upos["dev"], seed=1)[0])


def test_probe_report(upos):
    # The same vectors stand in for the random-init control here: tools/probe.py
    # (tests/analysis/test_probe_tool.py) runs the real one.
    result = probe_tags(upos["train"], upos["dev"], upos["train"], upos["dev"], seeds=(0,),
                        epochs=20, batch_size=32, learning_rate=1e-2)
    layers = 3
    for key in ("per_layer", "per_layer_spread", "per_layer_worst", "random_init_per_layer",
                "control_task_per_layer", "selectivity", "cumulative_per_layer", "mix_weights"):
        assert len(result[key]) == layers, key
    assert result["majority_baseline"] == pytest.approx(26 / 91)  # NOUN: 26 of 91 dev words
    # Layer 0 is word identity: dev words seen in training get their tag back.
    assert result["per_layer"][0] > result["majority_baseline"] + 0.3
    assert result["per_layer_worst"][0] <= result["per_layer"][0]
    assert sum(result["mix_weights"]) == pytest.approx(1.0, abs=1e-5)
    assert 0 <= result["expected_layer"] <= 2
    assert result["selectivity"] == pytest.approx(
        np.subtract(result["per_layer"], result["control_task_per_layer"]).tolist())
