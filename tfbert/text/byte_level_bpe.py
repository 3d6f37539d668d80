"""Byte-level BPE (RoBERTa / GPT-2) tokenization in TensorFlow graph ops:
strings `[batch]` -> int32 ragged ids `[batch, (tokens)]`, the ids of
transformers' fast RoBERTa tokenizer with `add_special_tokens=False`
(`tokenize_with_offsets` adds its character offsets).

Hand-written because keras-hub's BytePairTokenizer splits with
RegexSplitWithOffsets (a tf-text op, outside tfbert's export op rule) and
misses GPT-2's `\\s+(?!\\S)`; this uses core ops only (regex_replace, split,
StaticHashTable, while_loop), so a SavedModel holding it passes op_check.

Steps: GPT-2 pre-tokenization (its regex rewritten without lookahead: two
regex_replace calls mark piece starts, one split cuts there), the bytes of
each piece mapped to GPT-2's byte-to-unicode characters, then the merges
applied by rank to every piece at once (each round merges, in every piece,
the leftmost occurrence of its lowest-ranked adjacent pair, which is the
order of the Rust BPE's (rank, position) queue).

Special tokens written in the text (`<mask>`, `<s>`, ...: tokenizer.json's
`added_tokens`, or RoBERTa's five) are cut out first, as transformers'
added-token split: one regex_replace marks them, and each becomes one piece
mapped straight to its id. A token with `lstrip` (`rstrip`) takes the white
space before (after) it, which its offsets leave out.

NUL (U+0000) marks the piece starts; the text's own NULs are escaped
around the split.

Example:
>>> tok = ByteLevelBPETokenizer(["a", "b", "Ġ", "ab", "Ġab"], [("a", "b"), ("Ġ", "ab")])
>>> tok(tf.constant(["ab ab", "ba"])).to_list()
[[3, 4], [1, 0]]
"""

import tensorflow as tf

from tfbert.convert import bpe_files

# Unicode White_Space as an RE2 class (RE2's \s is ASCII only).
WHITE_SPACE = (r"\t\n\x{0b}\f\r \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}"
               r"\x{202f}\x{205f}\x{3000}")
MARK = "\x00"
# GPT-2's \s+(?!\S): a white-space run before a non-space loses its last char
# to the next piece; marked here, since RE2 has no lookahead.
LAST_SPACE = rf"([{WHITE_SPACE}]+)([{WHITE_SPACE}])([^{WHITE_SPACE}{MARK}])"
# Rewritten with \0, not a group: RE2 then finds each match with its DFA alone
# (a group costs a submatch search per piece, ~8x the time of this regex).
PIECE = (rf"'s|'t|'re|'ve|'m|'ll|'d| ?\p{{L}}+| ?\p{{N}}+|"
         rf" ?[^{WHITE_SPACE}\p{{L}}\p{{N}}{MARK}]+|[{WHITE_SPACE}]+")
NO_RANK = 2**31 - 1
# White space at either end of a special piece: lstrip / rstrip took it. Byte-
# level symbols never hold raw white space, so this strips special pieces only.
STRIP_SPACE = rf"^[{WHITE_SPACE}]+|[{WHITE_SPACE}]+$"


