"""Held-out validation slices keep the file's format, lose and duplicate
nothing, never split a SQuAD paragraph, and are the same for the same seed."""

import json
import pathlib

import pytest

from tfbert.data import readers
from tfbert.data.squad import read_squad, write_squad
from tfbert.data.validation_split import (TooSmallToSplit, split_conll, split_records,
                                          split_squad)

SENTENCES = [f"Sentence number {i} says \"something\", with a comma." for i in range(30)]


@pytest.mark.parametrize("fmt", ["tsv", "csv", "jsonl"])
def test_records_keep_format_header_and_every_row(tmp_path, fmt):
    path = tmp_path / f"train.{fmt}"
    if fmt == "jsonl":
        path.write_text("".join(json.dumps({"sentence": s, "label": str(i % 3)}) + "\n"
                                for i, s in enumerate(SENTENCES)), encoding="utf-8")
    else:
        import csv

        rows = [["sentence", "label"]] + [[s, str(i % 3)] for i, s in enumerate(SENTENCES)]
        with open(path, "w", encoding="utf-8", newline="") as f:
            if fmt == "tsv":  # bare quotes, as in GLUE's TSVs
                f.write("".join("\t".join(r) + "\n" for r in rows))
            else:
                csv.writer(f, lineterminator="\n").writerows(rows)
    train, validation = split_records(str(path), str(tmp_path / "split"), 0.1, seed=3,
                                      min_held_out=3)
    a = readers.read_labeled_text(train, "sentence", "label")
    b = readers.read_labeled_text(validation, "sentence", "label")
    assert len(b.text) == 3 and len(a.text) == 27
    assert sorted(list(a.text) + list(b.text)) == sorted(SENTENCES)
    assert dict(zip(a.text + b.text, a.label + b.label)) == {
        s: str(i % 3) for i, s in enumerate(SENTENCES)}
    again = split_records(str(path), str(tmp_path / "again"), 0.1, seed=3, min_held_out=3)
    assert open(again[1], encoding="utf-8").read() == open(validation, encoding="utf-8").read()
    other = split_records(str(path), str(tmp_path / "other"), 0.1, seed=4, min_held_out=3)
    assert open(other[1], encoding="utf-8").read() != open(validation, encoding="utf-8").read()


def test_conll_splits_whole_sentences(tmp_path):
    path = str(pathlib.Path(__file__).parent / "finetune" / "ner_train.conll")
    train, validation = split_conll(path, str(tmp_path), 0.2, seed=0, min_held_out=1)
    whole = readers.read_conll(path)
    a, b = readers.read_conll(train), readers.read_conll(validation)
    assert len(b.words) == round(0.2 * len(whole.words))
    assert sorted(map(tuple, a.words + b.words)) == sorted(map(tuple, whole.words))
    assert sorted(map(tuple, a.tags + b.tags)) == sorted(map(tuple, whole.tags))


def test_squad_never_splits_a_paragraph(tmp_path):
    paragraphs = [{"context": f"Paragraph {p} names the function os.path.join{p}.",
                   "qas": [{"id": f"{p}-{q}", "question": f"Question {q}?", "is_impossible": True,
                            "answers": []} for q in range(3)]} for p in range(20)]
    path = write_squad(str(tmp_path / "train.json"),
                       [{"title": "a", "paragraphs": paragraphs[:12]},
                        {"title": "b", "paragraphs": paragraphs[12:]}])
    train, validation = split_squad(path, str(tmp_path / "split"), 0.1, seed=0, min_held_out=2)
    a, b = read_squad(train).examples, read_squad(validation).examples
    assert len(b) == 6 and len(a) == 54 and read_squad(validation).version_2
    assert not {e.context for e in a} & {e.context for e in b}
    assert sorted(e.id for e in a + b) == sorted(f"{p}-{q}" for p in range(20) for q in range(3))


def test_too_small_to_split(tmp_path):
    # 10% of 160 is 16 sentences: too few to choose an epoch on (MIN_HELD_OUT = 50).
    path = str(pathlib.Path(__file__).parent / "finetune" / "sentiment_train.tsv")
    with pytest.raises(TooSmallToSplit, match="10% of 160 examples is 16, fewer than 50"):
        split_records(path, str(tmp_path / "split"), 0.1)
    assert not (tmp_path / "split").exists()
