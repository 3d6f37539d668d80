"""A byte-level BPE tokenizer's files (RoBERTa's): `vocab.json` (token -> id)
and `merges.txt` (one merge a line, "a b", after an optional `#version`
line), read and checked so a converted checkpoint carries them whole; or the
same taken from the `model` of a `tokenizer.json` of type BPE (transformers 5
saves only that).

Checks, one line each naming the file (and the line): `vocab.json` must be a
JSON object of str -> int whose ids are 0 .. n-1, each once; every line of
`merges.txt` must be two tokens separated by one space.

Example:
>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> write_bpe_files(d, ["<s>", "a", "b", "ab"], [("a", "b")])
>>> read_bpe_vocab(os.path.join(d, "vocab.json"))
['<s>', 'a', 'b', 'ab']
>>> read_merges(os.path.join(d, "merges.txt"))
[('a', 'b')]
"""

import json
import os

from tfbert import atomic, config_loader
from tfbert.convert import common

MERGES_HEADER = "#version: 0.2"
# RoBERTa's special tokens, as roberta-base's tokenizer.json (and transformers
# 4's RobertaTokenizerFast) has them: only <mask> takes the space before it.
ROBERTA_SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
SPECIAL_KEYS = ("content", "id", "lstrip", "rstrip", "single_word")  # of an added token


def read_bpe_vocab(path):
    """The tokens of `vocab.json` in id order (see module doc)."""
    return tokens_in_id_order(common.read_json(path, "BPE vocabulary (vocab.json)"), path)


def tokens_in_id_order(vocab, source):
    """`{token: id}` -> the tokens in id order; ids must be 0 .. n-1, each once."""
    if not isinstance(vocab, dict):
        raise ValueError(f"{source}: expected a JSON object of token -> id, got "
                         f"{type(vocab).__name__}.")
    if not vocab:
        raise ValueError(f"{source}: no tokens (an empty JSON object).")
    tokens = [None] * len(vocab)
    for token, token_id in vocab.items():
        if isinstance(token_id, bool) or not isinstance(token_id, int):
            raise ValueError(f"{source}: token {token!r} maps to {token_id!r}, not an int id.")
        if not 0 <= token_id < len(vocab):
            raise ValueError(f"{source}: token {token!r} has id {token_id}; ids must be 0 .. "
                             f"{len(vocab) - 1} (one per token).")
        if tokens[token_id] is not None:
            raise ValueError(f"{source}: tokens {tokens[token_id]!r} and {token!r} share id "
                             f"{token_id}.")
        tokens[token_id] = token
    return tokens


def read_merges(path):
    """The merges of `merges.txt` as `(a, b)` pairs (see module doc)."""
    common.require_file(path, "BPE merges file (merges.txt)")
    merges = []
    for number, line in config_loader.text_lines(path):
        line = line.rstrip("\r\n")
        if (number == 1 and line.startswith("#version")) or not line:
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"{path}:{number}: a merge is two tokens separated by one "
                             f"space, got {line!r:.60}.")
        merges.append(tuple(parts))
    if not merges:  # every text would stay single bytes: a truncated file, not a tokenizer
        raise ValueError(f"{path}: no merges (an empty or truncated file).")
    return merges


def bpe_from_tokenizer_json(path):
    """`(tokens in id order, merges)` of a `tokenizer.json` whose model is BPE."""
    model = common.read_json_object(path, "tokenizer.json").get("model") or {}
    model_type = model.get("type") if isinstance(model, dict) else None
    if model_type != "BPE":
        raise ValueError(f"{path}: model type {model_type!r}, not BPE.")
    tokens = tokens_in_id_order(model.get("vocab"), f"{path} model.vocab")
    merges = []
    for number, merge in enumerate(model.get("merges") or [], 1):
        parts = merge.split(" ") if isinstance(merge, str) else merge
        if not isinstance(parts, list) or len(parts) != 2 or not all(
                isinstance(p, str) and p for p in parts):
            raise ValueError(f"{path}: model.merges item {number} is not two tokens: "
                             f"{merge!r:.60}.")
        merges.append(tuple(parts))
    return tokens, merges


def added_tokens(path):
    """`tokenizer.json`'s `added_tokens` (the tokens transformers cuts out of
    the text before BPE: `<s>`, `<mask>`, ...), each a dict with `content`,
    `id`, `lstrip`, `rstrip`."""
    tokens = common.read_json_object(path, "tokenizer.json").get("added_tokens") or []
    if not isinstance(tokens, list) or not all(isinstance(t, dict) for t in tokens):
        raise ValueError(f"{path}: added_tokens is not a list of objects.")
    return tokens


def roberta_special_tokens(tokens):
    """RoBERTa's special tokens that are in `tokens`, as added-token dicts."""
    return [{"content": t, "lstrip": t == "<mask>", "rstrip": False}
            for t in ROBERTA_SPECIAL_TOKENS if t in tokens]


def read_special_tokens(path):
    """A checkpoint's `special_tokens.json`: a list of added-token objects."""
    tokens = common.read_json(path, "special tokens (special_tokens.json)")
    if not isinstance(tokens, list) or not all(isinstance(t, dict) for t in tokens):
        raise ValueError(f"{path}: expected a JSON list of objects (content, lstrip, rstrip).")
    return tokens


def write_special_tokens(path, special_tokens):
    """Writes `special_tokens.json` (atomically): the added tokens' `SPECIAL_KEYS`."""
    with atomic.atomic_file(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump([{k: t[k] for k in SPECIAL_KEYS if k in t} for t in special_tokens], f,
                      ensure_ascii=False)


def write_bpe_files(out_dir, tokens, merges):
    """Writes `vocab.json` and `merges.txt` (each atomically) into `out_dir`."""
    with atomic.atomic_file(os.path.join(out_dir, "vocab.json")) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({t: i for i, t in enumerate(tokens)}, f, ensure_ascii=False)
    with atomic.atomic_file(os.path.join(out_dir, "merges.txt")) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("\n".join([MERGES_HEADER] + [f"{a} {b}" for a, b in merges]) + "\n")


def bpe_files(src_dir, tmp_dir):
    """`(tokens, {"vocab.json": path, "merges.txt": path[, "special_tokens.json": path]})`
    of a byte-level BPE directory: its own files, checked, or ones written to
    `tmp_dir` from its `tokenizer.json`; that file's added tokens (when there)
    go to `special_tokens.json`."""
    vocab_path = os.path.join(src_dir, "vocab.json")
    merges_path = os.path.join(src_dir, "merges.txt")
    json_path = os.path.join(src_dir, "tokenizer.json")
    if os.path.isfile(vocab_path) or not os.path.isfile(json_path):
        common.require_file(vocab_path, "BPE vocabulary (vocab.json, or a tokenizer.json)")
        tokens = read_bpe_vocab(vocab_path)
        read_merges(merges_path)
        files = {"vocab.json": vocab_path, "merges.txt": merges_path}
    else:
        tokens, merges = bpe_from_tokenizer_json(json_path)
        write_bpe_files(tmp_dir, tokens, merges)
        files = {name: os.path.join(tmp_dir, name) for name in ("vocab.json", "merges.txt")}
    if os.path.isfile(json_path):
        # ByteLevelBPETokenizer checks them against the tokens when it loads them.
        files["special_tokens.json"] = os.path.join(tmp_dir, "special_tokens.json")
        write_special_tokens(files["special_tokens.json"], added_tokens(json_path))
    return tokens, files
