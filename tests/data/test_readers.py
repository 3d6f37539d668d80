"""Readers: formats, column flags and errors naming file and line."""

import json
import os

import pytest

from tfbert.data import readers

DATA = os.path.join(os.path.dirname(__file__), "finetune")


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_reads_shipped_tsv_and_jsonl():
    ex = readers.read_labeled_text(os.path.join(DATA, "sentiment_train.tsv"), "sentence", "label")
    assert len(ex) == 160 and set(ex.label) == {"positive", "negative"}
    assert ex.text_b is None and ex.line[0] == 2
    ex = readers.read_labeled_text(os.path.join(DATA, "rating_dev.jsonl"), "review", "stars")
    assert len(ex) == 50 and ex.label[0] in {"1", "2", "3", "4", "5"}


def test_tsv_pairs_by_name_and_index_keep_quotes(tmp_path):
    path = write(tmp_path, "pairs.tsv", 'id\ta\tb\tlabel\n1\tHe said "hi\tShe left .\t1\n2\tYes\tNo\t0\n')
    ex = readers.read_labeled_text(path, "a", "label", text_b_column="b")
    assert ex.text == ['He said "hi', "Yes"] and ex.text_b == ["She left .", "No"]
    assert ex.label == ["1", "0"] and ex.line == [2, 3]
    ex = readers.read_labeled_text(path, 1, 3, text_b_column=2)
    assert ex.text[0] == 'He said "hi'
    # CoLA style: no header, index columns.
    path = write(tmp_path, "cola.tsv", "src\t1\t\tThe cat sat .\nsrc\t0\t*\tCat the sat .\n")
    ex = readers.read_labeled_text(path, 3, 1, header=False)
    assert ex.text == ["The cat sat .", "Cat the sat ."] and ex.label == ["1", "0"]


def test_csv_with_quoted_commas(tmp_path):
    path = write(tmp_path, "d.csv", 'text,label\n"Well, it was fine.",pos\n')
    ex = readers.read_labeled_text(path, "text", "label")
    assert ex.text == ["Well, it was fine."]


def test_missing_text_column_names_file(tmp_path):
    path = write(tmp_path, "d.tsv", "sentence\tlabel\nok\t1\n")
    with pytest.raises(ValueError, match=r"d\.tsv, line 1: no column named 'text'.*sentence"):
        readers.read_labeled_text(path, "text", "label")
    path = write(tmp_path, "d.jsonl", json.dumps({"text": "a", "label": 1}) + "\n"
                 + json.dumps({"label": 0}) + "\n")
    with pytest.raises(ValueError, match=r"d\.jsonl, line 2: no key 'text'"):
        readers.read_labeled_text(path, "text", "label")
    path = write(tmp_path, "short.tsv", "a\tb\tc\nx\ty\tz\nonly\n")
    with pytest.raises(ValueError, match=r"short\.tsv, line 3: .*column 2 .*1 field"):
        readers.read_labeled_text(path, "a", "c")


def test_empty_and_bad_files(tmp_path):
    with pytest.raises(ValueError, match=r"empty\.tsv: the file is empty"):
        readers.read_labeled_text(write(tmp_path, "empty.tsv", ""), "a", "b")
    with pytest.raises(ValueError, match=r"h\.tsv: no examples"):
        readers.read_labeled_text(write(tmp_path, "h.tsv", "a\tb\n"), "a", "b")
    with pytest.raises(ValueError, match=r"bad\.jsonl, line 2: not valid JSON"):
        readers.read_labeled_text(write(tmp_path, "bad.jsonl", '{"a": "x"}\n{"a": \n'), "a")
    with pytest.raises(ValueError, match=r"e\.tsv, line 3: the text column 'a' is empty"):
        readers.read_labeled_text(write(tmp_path, "e.tsv", "a\tb\nx\t1\n \t0\n"), "a", "b")
    with pytest.raises(FileNotFoundError, match="nope.tsv"):
        readers.read_labeled_text(str(tmp_path / "nope.tsv"), "a")
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        readers.read_labeled_text(write(tmp_path, "d.xml", "<a/>"), "a")


