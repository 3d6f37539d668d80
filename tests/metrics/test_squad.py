"""SQuAD metrics against hand-computed cases (official evaluate-v1.1/v2.0 rules)."""

import pytest

from tfbert.metrics.squad import f1_score, find_best_threshold, normalize_answer, squad_scores


def test_normalization_edge_cases():
    assert normalize_answer("The Cat") == "cat"
    assert normalize_answer("  a  an the  ") == ""
    assert normalize_answer("theatre") == "theatre"  # articles only as whole words
    assert normalize_answer("U.S.A.!") == "usa"  # punctuation removed, not spaced
    assert normalize_answer("rock-and-roll") == "rockandroll"
    assert normalize_answer("Café  Zürich\t\n") == "café zürich"  # accents kept
    assert normalize_answer("“quoted”") == "“quoted”"  # non-ASCII punctuation stays (official)
    # Punctuation goes first: "a(n)" becomes the article "an", then is dropped.
    assert normalize_answer("A(n) apple") == "apple"


def test_f1_and_em_by_hand():
    # pred {cat, sat}, gold {cat, sat, down}: P=1, R=2/3 -> F1=0.8.
    assert f1_score("the cat sat", "a cat sat down") == pytest.approx(0.8)
    assert f1_score("cat cat", "cat") == pytest.approx(2 * 0.5 * 1 / 1.5)  # counts, not sets
    assert f1_score("", "") == 1.0 and f1_score("", "x") == 0.0  # v2.0
    assert f1_score("", "", version=1) == 0.0  # v1.1: no common token


def test_several_gold_answers_take_the_max():
    gold = {"q": ["Denver Broncos", "the Broncos", "Broncos"]}
    s = squad_scores(gold, {"q": "Broncos"}, version=1)
    assert s["exact"] == 100.0 and s["f1"] == 100.0 and s["total"] == 1
    s = squad_scores(gold, {"q": "Denver"}, version=1)
    assert s["exact"] == 0.0 and s["f1"] == pytest.approx(100 * 2 * 1 * 0.5 / 1.5)


def test_unanswerable_and_splits():
    gold = {"a": ["Paris"], "b": [], "c": ["the"], "d": ["blue sky"]}
    preds = {"a": "Paris", "b": "", "c": "", "d": "sky"}
    s = squad_scores(gold, preds)
    # "c": its only gold normalizes to "" -> scored as "", but HasAns (non-empty list).
    assert s["exact"] == pytest.approx(75.0)
    assert s["f1"] == pytest.approx(100 * (1 + 1 + 1 + 2 / 3) / 4)
    assert (s["HasAns_total"], s["NoAns_total"]) == (3, 1)
    assert s["HasAns_exact"] == pytest.approx(200 / 3) and s["NoAns_exact"] == 100.0
    assert "best_f1" not in s
    # Missing prediction: scored 0.
    assert squad_scores({"x": ["y"]}, {})["exact"] == 0.0


def test_best_threshold_search_by_hand():
    gold = {"h1": ["cat"], "h2": ["dog"], "n1": [], "n2": []}
    preds = {"h1": "cat", "h2": "bird", "n1": "fish", "n2": ""}
    odds = {"h1": -3.0, "n1": -1.0, "h2": 0.5, "n2": 2.0}
    # Start: all "" -> 2 right (n1, n2). Rising odds: h1 +1 (3, thresh -3), n1 -1 (2),
    # h2 +0 (2), n2 +0 (2). Best 3/4 at -3.0.
    assert find_best_threshold(preds, {"h1": 1.0, "h2": 0.0, "n1": 0.0, "n2": 1.0}, odds,
                               {q: bool(a) for q, a in gold.items()}) == (75.0, -3.0)
    s = squad_scores(gold, preds, null_odds=odds)
    assert s["best_exact"] == 75.0 and s["best_exact_thresh"] == -3.0
    assert s["best_f1"] == 75.0 and s["best_f1_thresh"] == -3.0
    # na_prob_thresh 1.0: n2 (odds 2.0 > 1) counts as "", already right; rest as given.
    assert s["exact"] == 50.0
    assert set(s) == {"exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total",
                      "NoAns_exact", "NoAns_f1", "NoAns_total", "best_exact",
                      "best_exact_thresh", "best_f1", "best_f1_thresh"}


def test_bad_arguments():
    with pytest.raises(ValueError, match="version"):
        squad_scores({"a": []}, {}, version=3)
    with pytest.raises(ValueError, match="no gold"):
        squad_scores({}, {})
