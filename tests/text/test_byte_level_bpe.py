"""ByteLevelBPETokenizer, and BertPreprocessor over it, against transformers'
fast RoBERTa tokenizer built from the same files (a byte-level BPE trained by
HF `tokenizers` on standard-library docstrings), the export op rule, and bad
files."""

import ast
import inspect
import json
import os
import re

import pytest
import tensorflow as tf

from tfbert import BertPreprocessor
from tfbert.export import op_check
from tfbert.text.byte_level_bpe import ByteLevelBPETokenizer, bytes_to_unicode


def multilingual_lines():
    """The Unicode stress lines of test_tokenizer_parity.py (its MULTILINGUAL)."""
    with open(os.path.join(os.path.dirname(__file__), "test_tokenizer_parity.py"),
              encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return next(ast.literal_eval(node.value) for node in tree.body
                if isinstance(node, ast.Assign) and node.targets[0].id == "MULTILINGUAL")


def docstring_sentences(limit=300):
    import collections
    import shutil
    import tempfile

    sentences = []
    for module in (os, json, inspect, tempfile, collections, shutil):
        for _, obj in inspect.getmembers(module):
            for sentence in re.split(r"(?<=\.)\s+", inspect.getdoc(obj) or ""):
                if sentence and sentence not in sentences:
                    sentences.append(sentence)
    return sentences[:limit]


@pytest.fixture(scope="module")
def bpe_dir(tmp_path_factory):
    tokenizers = pytest.importorskip("tokenizers")
    out = tmp_path_factory.mktemp("byte_level_bpe")
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(docstring_sentences(2000), vocab_size=1000, min_frequency=2,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(out))
    return out


@pytest.fixture(scope="module")
def reference(bpe_dir):
    transformers = pytest.importorskip("transformers")
    return transformers.RobertaTokenizerFast(vocab=str(bpe_dir / "vocab.json"),
                                             merges=str(bpe_dir / "merges.txt"))


@pytest.fixture(scope="module")
def tokenizer(bpe_dir):
    return ByteLevelBPETokenizer.from_files(bpe_dir / "vocab.json", bpe_dir / "merges.txt")


def test_ids_and_offsets_match_transformers(tokenizer, reference):
    """The stress lines and docstrings in one batch, which NUL sends the careful
    way (escaped), and the lines without NUL, \x01 or a special token, which
    take the plain way."""
    # Runs of one repeated pair ("====") merge several occurrences a round.
    runs = ["=" * 70, " " + "-" * 33 + "+" + "-" * 20 + "|", "a" * 17 + " " * 9 + "x", "ee" * 9]
    lines = multilingual_lines() + docstring_sentences() + runs
    plain = [line for line in lines if not re.search(r"[\x00\x01]|<mask>|<s>|</s>|<pad>|<unk>",
                                                       line)]
    assert len(lines) - len(plain) == 2
    for batch in (lines, plain):
        ids, differ = differing_lines(tokenizer, reference, batch)
        assert tokenizer(tf.constant(batch)).to_list() == ids
        assert differ == []


def differing_lines(ours, theirs, lines):
    """`(ids, lines)`: our ids of `lines`, and the lines whose ids or offsets
    differ from `theirs` (a transformers tokenizer)."""
    ids, starts, ends = [x.to_list() for x in ours.tokenize_with_offsets(tf.constant(lines))]
    differ = []
    for k, line in enumerate(lines):
        want = theirs(line, add_special_tokens=False, return_offsets_mapping=True)
        if (ids[k] != want["input_ids"] or list(zip(starts[k], ends[k]))
                != [tuple(o) for o in want["offset_mapping"]]):
            differ.append(line)
    return ids, differ


@pytest.fixture(scope="module")
def multibyte_dir(tmp_path_factory):
    """A byte-level BPE trained on the Unicode stress lines too: its tokens
    hold multi-byte words (" größer", " été")."""
    tokenizers = pytest.importorskip("tokenizers")
    out = tmp_path_factory.mktemp("multibyte_bpe")
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(multilingual_lines() * 4 + docstring_sentences(100), vocab_size=1500,
                            min_frequency=2,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(out))
    return out


def test_word_cache_equals_the_merge_loop(multibyte_dir):
    """Every word the tokenizer looks up whole (a token the merges build back
    from its bytes) gives the same token through the merge loop; text made of
    such words, multi-byte ones included, gets transformers' ids and offsets."""
    transformers = pytest.importorskip("transformers")
    files = [str(multibyte_dir / name) for name in ("vocab.json", "merges.txt")]
    tokenizer = ByteLevelBPETokenizer.from_files(*files)
    reference = transformers.RobertaTokenizerFast(*files)
    words, word_ids = tokenizer.word_table.export()
    special = [tokenizer.tokens.index(t["content"]) for t in tokenizer.special_tokens]
    cached = ~tf.reduce_any(word_ids[:, None] == [-1] + special, axis=1)
    words, word_ids = words[cached], word_ids[cached]
    word_bytes = tf.strings.bytes_split(words)
    byte_ids = tokenizer.byte_id_table.lookup(word_bytes.flat_values)
    merged, merged_word = tokenizer.merge(byte_ids, tf.cast(word_bytes.value_rowids(), tf.int32),
                                          tf.size(words))
    assert merged_word.numpy().tolist() == list(range(len(words)))
    assert merged.numpy().tolist() == word_ids.numpy().tolist()
    # Multi-byte words, one a line (a line break is a piece of its own), are
    # looked up whole.
    multibyte = [w.decode() for w in words.numpy() if not w.isascii() and is_utf8(w)]
    lines = ["\n".join(multibyte[k::5]) for k in range(5)] + multilingual_lines()
    pieces = tokenizer.pre_tokenize(tf.constant(lines[:5])).flat_values
    looked_up = tf.boolean_mask(pieces, tokenizer.word_table.lookup(pieces) >= 0).numpy()
    assert len(set(looked_up) & set(w.encode() for w in multibyte)) > 150
    for batch in (lines[:5], lines):  # the plain way, and the careful one (NUL)
        ids, starts, ends = [x.to_list() for x in
                             tokenizer.tokenize_with_offsets(tf.constant(batch))]
        for k, line in enumerate(batch):
            want = reference(line, add_special_tokens=False, return_offsets_mapping=True)
            assert (ids[k], list(zip(starts[k], ends[k]))) == (
                want["input_ids"], [tuple(o) for o in want["offset_mapping"]]), line


def is_utf8(data):
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_merges_whose_result_an_earlier_merge_takes(tmp_path):
    """A merges file where "ab c" ranks before "a b" (so not every merge's result
    is merged only later): one merge a round, transformers' ids still."""
    transformers = pytest.importorskip("transformers")
    from tfbert.convert import bpe_files

    tokens = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "a", "b", "c", "Ġ", "ab", "abc", "bc",
              "Ġab", "Ġabc"]
    merges = [("ab", "c"), ("a", "b"), ("b", "c"), ("Ġ", "abc"), ("Ġ", "ab")]
    bpe_files.write_bpe_files(str(tmp_path), tokens, merges)
    tokenizer = ByteLevelBPETokenizer(tokens, merges)
    assert not tokenizer.parallel
    reference = transformers.RobertaTokenizerFast(str(tmp_path / "vocab.json"),
                                                  str(tmp_path / "merges.txt"))
    lines = ["abcabc ab cab", "abababc bcab", "aaabbbccc abc", "cba"]
    got = tokenizer(tf.constant(lines)).to_list()
    assert got == [reference(line, add_special_tokens=False)["input_ids"] for line in lines]