def bytes_to_unicode():
    """GPT-2's map byte -> printable character (as in its encoder.py)."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    chars = {}
    extra = 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def check_merges(tokens, merges):
    """`tokens` a non-empty list of strings; every merge two strings whose
    pieces and result are tokens (one line each)."""
    if isinstance(tokens, str) or not isinstance(tokens, (list, tuple)) or not tokens:
        raise ValueError(f"tokens must be a non-empty list of strings (in id order), got "
                         f"{tokens!r:.40}.")
    for token_id, token in enumerate(tokens):
        if not isinstance(token, str):
            raise ValueError(f"tokens[{token_id}] is {token!r:.40}, not a string.")
    known = set(tokens)
    for rank, merge in enumerate(merges):
        if isinstance(merge, str) or len(merge) != 2 or not all(
                isinstance(piece, str) and piece for piece in merge):
            raise ValueError(f"merge {rank + 1} is {merge!r:.40}: a merge is two non-empty "
                             "strings (a, b).")
        a, b = merge
        for piece in (a, b, a + b):
            if piece not in known:
                raise ValueError(f"merge {rank + 1} ({a} {b}): {piece!r} is not in the "
                                 "vocabulary.")


def special_token_list(tokens, special_tokens):
    """`special_tokens` (None: RoBERTa's that are in `tokens`; or strings, or
    tokenizer.json `added_tokens` dicts) -> `[{"content", "lstrip", "rstrip"}]`,
    checked against `tokens` (one line each)."""
    if special_tokens is None:
        return bpe_files.roberta_special_tokens(tokens)
    if isinstance(special_tokens, str) or not isinstance(special_tokens, (list, tuple)):
        raise ValueError(f"special_tokens must be a list of strings or added-token dicts, got "
                         f"{special_tokens!r:.40}.")
    ids = {token: i for i, token in enumerate(tokens)}
    out = []
    for entry in special_tokens:
        entry = {"content": entry} if isinstance(entry, str) else entry
        content = entry.get("content") if isinstance(entry, dict) else None
        if not isinstance(content, str) or not content:
            raise ValueError(f"special token {entry!r:.60} has no content string.")
        if content not in ids or entry.get("id", ids[content]) != ids[content]:
            raise ValueError(f"special token {content!r} (id {entry.get('id')}) is not that "
                             "token of the vocabulary.")
        if entry.get("single_word") or content != content.strip() or "\x00" in content:
            raise ValueError(f"special token {content!r}: single_word, white space at its ends "
                             "and NUL are not supported.")
        out.append({"content": content, "lstrip": bool(entry.get("lstrip")),
                    "rstrip": bool(entry.get("rstrip"))})
    return out


def special_pattern(special_tokens):
    """RE2 alternation of the special tokens, longest first (transformers
    matches leftmost-longest), with the white space lstrip/rstrip take."""
    space = f"[{WHITE_SPACE}]*"
    alternatives = []
    for token in sorted(special_tokens, key=lambda t: -len(t["content"])):
        literal = "".join(c if c.isalnum() and c.isascii() else f"\\x{{{ord(c):x}}}"
                          for c in token["content"])
        alternatives.append((space if token["lstrip"] else "") + literal
                            + (space if token["rstrip"] else ""))
    return "|".join(alternatives)


class ByteLevelBPETokenizer(tf.Module):
    """`tokens` in id order, `merges` as `(a, b)` pairs by rank, `special_tokens`
    as `special_token_list` takes them (see module doc)."""

    def __init__(self, tokens, merges, unknown_token="<unk>", special_tokens=None, name=None):
        super().__init__(name=name)
        check_merges(tokens, merges)
        self.tokens = list(tokens)
        self.merges = [tuple(merge) for merge in merges]
        self.special_tokens = special_token_list(self.tokens, special_tokens)
        self.special_pattern = special_pattern(self.special_tokens)
        byte_chars = bytes_to_unicode()
        self.byte_table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant([bytes([b]) for b in range(256)]),
            tf.constant([byte_chars[b] for b in range(256)])), default_value="")
        self.char_table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant([byte_chars[b] for b in range(256)]),
            tf.constant([bytes([b]) for b in range(256)])), default_value="")
        # Merges on token ids, not strings: a pair is the int64 key a * size + b
        # (hashing ints, not joined strings, made the merge loop ~N times faster).
        ids = {token: i for i, token in enumerate(self.tokens)}
        pairs = [ids[a] * len(self.tokens) + ids[b] for a, b in self.merges] or [-1]
        self.rank_table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(pairs, tf.int64), tf.range(len(pairs), dtype=tf.int32)),
            default_value=NO_RANK)
        self.merged_table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(pairs, tf.int64),
            tf.constant([ids[a + b] for a, b in self.merges] or [-1], tf.int32)),
            default_value=-1)
        # Each byte's symbol as a token id (-1: not in the vocabulary, merged by nothing).
        self.byte_id_table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant([bytes([b]) for b in range(256)]),
            tf.constant([ids.get(byte_chars[b], -1) for b in range(256)], tf.int32)),
            default_value=-1)
        self.unknown_id = self.tokens.index(unknown_token) if unknown_token in self.tokens else -1
        self.id_table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(self.tokens), tf.range(len(self.tokens), dtype=tf.int32)),
            default_value=self.unknown_id)

    @classmethod
    def from_files(cls, vocab_json, merges_txt, tokenizer_json=None, **kwargs):
        """From RoBERTa's `vocab.json` and `merges.txt`; the special tokens from
        `tokenizer_json`'s `added_tokens` when given."""
        if tokenizer_json is not None:
            kwargs["special_tokens"] = bpe_files.added_tokens(tokenizer_json)
        return cls(bpe_files.read_bpe_vocab(vocab_json), bpe_files.read_merges(merges_txt),
                   **kwargs)

    def pre_tokenize(self, texts):
        """strings `[batch]` -> GPT-2 pieces `[batch, (pieces)]` (raw UTF-8); a
        special token (with the white space it strips) is one piece."""
        return self.pieces_and_specials(texts)[0]

    def pieces_and_specials(self, texts):
        """`(pieces, is_special)`: the pieces as `pre_tokenize`, and whether
        each (flat) is a special token."""
        # The text's own NULs (and \x01, the escape) become two control chars
        # (same regex class, same pieces) and come back after the split.
        escaped = tf.strings.regex_replace(texts, "\x01", "\x01\x02")
        escaped = tf.strings.regex_replace(escaped, "\x00", "\x01\x01")
        if not self.special_pattern:
            marked = tf.strings.regex_replace(escaped, LAST_SPACE, rf"\1{MARK}\2\3")
            marked = tf.strings.regex_replace(marked, PIECE, rf"{MARK}\0")
        else:
            # Each special token (as transformers' added-token split finds it)
            # goes between two MARKs; the piece rules then take it whole (their
            # first alternative), and cut the text around it as a text's end.
            marked = tf.strings.regex_replace(escaped, self.special_pattern, rf"{MARK}\0{MARK}")
            whole = f"{MARK}(?:{self.special_pattern}){MARK}"
            marked = tf.strings.regex_replace(marked, f"({whole})|{LAST_SPACE}",
                                              rf"\1\2{MARK}\3\4")
            marked = tf.strings.regex_replace(marked, f"{whole}|{PIECE}", rf"{MARK}\0")
        pieces = tf.strings.split(marked, sep=MARK)
        pieces = tf.ragged.boolean_mask(pieces, tf.strings.length(pieces) > 0)
        if self.special_pattern:
            # A piece of the text between special tokens holds none, so only they match.
            flags = tf.strings.regex_full_match(pieces.flat_values, self.special_pattern)
        else:
            flags = tf.zeros_like(pieces.flat_values, tf.bool)
        # Every \x01 starts an escape pair, so each leftmost match is one pair.
        unescaped = tf.strings.regex_replace(pieces.flat_values, "\x01\x01", "\x00")
        unescaped = tf.strings.regex_replace(unescaped, "\x01\x02", "\x01")
        return pieces.with_flat_values(unescaped), flags

    def merge(self, ids, byte_lengths, word_ids, num_words):
        """Applies the merges to flat symbol `ids` (of `byte_lengths` text bytes)
        whose piece is `word_ids`; also gives each result's first input symbol.

        A piece without a mergeable pair is done: its symbols leave the loop
        (into TensorArrays) and later rounds work on the others only (a batch's
        longest word takes ~90 rounds, most words a few), then all are put back
        in text order (by first input symbol)."""
        size = tf.constant(len(self.tokens), tf.int64)

        def one_round(i, ids, byte_lengths, word_ids, firsts, done):
            n = tf.shape(ids)[0]
            same_word = tf.concat([word_ids[1:] == word_ids[:-1], [False]], 0)
            following = tf.concat([ids[1:], [-1]], 0)
            keys = tf.cast(ids, tf.int64) * size + tf.cast(following, tf.int64)
            # -1 (a symbol outside the vocabulary) takes part in no merge.
            mergeable = same_word & (ids >= 0) & (following >= 0)
            ranks = tf.where(mergeable, self.rank_table.lookup(keys), NO_RANK)
            best = tf.gather(tf.math.unsorted_segment_min(ranks, word_ids, num_words), word_ids)
            finished = best == NO_RANK
            done = tuple(array.write(i, tf.boolean_mask(x, finished)) for array, x in
                         zip(done, (ids, byte_lengths, word_ids, firsts)))
            is_best = (ranks == best) & ~finished
            positions = tf.range(n)
            first = tf.math.unsorted_segment_min(tf.where(is_best, positions, n), word_ids,
                                                 num_words)
            starts = is_best & (positions == tf.gather(first, word_ids))
            merged = tf.where(starts, self.merged_table.lookup(keys), ids)
            merged_lengths = byte_lengths + tf.where(
                starts, tf.concat([byte_lengths[1:], [0]], 0), 0)
            keep = ~finished & ~tf.concat([[False], starts[:-1]], 0)
            return (i + 1, tf.boolean_mask(merged, keep), tf.boolean_mask(merged_lengths, keep),
                    tf.boolean_mask(word_ids, keep), tf.boolean_mask(firsts, keep), done)

        done = tuple(tf.TensorArray(dtype, size=0, dynamic_size=True, infer_shape=False,
                                    element_shape=tf.TensorShape([None]))
                     for dtype in (ids.dtype, byte_lengths.dtype, word_ids.dtype, tf.int32))
        i, *_, done = tf.while_loop(
            lambda i, ids, *_: tf.size(ids) > 0, one_round,
            (0, ids, byte_lengths, word_ids, tf.range(tf.size(ids)), done))
        # One empty element more: concat needs at least one (an empty batch runs no round).
        ids, byte_lengths, word_ids, firsts = (array.write(i, tf.zeros([0], array.dtype)).concat()
                                               for array in done)
        order = tf.argsort(firsts, stable=True)
        return tuple(tf.gather(x, order) for x in (ids, byte_lengths, word_ids, firsts))

    def split_and_merge(self, texts):
        """strings `[batch]` -> `(pieces, ids, byte_lengths, word_ids, special, symbols)`:
        merged symbols' token ids (-1: a byte outside the vocabulary), per symbol
        whether it is a special piece, and `symbols()` their strings (a special
        piece's raw text, with the white space it strips)."""
        texts = tf.convert_to_tensor(texts, tf.string)
        pieces, special_piece = self.pieces_and_specials(texts)
        flat = pieces.flat_values
        piece_bytes = tf.strings.bytes_split(tf.where(special_piece, " ", flat))
        word_ids = piece_bytes.value_rowids()
        special = tf.gather(special_piece, word_ids)
        # A special piece is one symbol (its token's id), so no merge touches it.
        special_text = tf.gather(flat, word_ids)
        ids = tf.where(special, self.id_table.lookup(
                           tf.strings.regex_replace(special_text, STRIP_SPACE, "")),
                       self.byte_id_table.lookup(piece_bytes.flat_values))
        byte_lengths = tf.where(special, tf.gather(tf.strings.length(flat), word_ids), 1)
        ids, byte_lengths, merged_word_ids, firsts = self.merge(ids, byte_lengths, word_ids,
                                                                piece_bytes.nrows())
        merged_special = tf.gather(special, firsts)

        def symbols():
            initial = tf.where(special, special_text,
                               self.byte_table.lookup(piece_bytes.flat_values))
            known = tf.gather(tf.constant(self.tokens), tf.maximum(ids, 0))
            return tf.where(merged_special | (ids < 0), tf.gather(initial, firsts), known)

        return pieces, ids, byte_lengths, merged_word_ids, merged_special, symbols

    def symbol_ids(self, ids):
        """Merged symbols' ids, a byte outside the vocabulary `<unk>`'s."""
        return tf.where(ids < 0, self.unknown_id, ids)

    def __call__(self, texts):
        """strings `[batch]` -> int32 ragged ids `[batch, (tokens)]`."""
        return self.tokenize(texts).merge_dims(1, 2)

    tokenize_flat = __call__  # BertTokenizer's name for it (BertPreprocessor calls it)

    def tokenize(self, texts):
        """strings `[batch]` -> int32 ragged ids `[batch, (pieces), (tokens)]`: the
        GPT-2 pieces stand where BertTokenizer has words."""
        pieces, ids, _, word_ids, _, _ = self.split_and_merge(texts)
        return by_piece(self.symbol_ids(ids), word_ids, pieces)

    def tokenize_with_offsets(self, texts):
        """strings `[batch]` -> `(ids, starts, ends)`, int32 ragged `[batch, (tokens)]`;
        offsets in characters of the text, as transformers' `return_offsets_mapping`
        (a token's leading and trailing spaces trimmed off, as RoBERTa's
        `trim_offsets`).

        >>> tok = ByteLevelBPETokenizer(["a", "b", "Ġ", "ab", "Ġab"], [("a", "b"), ("Ġ", "ab")])
        >>> [t.to_list() for t in tok.tokenize_with_offsets(tf.constant(["ab ab"]))]
        [[[3, 4]], [[0, 3]], [[2, 5]]]
        """
        texts = tf.convert_to_tensor(texts, tf.string)
        pieces, word_ids, ids, starts, ends, text_of_token = self.byte_spans(texts)
        # Bytes -> characters as tokenizers' converter: a start to the character
        # holding it (a start at the text's end stays as it is), an end to the
        # one after the character holding its last byte.
        text_lengths = tf.strings.length(texts)
        _, char_starts = tf.strings.unicode_decode_with_offsets(texts, "UTF-8")
        char_table = tf.cast(char_starts, tf.int32).to_tensor(default_value=2**30)
        token_text_length = tf.gather(text_lengths, text_of_token)
        char_start = tf.where(starts < token_text_length,
                              char_index(char_table, starts, text_of_token), starts)
        char_end = char_index(char_table, tf.maximum(ends - 1, 0), text_of_token) + 1
        return tuple(by_text(x, word_ids, pieces) for x in (ids, char_start, char_end))

    def tokenize_with_byte_offsets(self, texts):
        """`(ids, starts, limits)`, int32 ragged `[batch, (pieces), (tokens)]`: byte
        offsets into the text, spaces trimmed off as in `tokenize_with_offsets`
        (BertPreprocessor's offsets are bytes, as tf-text's)."""
        texts = tf.convert_to_tensor(texts, tf.string)
        pieces, word_ids, ids, starts, ends, _ = self.byte_spans(texts)
        return tuple(by_piece(x, word_ids, pieces) for x in (ids, starts, ends))

    def byte_spans(self, texts):
        """`(pieces, word_ids, ids, starts, ends, text_of_token)`, flat over all
        tokens: each token's id and trimmed byte span in its text."""
        pieces, ids, byte_lengths, word_ids, special, symbols = self.split_and_merge(texts)
        symbols = symbols()
        ids = self.symbol_ids(ids)
        # Pieces cover their text: a token's byte start is its start in all the
        # texts joined, less its text's start there.
        text_of_token = tf.gather(pieces.value_rowids(), word_ids)
        text_lengths = tf.strings.length(texts)
        text_starts = tf.cumsum(text_lengths, exclusive=True)
        starts = tf.cumsum(byte_lengths, exclusive=True) - tf.gather(text_starts, text_of_token)
        ends = starts + byte_lengths
        # trim_offsets: leading / trailing spaces (Ġ, one byte each) are not in the
        # span, nor the white space a special token strips (raw bytes).
        chars = tf.strings.length(symbols, unit="UTF8_CHAR")
        leading = chars - tf.strings.length(tf.strings.regex_replace(symbols, "^Ġ+", ""),
                                            unit="UTF8_CHAR")
        trailing = chars - tf.strings.length(tf.strings.regex_replace(symbols, "Ġ+$", ""),
                                             unit="UTF8_CHAR")
        lengths = tf.strings.length(symbols)
        leading = tf.where(special, lengths - tf.strings.length(tf.strings.regex_replace(
            symbols, f"^[{WHITE_SPACE}]+", "")), leading)
        trailing = tf.where(special, lengths - tf.strings.length(tf.strings.regex_replace(
            symbols, f"[{WHITE_SPACE}]+$", "")), trailing)
        starts = tf.minimum(starts + leading, ends)
        ends = tf.maximum(ends - trailing, starts)
        return pieces, word_ids, ids, starts, ends, text_of_token

    # === Tokens as strings ===

    def id_to_token(self, ids):
        """Token strings (GPT-2's byte-level symbols, "Ġthe") of int ids, any shape."""
        if isinstance(ids, tf.RaggedTensor):
            return ids.with_flat_values(self.id_to_token(ids.flat_values))
        return tf.gather(tf.constant(self.tokens), tf.convert_to_tensor(ids))

    def token_to_id(self, tokens):
        """int32 ids of token strings; unknown ones give `<unk>`'s id."""
        return self.id_table.lookup(tf.convert_to_tensor(tokens))

    def detokenize(self, ids, drop_ids=()):
        """Texts from ids `[batch, (tokens)]` (or `[batch, (pieces), (tokens)]`):
        the tokens' bytes joined, `drop_ids` (special tokens) left out."""
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(tf.convert_to_tensor(ids))
        if ids.ragged_rank == 2:
            ids = ids.merge_dims(1, 2)
        ids = tf.cast(ids, tf.int32)
        drop = tf.constant(list(drop_ids) or [-1], tf.int32)
        keep = tf.reduce_all(ids.flat_values[:, None] != drop[None, :], axis=1)
        symbols = tf.strings.reduce_join(
            self.id_to_token(tf.ragged.boolean_mask(ids, ids.with_flat_values(keep))), axis=-1)
        chars = tf.strings.unicode_split(symbols, "UTF-8")
        return tf.strings.reduce_join(chars.with_flat_values(
            self.char_table.lookup(chars.flat_values)), axis=-1)


def by_piece(values, word_ids, pieces):
    """Flat token `values` of piece `word_ids` -> ragged `[batch, (pieces), (tokens)]`."""
    return pieces.with_flat_values(tf.RaggedTensor.from_value_rowids(
        values, word_ids, nrows=tf.size(pieces.flat_values, out_type=tf.int64)))


def by_text(values, word_ids, pieces):
    """Flat token `values` of piece `word_ids` -> ragged `[batch, (tokens)]`."""
    return by_piece(values, word_ids, pieces).merge_dims(1, 2)


def char_index(char_table, byte_offsets, text_ids):
    """The character holding each byte offset (`char_table`: each text's
    character start bytes, padded with a large value)."""
    rows = tf.gather(char_table, text_ids)
    return tf.cast(tf.searchsorted(rows, byte_offsets[:, None], side="right")[:, 0] - 1,
                   tf.int32)
