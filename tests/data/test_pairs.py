"""Pair / triplet / scored-pair readers: TSV, CSV, JSONL, column flags, and
errors naming the file and line."""

import json

import pytest

from tfbert.data.pairs import read_pairs, read_scored_pairs, read_triplets


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_tsv_pairs_with_hard_negative(tmp_path):
    path = write(tmp_path / "p.tsv", "q\tp\tn\nOpen a file.\tA stream is returned.\tSort it.\n\n"
                                     "Close it.\tThe handle is released.\tOpen a file.\n")
    pairs = read_pairs(path, "q", "p", negative_column="n")
    assert pairs.anchor == ["Open a file.", "Close it."]
    assert pairs.negative == ["Sort it.", "Open a file."]
    assert pairs.line == [2, 4] and len(pairs) == 2


def test_csv_triplets_by_index_without_header(tmp_path):
    path = write(tmp_path / "t.csv", '"a, b",p1,n1\nc,p2,n2\n')
    rows = read_triplets(path, 0, 1, 2, header=False)
    assert rows.anchor == ["a, b", "c"] and rows.positive == ["p1", "p2"]


def test_jsonl_scored_pairs_rescaled(tmp_path):
    lines = [{"s1": "A man plays.", "s2": "A man is playing.", "score": 5},
             {"s1": "A cat.", "s2": "A car.", "score": 0.5}]
    path = write(tmp_path / "sts.jsonl", "\n".join(json.dumps(l) for l in lines))
    rows = read_scored_pairs(path, "s1", "s2", "score", min_score=0, max_score=5)
    assert rows.score == [1.0, 0.1]


@pytest.mark.parametrize("content, kwargs, match", [
    ("q\tp\nhello\n", {}, r"p\.tsv, line 2: text_b_column is column 1 but the line has 1"),
    ("q\tp\nhello\tthere\n", {"negative_column": "neg"}, r"p\.tsv, line 1: no column named 'neg'"),
    ("q\tp\nhello\t \n", {}, r"p\.tsv, line 2: the text_b column 'p' is empty"),
])
def test_missing_columns_name_file_and_line(tmp_path, content, kwargs, match):
    with pytest.raises(ValueError, match=match):
        read_pairs(write(tmp_path / "p.tsv", content), "q", "p", **kwargs)


def test_jsonl_missing_key_names_line(tmp_path):
    path = write(tmp_path / "p.jsonl", '{"q": "a", "p": "b"}\n{"q": "c"}\n')
    with pytest.raises(ValueError, match=r"p\.jsonl, line 2: no key 'p'"):
        read_pairs(path, "q", "p")


@pytest.mark.parametrize("score, match", [
    ("5.5", r"s\.tsv, line 3: score 5\.5 in column 'score' is outside \[0, 5\]"),
    ("-1", r"s\.tsv, line 3: score -1 .* outside"),
    ("nan", r"s\.tsv, line 3: score nan .* outside"),
    ("high", r"s\.tsv, line 3: score 'high' in column 'score' is not a number"),
])
def test_scores_out_of_range_name_file_and_line(tmp_path, score, match):
    path = write(tmp_path / "s.tsv", f"a\tb\tscore\nx\ty\t4\nu\tv\t{score}\n")
    with pytest.raises(ValueError, match=match):
        read_scored_pairs(path, "a", "b", "score", max_score=5)


def test_bad_range(tmp_path):
    with pytest.raises(ValueError, match="max_score"):
        read_scored_pairs(write(tmp_path / "s.tsv", "a\tb\ts\nx\ty\t1\n"), "a", "b", "s",
                          min_score=1, max_score=1)