def with_special_tokens(sentences):
    """Real sentences with <mask>, <s>, </s> written in at the start, middle and
    end, with and without spaces (and with tabs, newlines, double spaces) around."""
    out = []
    for k, s in enumerate(sentences):
        words = s.split(" ")
        middle = len(words) // 2
        glue = ["<mask> ", " <mask>", "<mask>", "  <mask>\t", "\n<mask>"][k % 5]
        out += [" ".join(words[:middle]) + glue + " ".join(words[middle:]),
                "<s>" + s + "</s>", "<mask> " + s + " <mask>", s + "</s></s>" + s + " </s>",
                "<mask>" + s.replace(" ", " <mask> ", 1) + "<mask>.", " <s> " + s + "<pad><unk>"]
    return out + ["<mask>", " <mask>", "<mask><mask>", "<mas k> <s/>", "x<mask>y", "\x00 <mask>"]


def test_special_tokens_match_transformers(tokenizer, reference, bpe_dir, tmp_path):
    """Special tokens in the text, as RobertaTokenizerFast: the defaults as
    roberta-base's (<mask> takes the space before it), and those of a
    tokenizer.json: transformers 5's (no lstrip), and one with rstrip on <s>,
    </s> and <mask>: ids and offsets."""
    transformers = pytest.importorskip("transformers")

    def added(content, lstrip=False, rstrip=False):
        return transformers.AddedToken(content, lstrip=lstrip, rstrip=rstrip, normalized=False,
                                       special=True)

    def roberta(**tokens):
        return transformers.RobertaTokenizerFast(vocab=str(bpe_dir / "vocab.json"),
                                                 merges=str(bpe_dir / "merges.txt"), **tokens)

    def from_json(reference, name):
        reference.save_pretrained(str(tmp_path / name))
        return ByteLevelBPETokenizer.from_files(bpe_dir / "vocab.json", bpe_dir / "merges.txt",
                                                tokenizer_json=tmp_path / name / "tokenizer.json")

    lstrip = roberta(mask_token=added("<mask>", lstrip=True))
    rstrip = roberta(mask_token=added("<mask>", lstrip=True, rstrip=True),
                     bos_token=added("<s>", rstrip=True), cls_token=added("<s>", rstrip=True),
                     eos_token=added("</s>", rstrip=True), sep_token=added("</s>", rstrip=True))
    pairs = [(tokenizer, lstrip), (from_json(reference, "plain"), reference),
             (from_json(rstrip, "rstrip"), rstrip)]
    assert [t["lstrip"] for t in tokenizer.special_tokens] == [False] * 4 + [True]
    assert not any(t["lstrip"] for t in pairs[1][0].special_tokens)
    assert [t["rstrip"] for t in pairs[2][0].special_tokens] == [True, False, True, False, True]
    lines = with_special_tokens(docstring_sentences(40))
    for ours, theirs in pairs:
        ids, differ = differing_lines(ours, theirs, lines)
        assert differ == []
        assert sum(i.count(4) for i in ids) == sum(t.count("<mask>") for t in lines) > 200


