"""Hard-negative mining with the real MiniLM on real docstring pairs: every guard
checked against a brute-force ranking, the rows read back by both trainers."""

import json

import numpy as np
import pytest

from tfbert.data.pairs import read_pairs
from tfbert.data.rerank_rows import read_rerank_rows
from tfbert.retrieval.mining import mine_hard_negatives, training_rows, write_rows


def test_guards_against_brute_force(minilm_bi_encoder, docstring_rows):
    pairs = docstring_rows[:60]
    corpus = [p for _, p in docstring_rows]  # 200 passages, the 60 positives among them
    emb = {t: e for t, e in zip(corpus + [q for q, _ in pairs],
                                minilm_bi_encoder.encode(corpus + [q for q, _ in pairs]))}
    mined = mine_hard_negatives(pairs, corpus, encoder=minilm_bi_encoder, num_negatives=3,
                                range_min=1, range_max=20, absolute_margin=0.05)
    assert 40 <= len(mined) <= 60  # some queries keep no negative under the margin
    for row in mined:
        q = emb[row.query]
        ranked = sorted((t for t in corpus if t != row.positive), key=lambda t: -q @ emb[t])
        pos = float(q @ emb[row.positive])
        want = [t for t in ranked[1:20] if q @ emb[t] < pos - 0.05][:3]
        assert row.negatives == want
        assert row.positive not in row.negatives and 1 <= len(row.negatives) <= 3
        assert row.scores == sorted(row.scores, reverse=True)
        assert abs(row.positive_score - pos) < 1e-5
    relative = mine_hard_negatives(pairs, corpus, encoder=minilm_bi_encoder, num_negatives=2,
                                   relative_margin=0.2, max_score=0.6)
    for row in relative:
        assert all(s < row.positive_score * 0.8 and s <= 0.6 for s in row.scores)


def test_rows_for_both_trainers(tmp_path, minilm_bi_encoder, docstring_rows):
    mined = mine_hard_negatives(docstring_rows[:20], encoder=minilm_bi_encoder, num_negatives=2)
    assert len(mined) == 20 and all(len(r.negatives) == 2 for r in mined)
    n = write_rows(mined, str(tmp_path / "triplets.jsonl"), "triplet")
    assert n == 40
    triplets = read_pairs(str(tmp_path / "triplets.jsonl"), "anchor", "positive",
                          negative_column="negative")
    assert triplets.negative[:2] == mined[0].negatives
    write_rows(mined, str(tmp_path / "listwise.jsonl"), "listwise")
    listwise = read_rerank_rows(str(tmp_path / "listwise.jsonl"))
    assert listwise.kind == "listwise" and listwise.negatives[0] == mined[0].negatives
    write_rows(mined, str(tmp_path / "pointwise.jsonl"), "pointwise")
    pointwise = read_rerank_rows(str(tmp_path / "pointwise.jsonl"))
    assert pointwise.label[:3] == [1.0, 0.0, 0.0] and len(pointwise) == 60
    assert not list(tmp_path.glob("*tmp*"))  # written via a temporary file, renamed


def test_bad_input_is_one_clear_line(tmp_path, docstring_rows):
    embed = lambda texts: np.eye(len(texts), 8)[:, :8] if len(texts) <= 8 else None
    cases = [
        (lambda: mine_hard_negatives([], embed=embed), "no \\(query, positive\\) pairs"),
        (lambda: mine_hard_negatives([("q", "")], embed=embed), "pair 0 must be two non-empty"),
        (lambda: mine_hard_negatives([("q", "p")]), "needs encoder="),
        (lambda: mine_hard_negatives([("q", "p")], embed=embed, range_min=5, range_max=5),
         "range_min < range_max"),
        (lambda: mine_hard_negatives([("q", "p")], ["a", ""], embed=embed), "non-empty strings"),
        (lambda: mine_hard_negatives([("q", "p")], ["a"], embed=lambda t: np.ones((len(t), 3 if
                                     len(t) == 1 and t == ["a"] else 4))), "dim"),
        (lambda: write_rows([], str(tmp_path / "x.jsonl")), "No triplet rows"),
        (lambda: training_rows([], "csv"), "format must be one of"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message) as e:
            call()
        assert "\n" not in str(e.value)


def test_a_passage_held_three_times_is_one_candidate(minilm_bi_encoder, docstring_rows):
    # Issue 52: with the same passage three times in the corpus, a row's three negatives
    # were that one sentence (garbage in the rows the cross-encoder trains on).
    pairs = docstring_rows[:10]
    corpus = [p for _, p in docstring_rows[:40]]
    tripled = corpus[:1] * 3 + corpus + corpus[5:8] * 2
    mined = mine_hard_negatives(pairs, tripled, encoder=minilm_bi_encoder, num_negatives=3)
    once = mine_hard_negatives(pairs, corpus, encoder=minilm_bi_encoder, num_negatives=3)
    assert all(len(set(row.negatives)) == len(row.negatives) for row in mined)
    # Duplicates change nothing: the same rows as the corpus without them.
    assert [(r.query, r.negatives) for r in mined] == [(r.query, r.negatives) for r in once]
