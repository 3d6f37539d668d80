"""tfbert.text.vocab_building: a vocab.txt learned from files and globs."""

import pytest

from tfbert.text import load_vocab
from tfbert.text.vocab_building import BuildVocabConfig, build_vocab, read_lines, resolve

TEXTS = ["The quick brown fox jumps over the lazy dog.",
         "Foxes are quick; dogs are lazy. The fox jumped!"]


def test_build_vocab_writes_a_vocab_file(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("\n".join(TEXTS * 20) + "\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("Sleeping dogs lie.\n" * 20, encoding="utf-8")
    out = tmp_path / "vocab" / "vocab.txt"
    tokens = build_vocab(BuildVocabConfig(input_files=f"{tmp_path}/*.txt", output_file=str(out),
                                          vocab_size=200))
    assert capsys.readouterr().err == f"Wrote {len(tokens)} tokens to {out}\n"
    vocab = load_vocab(str(out))
    assert vocab.tokens == tokens and vocab.cls_id == 2
    assert {"the", "sleeping"} <= set(tokens) and len(tokens) <= 200  # both files read


def test_files_and_lines(tmp_path):
    for name, text in [("b.txt", "b1\n\n  b2  \n"), ("a.txt", "a1\n")]:
        (tmp_path / name).write_text(text, encoding="utf-8")
    paths = resolve(f" {tmp_path}/*.txt , {tmp_path}/a.txt,")
    assert [p.rsplit("/", 1)[1] for p in paths] == ["a.txt", "b.txt", "a.txt"]
    assert list(read_lines(paths)) == ["a1", "b1", "b2", "a1"]
    assert list(read_lines(paths, max_lines=2)) == ["a1", "b1"]


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="input_files: no file matches"):
        build_vocab(BuildVocabConfig(input_files=str(tmp_path / "missing*.txt"),
                                     output_file=str(tmp_path / "v.txt")))
    with pytest.raises(ValueError, match="input_files and output_file are required"):
        build_vocab(BuildVocabConfig(input_files=str(tmp_path / "a.txt")))
