"""seqeval span rules on hand-computed cases."""

import pytest

from tfbert.metrics import seqeval


def test_entities_iob2():
    tags = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC", "O"]
    assert seqeval.get_entities(tags) == [("PER", 0, 1), ("LOC", 3, 3), ("LOC", 4, 5)]


def test_i_tag_starts_an_entity():
    # seqeval's default mode: I- after O, at the start, or after another type opens an entity.
    assert seqeval.get_entities(["I-PER", "I-PER", "O"]) == [("PER", 0, 1)]
    assert seqeval.get_entities(["O", "I-LOC"]) == [("LOC", 1, 1)]
    assert seqeval.get_entities(["B-PER", "I-LOC", "I-LOC"]) == [("PER", 0, 0), ("LOC", 1, 2)]


def test_iobes():
    tags = ["S-PER", "B-ORG", "I-ORG", "E-ORG", "O", "S-LOC"]
    assert seqeval.get_entities(tags) == [("PER", 0, 0), ("ORG", 1, 3), ("LOC", 5, 5)]


def test_f1_exact_span_and_type():
    true = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    pred = [["B-PER", "O", "O", "B-LOC"], ["B-LOC", "O"]]
    # true: PER(0-1), LOC(3), ORG(0); pred: PER(0-0) wrong span, LOC(3) right, LOC(0) wrong type.
    r = seqeval.f1_report(true, pred)
    assert r["precision"] == pytest.approx(1 / 3)
    assert r["recall"] == pytest.approx(1 / 3)
    assert r["f1"] == pytest.approx(1 / 3)
    assert r["per_type"]["LOC"]["precision"] == pytest.approx(0.5)
    assert r["per_type"]["LOC"]["recall"] == pytest.approx(1.0)
    assert r["per_type"]["ORG"]["support"] == 1


def test_i_start_counts_as_match():
    # An entity predicted as I-PER I-PER equals a true B-PER I-PER span.
    r = seqeval.f1_report([["B-PER", "I-PER", "O"]], [["I-PER", "I-PER", "O"]])
    assert r["f1"] == 1.0


def test_entities_do_not_cross_sentences():
    r = seqeval.f1_report([["O", "B-PER"], ["I-PER", "O"]], [["O", "B-PER"], ["I-PER", "O"]])
    assert r["f1"] == 1.0
    assert r["per_type"]["PER"]["support"] == 2


def test_token_accuracy_and_tag_sets():
    assert seqeval.token_accuracy([["NN", "VB"], ["DT"]], [["NN", "NN"], ["DT"]]) == pytest.approx(2 / 3)
    assert seqeval.is_bio_tag_set(["O", "B-PER", "I-PER"])
    assert not seqeval.is_bio_tag_set(["NN", "VB", "DT"])
    with pytest.raises(ValueError, match="Sequence 0"):
        seqeval.f1_report([["O"]], [["O", "O"]])
