"""A byte-level BPE tokenizer's files (`tfbert.convert.bpe_files`) as a hostile
user hands them over: each bad `vocab.json`, `merges.txt` or `tokenizer.json`
is one line naming the file (and the line), never json's, Python's or
TensorFlow's own error, and never an empty tokenizer that answers silently.
(The RoBERTa converter's cases on real files: tests/convert/test_roberta.py.)"""

import pytest

from tfbert.convert import bpe_files


@pytest.fixture()
def files(tmp_path):
    """`write(name, content)`: the path of a file holding `content` (str or bytes)."""

    def write(name, content):
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return str(path)

    return write


def test_bad_vocab_json_is_one_line(files, tmp_path, raises_one_line_from_tfbert):
    read = bpe_files.read_bpe_vocab
    (tmp_path / "folder").mkdir()
    for name, content, pattern in [
        ("missing.json", None, r"^BPE vocabulary \(vocab\.json\) not found: \S*missing\.json$"),
        ("folder", None, r"^BPE vocabulary \(vocab\.json\): \S*folder is a directory, not a "
                         r"file\.$"),
        ("empty.json", "", r"empty\.json: not valid JSON: Expecting value"),
        ("garbled.json", b'{"\xff": 0}', r"garbled\.json: not UTF-8 text \(invalid start byte"),
        ("list.json", '["a", "b"]', r"list\.json: expected a JSON object of token -> id, got "
                                    r"list\.$"),
        ("nothing.json", "{}", r"nothing\.json: no tokens \(an empty JSON object\)\.$"),
    ]:
        path = str(tmp_path / name) if content is None else files(name, content)
        raises_one_line_from_tfbert(name, lambda: read(path), pattern)


def test_bad_merges_txt_is_one_line(files, tmp_path, raises_one_line_from_tfbert):
    read = bpe_files.read_merges
    (tmp_path / "folder").mkdir()
    for name, content, pattern in [
        ("missing.txt", None, r"^BPE merges file \(merges\.txt\) not found: \S*missing\.txt$"),
        ("folder", None, r"^BPE merges file \(merges\.txt\): \S*folder is a directory"),
        # No merges: every text would be cut into single bytes, silently.
        ("empty.txt", "", r"empty\.txt: no merges \(an empty or truncated file\)\.$"),
        ("header.txt", "#version: 0.2\n", r"header\.txt: no merges"),
        ("one.txt", "#version: 0.2\nĠ t\nthe\n",
         r"one\.txt:3: a merge is two tokens separated by one space, got 'the'\.$"),
        ("garbled.txt", b"#version: 0.2\n\xc4\xa0 t\nt \xffh\n",
         r"garbled\.txt, line 3: not UTF-8 text \(invalid start byte at byte 2 of the line\)\.$"),
    ]:
        path = str(tmp_path / name) if content is None else files(name, content)
        raises_one_line_from_tfbert(name, lambda: read(path), pattern)
    assert read(files("good.txt", "#version: 0.2\nĠ t\nt h\n")) == [("Ġ", "t"), ("t", "h")]


def test_bad_tokenizer_json_is_one_line(files, raises_one_line_from_tfbert):
    read = bpe_files.bpe_from_tokenizer_json
    for name, content, pattern in [
        ("list.json", "[1]", r"list\.json: expected a JSON object, got list\.$"),
        ("wordpiece.json", '{"model": {"type": "WordPiece"}}',
         r"wordpiece\.json: model type 'WordPiece', not BPE\.$"),
        ("one_token.json", '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a"]}}',
         r"one_token\.json: model\.merges item 1 is not two tokens: 'a'\.$"),
    ]:
        path = files(name, content)
        raises_one_line_from_tfbert(name, lambda: read(path), pattern)
    bad = files("added.json", '{"added_tokens": ["<s>"]}')
    raises_one_line_from_tfbert("added_tokens", lambda: bpe_files.added_tokens(bad),
                                r"added\.json: added_tokens is not a list of objects\.$")
    bad = files("special_tokens.json", '{"content": "<s>"}')
    raises_one_line_from_tfbert("special_tokens.json", lambda: bpe_files.read_special_tokens(bad),
                                r"special_tokens\.json: expected a JSON list of objects")


def test_merges_without_a_version_line_keep_their_first_merge(tmp_path):
    """A merges.txt without `#version` (some hand-made files): its first line is
    a merge, as tokenizers' `BPE.from_file` (transformers 5's RoBERTa reader)
    reads it, not a header to skip."""
    models = pytest.importorskip("tokenizers.models")
    import json

    vocab = {"<unk>": 0, "a": 1, "b": 2, "c": 3, "ab": 4, "abc": 5}
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    (tmp_path / "merges.txt").write_text("a b\nab c\n")
    assert bpe_files.read_merges(tmp_path / "merges.txt") == [("a", "b"), ("ab", "c")]
    theirs = models.BPE.from_file(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))
    assert [t.value for t in theirs.tokenize("abc")] == ["abc"]  # both merges applied