def test_saved_model_passes_op_rule_and_reloads(tokenizer, tmp_path):
    module = tf.Module()
    module.tokenizer = tokenizer
    module.tokenize = tf.function(lambda texts: tokenizer(texts).flat_values,
                                  input_signature=[tf.TensorSpec([None], tf.string)])
    module.offsets = tf.function(lambda texts: tokenizer.tokenize_with_offsets(texts)[1].values,
                                 input_signature=[tf.TensorSpec([None], tf.string)])
    path = str(tmp_path / "bpe")
    tf.saved_model.save(module, path)
    op_check.check_op_rule(path)
    texts = ["Café déjà vu:   naïve résumé, 1887!", "", "  leading\n\nspace ",
             "nul\x00 and\x01\x00 escape", "<s>The <mask> returns  <mask></s>"]
    loaded = tf.saved_model.load(path)
    for batch in (tf.constant(texts), tf.constant(texts[:3])):  # careful and plain ways
        want = tokenizer(batch).flat_values.numpy().tolist()
        assert loaded.tokenize(batch).numpy().tolist() == want
        want = tokenizer.tokenize_with_offsets(batch)[1].values.numpy().tolist()
        assert loaded.offsets(batch).numpy().tolist() == want


def test_malformed_merges_line_names_file_and_line(bpe_dir, tmp_path):
    merges = tmp_path / "merges.txt"
    merges.write_text("#version: 0.2\nĠ t\nthe\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"merges.txt:3: a merge is two tokens"):
        ByteLevelBPETokenizer.from_files(bpe_dir / "vocab.json", merges)


def test_merge_outside_vocabulary():
    with pytest.raises(ValueError, match=r"merge 2 \(ab c\): 'abc' is not in the vocabulary"):
        ByteLevelBPETokenizer(["a", "b", "c", "ab"], [("a", "b"), ("ab", "c")])


@pytest.fixture(scope="module")
def preprocessor(bpe_dir):
    return BertPreprocessor(vocab_file=bpe_dir / "vocab.json", merges_file=bpe_dir / "merges.txt",
                            tokenizer_kind="byte_level_bpe", seq_length=24)


def test_preprocessor_matches_transformers(preprocessor, reference):
    """Single texts and pairs, packed as RobertaTokenizerFast(texts[, texts_b],
    padding="max_length", truncation=True, max_length=L): the same ids and mask."""
    sentences = docstring_sentences(80) + multilingual_lines()
    first, second = sentences[::2], sentences[1::2][:len(sentences[::2])]
    first, second = first + ["Same length.", "ok"], second + ["Same length.", "ok"]  # ties
    for args in ([first], [first, second]):
        want = reference(*args, padding="max_length", truncation=True, max_length=24)
        got = preprocessor(args if len(args) == 2 else args[0])
        assert got["input_word_ids"].numpy().tolist() == want["input_ids"]
        assert got["input_mask"].numpy().tolist() == want["attention_mask"]
        assert not got["input_type_ids"].numpy().any()
        for length in (9, 33):  # odd budgets: the tie rule of longest_first
            want = reference(*args, padding="max_length", truncation=True, max_length=length)
            got = preprocessor.bert_pack_inputs([preprocessor.tokenize(t) for t in args],
                                                seq_length=length)
            assert got["input_word_ids"].numpy().tolist() == want["input_ids"]
            assert got["input_mask"].numpy().tolist() == want["attention_mask"]


def test_preprocessor_offsets_config_and_specials(preprocessor, reference):
    """Offsets are bytes (tokenize_with_offsets, as WordPiece's): each token's
    span holds transformers' token's bytes, spaces trimmed off as its
    trim_offsets does; get_config round-trips; RoBERTa's special ids."""
    byte_of = {char: bytes([b]) for b, char in bytes_to_unicode().items()}
    lines = multilingual_lines()
    ids, starts, limits = [x.merge_dims(1, 2).to_list()
                           for x in preprocessor.tokenize_with_offsets(tf.constant(lines))]
    for k, line in enumerate(lines):
        want = reference(line, add_special_tokens=False)["input_ids"]
        assert ids[k] == want
        token_bytes = [b"".join(byte_of[c] for c in t) for t in
                       reference.convert_ids_to_tokens(want)]
        text = line.encode("utf-8")
        assert [text[a:b] for a, b in zip(starts[k], limits[k])] == [
            t.strip(b" ") for t in token_bytes]
    clone = BertPreprocessor.from_config(preprocessor.get_config())
    pairs = [tf.constant(lines[:6]), tf.constant(lines[6:12])]
    for key, value in preprocessor(pairs).items():
        assert clone(pairs)[key].numpy().tolist() == value.numpy().tolist()
    special = {k: int(v) for k, v in preprocessor.get_special_tokens_dict().items()}
    assert special == {"vocab_size": len(reference), "start_of_sequence_id": 0,
                       "end_of_segment_id": 2, "padding_id": 1, "mask_id": 4}
    assert preprocessor.detokenize(preprocessor(["Open the file."])["input_word_ids"]
                                   ).numpy().tolist() == [b"Open the file."]
    pieces = preprocessor.wordpieces(["Open the file."]).merge_dims(1, 2).to_list()[0]
    assert [p.decode() for p in pieces] == reference.tokenize("Open the file.")


def test_pair_windows_fit_robertas_four_special_tokens(preprocessor):
    """pack_windows after a prefix (a pair's first text): every window's pieces
    fit beside <s> prefix </s></s> ... </s>, none cut by the packer."""
    from tfbert.text.windows import pack_windows

    texts = tf.constant(docstring_sentences(12))
    pieces = preprocessor.tokenize(texts).merge_dims(1, 2)
    prefix = pieces[:, :5]
    spans, inputs = pack_windows(preprocessor, pieces, 24, prefix=prefix, doc_stride=6)
    kept = tf.gather(prefix.row_lengths(), spans["row"]) + spans["window_length"] + 4
    assert inputs["input_mask"].numpy().sum(1).tolist() == kept.numpy().tolist()


def test_bad_tokens_and_merges_are_one_line(raises_one_line_from_tfbert):
    """Before TensorFlow builds the tables: an empty vocabulary failed there
    ("Could not find device for node HashTableV2"), and a string was read as
    one token per character."""
    check = raises_one_line_from_tfbert
    check("no tokens", lambda: ByteLevelBPETokenizer([], []),
          r"^tokens must be a non-empty list of strings \(in id order\), got \[\]\.$")
    check("a string", lambda: ByteLevelBPETokenizer("abc", []),
          r"^tokens must be a non-empty list of strings \(in id order\), got 'abc'\.$")
    check("an id", lambda: ByteLevelBPETokenizer(["a", 7], []), r"^tokens\[1\] is 7, not a string\.$")
    check("one-token merge", lambda: ByteLevelBPETokenizer(["a", "b", "ab"], [("a",)]),
          r"^merge 1 is \('a',\): a merge is two non-empty strings \(a, b\)\.$")
    def special(*entries):
        return lambda: ByteLevelBPETokenizer(["a", "<s>"], [], special_tokens=list(entries))

    check("special not a token", special("<mask>"),
          r"^special token '<mask>' \(id None\) is not that token of the vocabulary\.$")
    check("special id", special({"content": "<s>", "id": 0}),
          r"^special token '<s>' \(id 0\) is not that token of the vocabulary\.$")
    check("single_word", special({"content": "<s>", "single_word": True}),
          r"^special token '<s>': single_word, white space at its ends and NUL are not "
          r"supported\.$")
