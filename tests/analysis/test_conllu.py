"""tfbert.analysis.conllu: the hand-annotated sample reads as trees; bad files
are one line naming the file and line (tfbert/analysis/conllu.py)."""

import pytest

from tfbert.analysis.conllu import read_conllu, syntax_of, tree_depths, tree_distances

ROW = "{i}\t{w}\t{w}\tNOUN\tNN\t_\t{h}\tdep\t_\t_\n"


def write(tmp_path, text, name="x.conllu"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_the_samples_are_trees_with_every_column(analysis_data):
    for name, sentences, words in (("syntax_train", 22, 194), ("syntax_dev", 10, 91)):
        parsed = read_conllu(str(analysis_data / f"{name}.conllu"), "upos")
        assert (len(parsed), sum(len(s.words) for s in parsed)) == (sentences, words)
        for s in parsed:
            heads = syntax_of(s)
            assert sum(h == 0 for h in heads) == 1
            assert len(s.column("deprel")) == len(s.column("xpos")) == len(s.words)
    first = read_conllu(str(analysis_data / "syntax_train.conllu"))[0]
    assert first.words == ["The", "function", "returns", "a", "new", "list", "."]
    assert tree_depths(first.heads) == [2, 1, 0, 2, 2, 1, 1]
    distances = tree_distances(first.heads)
    assert distances[0][3] == 4 and distances[3][0] == 4 and distances[2][6] == 1


def test_multiword_tokens_and_empty_nodes_are_skipped(tmp_path):
    text = ("1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n" + ROW.format(i=1, w="do", h=0)
            + ROW.format(i=2, w="n't", h=1) + "2.1\tx\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    [s] = read_conllu(write(tmp_path, text))
    assert s.words == ["do", "n't"] and s.heads == [0, 1] and s.line == 2


@pytest.mark.parametrize("text, pattern", [
    (ROW.format(i=1, w="a", h=0) + "2\tb\tb\tNOUN\n", r"x\.conllu, line 2: expected 10 "),
    (ROW.format(i=1, w="a", h=0) + ROW.format(i=3, w="b", h=1), r"line 2: token ID '3' out"),
    (ROW.format(i=1, w="a", h=0) + ROW.format(i=2, w="b", h=7),
     r"x\.conllu, line 2: HEAD '7' points outside its sentence of 2 words"),
    (ROW.format(i=1, w="a", h=0) + ROW.format(i=2, w="b", h="x"),
     r"x\.conllu, line 2: HEAD 'x' is not a word number"),
])
def test_malformed_files_are_one_line(tmp_path, raises_one_line_from_tfbert, text, pattern):
    path = write(tmp_path, "# comment\n" + text)
    raises_one_line_from_tfbert("conllu", lambda: read_conllu(path), pattern.replace(
        "line 2", "line 3"))


def test_a_field_the_file_does_not_have(tmp_path, raises_one_line_from_tfbert):
    path = write(tmp_path, ROW.format(i=1, w="a", h=0))
    raises_one_line_from_tfbert("field", lambda: read_conllu(path, "feats"),
                                r"x\.conllu: the file has no 'feats' values")
    raises_one_line_from_tfbert("field", lambda: read_conllu(path, "colour"),
                                r"--field='colour' is not a CoNLL-U label column")


def test_trees_are_checked(tmp_path, raises_one_line_from_tfbert):
    two_roots = write(tmp_path, ROW.format(i=1, w="a", h=0) + ROW.format(i=2, w="b", h=0))
    loop = write(tmp_path, ROW.format(i=1, w="a", h=0) + ROW.format(i=2, w="b", h=3)
                 + ROW.format(i=3, w="c", h=2), "loop.conllu")
    raises_one_line_from_tfbert("roots", lambda: syntax_of(read_conllu(two_roots)[0]),
                                r"x\.conllu, line 1: the sentence has 2 roots")
    raises_one_line_from_tfbert("loop", lambda: syntax_of(read_conllu(loop)[0]),
                                r"loop\.conllu, line 2: the HEADs loop")
