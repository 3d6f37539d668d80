"""tfbert.analysis.sense_items and the WordNet sample built by
tfbert/datasets/wordnet_senses.py: every target is a whole word of its text;
bad rows are one line naming file, line and key."""

import json

import pytest

from tfbert.analysis.sense_items import read_sense_items


def test_the_wordnet_sample_reads(analysis_data):
    train = read_sense_items(str(analysis_data / "senses_train.jsonl"))
    dev = read_sense_items(str(analysis_data / "senses_dev.jsonl"))
    assert len(train) == 94 and len(dev) == 58
    for item in train + dev:
        assert item.words[item.target].lower() == item.lemma
    # Each dev sense has training examples: nearest centroid can find it.
    assert {(i.lemma, i.sense) for i in dev} <= {(i.lemma, i.sense) for i in train}
    assert {i.lemma for i in dev if i.lemma == "application"}


def test_words_split_punctuation_but_keep_the_target(tmp_path):
    path = tmp_path / "s.jsonl"
    text = "He sat by the (river) bank, fishing."
    path.write_text(json.dumps({"text": text, "start": 22, "end": 26, "lemma": "bank",
                                "sense": "n.1"}) + "\n")
    [item] = read_sense_items(str(path))
    assert item.words == ["He", "sat", "by", "the", "(", "river", ")", "bank", ",", "fishing",
                          "."]
    assert item.target == 7 and item.line == 1


GOOD = {"text": "Deposit it in the bank.", "start": 18, "end": 22, "lemma": "bank",
        "sense": "n.1"}


@pytest.mark.parametrize("change, pattern", [
    ({"start": 30, "end": 34}, r"s\.jsonl, line 2: target span \[30, 34\) is out of range"),
    ({"word": "river"}, r"line 2: text\[18:22\] is 'bank', not the item's word 'river'"),
    ({"start": 19}, r"line 2: text\[19:22\] is 'ank', not a whole word"),
    ({"sense": ""}, r"line 2: 'sense' must be a non-empty string"),
    ({"start": "18"}, r"line 2: 'start' must be an integer"),
])
def test_bad_items_are_one_line(tmp_path, raises_one_line_from_tfbert, change, pattern):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps({**GOOD, **change}) + "\n")
    raises_one_line_from_tfbert("sense", lambda: read_sense_items(str(path)), pattern)


def test_missing_key_and_bad_json(tmp_path, raises_one_line_from_tfbert):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({k: v for k, v in GOOD.items() if k != "lemma"}) + "\n")
    raises_one_line_from_tfbert("key", lambda: read_sense_items(str(path)),
                                r"s\.jsonl, line 1: missing key 'lemma'")
    path.write_text("{not json\n")
    raises_one_line_from_tfbert("json", lambda: read_sense_items(str(path)),
                                r"s\.jsonl, line 1: not JSON")