def test_unknown_label_names_file_and_line(tmp_path):
    path = write(tmp_path, "d.tsv", "t\tl\ngood\tpos\nbad\tneg\nmeh\tneutral\n")
    ex = readers.read_labeled_text(path, "t", "l")
    assert readers.encode_labels(ex, ["neg", "pos", "neutral"]) == [1, 0, 2]
    with pytest.raises(ValueError, match=r"d\.tsv, line 4: label 'neutral' is not in the label list"):
        readers.encode_labels(ex, ["neg", "pos"])
    path = write(tmp_path, "r.tsv", "t\tl\ngood\t4.5\nbad\tlow\n")
    with pytest.raises(ValueError, match=r"r\.tsv, line 3: regression label 'low'"):
        readers.parse_float_labels(readers.read_labeled_text(path, "t", "l"))


def test_conll_reads_shipped_file():
    s = readers.read_conll(os.path.join(DATA, "ner_dev.conll"))
    assert len(s) == 40
    assert all(len(w) == len(t) for w, t in zip(s.words, s.tags))
    assert s.line[0] == 3  # after -DOCSTART- and a blank line
    pos = readers.read_conll(os.path.join(DATA, "ner_dev.conll"), tag_column=1)
    assert pos.words == s.words and "NNP" in pos.tags[0]


def test_conll_sentences_and_docstart(tmp_path):
    text = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n\n"
            "-DOCSTART- -X- -X- O\nPeter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n")
    s = readers.read_conll(write(tmp_path, "d.conll", text))
    assert s.words == [["EU", "rejects"], ["Peter", "Blackburn"]]
    assert s.tags == [["B-ORG", "O"], ["B-PER", "I-PER"]]
    assert s.line == [3, 8]
    with pytest.raises(ValueError, match=r"d\.conll, line 9: tag 'I-PER' is not in the label list"):
        readers.encode_tags(s, ["O", "B-ORG", "B-PER"])


def test_conll_errors(tmp_path):
    with pytest.raises(ValueError, match=r"m\.conll, line 2: expected 'word ... tag' columns, got 1"):
        readers.read_conll(write(tmp_path, "m.conll", "EU B-ORG\nrejects\n"))
    with pytest.raises(ValueError, match=r"e\.conll: the file is empty"):
        readers.read_conll(write(tmp_path, "e.conll", ""))
    with pytest.raises(ValueError, match=r"d\.conll: no sentences"):
        readers.read_conll(write(tmp_path, "d.conll", "-DOCSTART- O\n\n\n"))
    with pytest.raises(ValueError, match=r"p\.conll, line 1: .*got 2"):
        readers.read_conll(write(tmp_path, "p.conll", "EU NNP\n"), tag_column=3)


def test_utf8_byte_order_mark_is_skipped(tmp_path):
    # Excel and Notepad write a BOM; it must not become part of the first column name.
    for name, text in (("a.tsv", "sentence\tlabel\nGood film .\tpositive\n"),
                       ("a.csv", "sentence,label\nGood film .,positive\n"),
                       ("a.jsonl", '{"sentence": "Good film .", "label": "positive"}\n')):
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + text.encode())
        examples = readers.read_labeled_text(str(path), "sentence", "label")
        assert examples.text == ["Good film ."] and examples.label == ["positive"]
    conll = tmp_path / "a.conll"
    conll.write_bytes(b"\xef\xbb\xbfParis NNP B-NP B-LOC\n\n")
    assert readers.read_conll(str(conll)).words == [["Paris"]]


def test_unterminated_quote_is_reported_where_it_opens(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('sentence,label\n"A fine film .",positive\n"Not closed .,negative\n'
                    "Dull .,negative\nGreat .,positive\n")
    with pytest.raises(ValueError, match=r"q\.csv, line 3: a quote opened on this line is never closed"):
        readers.read_labeled_text(str(path), "sentence", "label")


def test_multiline_quoted_field_keeps_its_first_line(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text('sentence,label\n"Two\nlines",positive\nOne line,bad_label\n')
    examples = readers.read_labeled_text(str(path), "sentence", "label")
    assert examples.text == ["Two\nlines", "One line"] and examples.line == [2, 4]


def test_non_utf8_names_the_line(tmp_path):
    path = tmp_path / "latin1.tsv"
    path.write_bytes("sentence\tlabel\nok\tpositive\ncaf\xe9\tnegative\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.tsv, line 3: not UTF-8 text"):
        readers.read_labeled_text(str(path), "sentence", "label")
