"""Byte-level BPE (RoBERTa / GPT-2) tokenization in TensorFlow graph ops:
strings `[batch]` -> int32 ragged ids `[batch, (tokens)]`, the ids of
transformers' fast RoBERTa tokenizer with `add_special_tokens=False`
(`tokenize_with_offsets` adds its character offsets).

Hand-written because keras-hub's BytePairTokenizer splits with
RegexSplitWithOffsets (a tf-text op, outside tfbert's export op rule) and
misses GPT-2's `\\s+(?!\\S)`; this uses core ops only (regex_replace, split,
StaticHashTable, while_loop), so a SavedModel holding it passes op_check.

Steps: GPT-2 pre-tokenization (its regex rewritten without lookahead: two
regex_replace calls mark piece starts, one split cuts there); a piece that
is one token (a word whose merges give a single token, the most common case,
or a special token) is looked up whole; the bytes of the others are mapped to
GPT-2's byte-to-unicode symbols and merged by rank in rounds, every piece at
once (see `merge`), giving the ids of the Rust BPE's (rank, position) queue.

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

import numpy as np
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
        self.char_table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant([byte_chars[b] for b in range(256)]),
            tf.constant([bytes([b]) for b in range(256)])), default_value="")
        ids = {token: i for i, token in enumerate(self.tokens)}
        # Merges on token ids, not strings: a pair is the int64 key a * size + b
        # (hashing ints, not joined strings, made the merge loop ~N times faster).
        # Its rules are a row of `pair_rules`; a pair outside them gets the last row.
        ranks = merge_ranks(self.tokens, self.merges)
        rules, self.parallel = merge_rules(self.tokens, ranks)
        self.pair_table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(list(rules) + [-1], tf.int64), tf.range(len(rules) + 1)),
            default_value=len(rules))
        # Columns (rank, merged id, joins_left, joins_right), see merge_rules.
        self.pair_rules = np.array(list(rules.values()) + [[NO_RANK, -1, NO_RANK, NO_RANK]],
                                   np.int32)
        # Each byte's symbol as a token id; a byte outside the vocabulary is
        # -1 - byte: merged by nothing, and its offsets still know it.
        self.byte_id_table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant([bytes([b]) for b in range(256)]),
            tf.constant([ids.get(byte_chars[b], -1 - b) for b in range(256)], tf.int32)),
            default_value=-1)
        # Pieces that are one token, looked up whole: the words whose merges give
        # a single token (most pieces of text: " the", "ing"), and the special
        # tokens. No other piece can be a special token's text: the split cut it out.
        words = one_token_words(self.tokens, ranks, byte_chars)
        words.update({t["content"].encode("utf-8"): ids[t["content"]]
                      for t in self.special_tokens})
        self.word_table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(list(words) + [b""]), tf.constant(list(words.values()) + [-1], tf.int32)),
            default_value=-1)
        # Per merged symbol (`symbol_index`: the tokens, then the 256 bytes outside
        # the vocabulary): its bytes (one a character), and the spaces (Ġ) at its
        # ends, which trim_offsets leaves out.
        symbols = self.tokens + [byte_chars[b] for b in range(256)]
        self.symbol_lengths = np.array([len(s) for s in symbols], np.int32)
        self.leading_spaces = np.array([len(s) - len(s.lstrip("Ġ")) for s in symbols], np.int32)
        self.trailing_spaces = np.array([len(s) - len(s.rstrip("Ġ")) for s in symbols], np.int32)
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
        pieces = self.pieces_and_specials(texts)[0]
        keep = tf.strings.length(pieces.flat_values) > 0
        return tf.RaggedTensor.from_row_splits(tf.boolean_mask(pieces.flat_values, keep),
                                               kept_splits(keep, pieces.row_splits),
                                               validate=False)

    def pieces_and_specials(self, texts):
        """`(pieces, is_special)`: the pieces as `pre_tokenize` but with empty
        ones among them (the split leaves one before each text's first piece;
        they get no tokens), and whether each (flat) is a special token."""
        texts = tf.convert_to_tensor(texts, tf.string)
        # A batch holding NUL, \x01 or a special token takes the careful way
        # (below); others skip its regexes, about a third of the time taken by
        # a batch of plain sentences that went that way.
        rare = r"[\x00\x01]" + (f"|{self.special_pattern}" if self.special_pattern else "")
        careful = tf.reduce_any(tf.strings.regex_full_match(texts, f"(?s).*(?:{rare}).*"))

        def mark_carefully():
            # The text's own NULs (and \x01, the escape) become two control chars
            # (same regex class, same pieces) and come back after the split.
            marked = tf.strings.regex_replace(texts, "\x01", "\x01\x02")
            marked = tf.strings.regex_replace(marked, "\x00", "\x01\x01")
            if not self.special_pattern:
                return mark_pieces(marked)
            # Each special token (as transformers' added-token split finds it)
            # goes between two MARKs; the piece rules then take it whole (their
            # first alternative), and cut the text around it as a text's end.
            marked = tf.strings.regex_replace(marked, self.special_pattern, rf"{MARK}\0{MARK}")
            whole = f"{MARK}(?:{self.special_pattern}){MARK}"
            marked = tf.strings.regex_replace(marked, f"({whole})|{LAST_SPACE}",
                                              rf"\1\2{MARK}\3\4")
            return tf.strings.regex_replace(marked, f"{whole}|{PIECE}", rf"{MARK}\0")

        pieces = tf.strings.split(tf.cond(careful, mark_carefully, lambda: mark_pieces(texts)),
                                  sep=MARK)
        flat = pieces.flat_values

        def unmark_carefully():
            # A piece of the text between special tokens holds none, so only they
            # match; every \x01 starts an escape pair, so each leftmost match is one.
            specials = (tf.strings.regex_full_match(flat, self.special_pattern)
                        if self.special_pattern else tf.zeros_like(flat, tf.bool))
            unescaped = tf.strings.regex_replace(flat, "\x01\x01", "\x00")
            return tf.strings.regex_replace(unescaped, "\x01\x02", "\x01"), specials

        flat, specials = tf.cond(careful, unmark_carefully,
                                 lambda: (flat, tf.zeros_like(flat, tf.bool)))
        return pieces.with_flat_values(flat), specials

    def merge(self, ids, word_ids, num_words):
        """Applies the merges to flat symbol `ids` within each piece (`word_ids`,
        sorted) -> `(ids, word_ids)` of the merged symbols, in order.

        The Rust BPE merges one pair at a time: the lowest-ranked, leftmost.
        A round here merges, in every piece at once, the pairs that come out
        the same as it would: all occurrences of the piece's lowest-ranked pair
        (the first, third, ... of a run such as "a a a a"), and every pair ranked
        below the earliest merge that could join its left symbol to the left or
        its right symbol to the right (`merge_rules`), which nothing can take
        from it first. Both need a merge's result to be merged only by later
        merges (true of trained merges; else one pair a round, the lowest and
        leftmost). A batch then takes about as many rounds as its deepest merge
        tree (~10), not as its longest piece's merges (~90 for a "-----" rule)."""
        size = tf.constant(len(self.tokens), tf.int64)
        table = tf.constant(self.pair_rules)

        def pair_rules(ids, word_ids):
            # Each symbol's pair with the next one in its piece: its row of rules.
            following = tf.concat([ids[1:], [-1]], 0)
            pair = tf.concat([word_ids[1:] == word_ids[:-1], [False]], 0)
            keys = tf.where(pair & (ids >= 0) & (following >= 0),
                            tf.cast(ids, tf.int64) * size + tf.cast(following, tf.int64), -1)
            return tf.gather(table, self.pair_table.lookup(keys))

        def one_round(ids, word_ids, rules):
            rank, merged, joins_left, joins_right = tf.unstack(rules, axis=1)
            positions = tf.range(tf.size(ids))
            best = tf.gather(tf.math.unsorted_segment_min(rank, word_ids, num_words), word_ids)
            is_best = (rank == best) & (rank < NO_RANK)
            if self.parallel:
                # A run of lowest pairs ("a a a a") merges its 1st, 3rd, ...: the count
                # of other pairs so far is constant along a run, so it names the run.
                run = tf.cumsum(tf.cast(~is_best, tf.int32))
                run_start = tf.math.segment_min(tf.where(is_best, positions, tf.size(ids)), run)
                starts = is_best & ((positions - tf.gather(run_start, run)) % 2 == 0)
                left = tf.concat([[NO_RANK], joins_left[:-1]], 0)  # of the pair before
                right = tf.concat([joins_right[1:], [NO_RANK]], 0)  # of the pair after
                starts |= (rank < left) & (rank < right)
            else:
                first = tf.math.unsorted_segment_min(tf.where(is_best, positions, tf.size(ids)),
                                                     word_ids, num_words)
                starts = is_best & (positions == tf.gather(first, word_ids))
            keep = tf.where(~tf.concat([[False], starts[:-1]], 0))[:, 0]
            ids, word_ids = tf.gather(tf.where(starts, merged, ids), keep), tf.gather(word_ids, keep)
            return ids, word_ids, pair_rules(ids, word_ids)

        ids, word_ids, _ = tf.while_loop(lambda ids, word_ids, rules: tf.reduce_any(
            rules[:, 0] < NO_RANK), one_round, (ids, word_ids, pair_rules(ids, word_ids)))
        return ids, word_ids

    def split_and_merge(self, texts):
        """strings `[batch]` -> `(pieces, ids, byte_lengths, word_ids, special)`, flat
        over the merged symbols in text order: token ids (-1 - byte: a byte outside
        the vocabulary), lengths in text bytes, pieces (flat index), and whether
        the piece is a special token (its length holds the white space it strips)."""
        texts = tf.convert_to_tensor(texts, tf.string)
        pieces, special = self.pieces_and_specials(texts)
        flat = pieces.flat_values
        # A piece that is one token is looked up whole (a special one without the
        # white space it strips).
        specials = tf.where(special)[:, 0]
        whole_ids = tf.tensor_scatter_nd_update(
            self.word_table.lookup(flat), specials[:, None], self.word_table.lookup(
                tf.strings.regex_replace(tf.gather(flat, specials), STRIP_SPACE, "")))
        # The others are merged from their bytes.
        wholes, misses = tf.where(whole_ids >= 0)[:, 0], tf.where(whole_ids < 0)[:, 0]
        miss_bytes = tf.strings.bytes_split(tf.gather(flat, misses))
        byte_ids = self.byte_id_table.lookup(miss_bytes.flat_values)
        ids, miss_ids = self.merge(byte_ids, tf.cast(miss_bytes.value_rowids(), tf.int32),
                                   tf.size(misses))
        byte_lengths = tf.gather(self.symbol_lengths, self.symbol_index(ids))
        # Into text order: a whole piece's symbol comes after the whole pieces and
        # the merged symbols before it; a merged symbol after the merged symbols
        # and the whole pieces before it (its piece's index less the merged
        # pieces before it).
        miss_pieces = tf.gather(misses, miss_ids)
        at = [tf.range(tf.size(wholes)) + tf.searchsorted(miss_pieces, wholes),
              tf.range(tf.size(miss_ids)) + tf.cast(miss_pieces, tf.int32) - miss_ids]
        ids = tf.dynamic_stitch(at, [tf.gather(whole_ids, wholes), ids])
        byte_lengths = tf.dynamic_stitch(at, [tf.gather(tf.strings.length(flat), wholes),
                                              byte_lengths])
        word_ids = tf.dynamic_stitch(at, [wholes, miss_pieces])
        return pieces, ids, byte_lengths, word_ids, tf.gather(special, word_ids)

    def symbol_index(self, ids):
        """Merged symbols' rows of `symbol_lengths` and the like (-1 - byte after
        the tokens)."""
        return tf.where(ids >= 0, ids, len(self.tokens) - 1 - ids)

    def symbol_ids(self, ids):
        """Merged symbols' ids, a byte outside the vocabulary `<unk>`'s."""
        return tf.where(ids < 0, self.unknown_id, ids)

    def __call__(self, texts):
        """strings `[batch]` -> int32 ragged ids `[batch, (tokens)]`."""
        pieces, ids, _, word_ids, _ = self.split_and_merge(texts)
        return by_text(self.symbol_ids(ids), word_ids, pieces)

    tokenize_flat = __call__  # BertTokenizer's name for it (BertPreprocessor calls it)

    def tokenize(self, texts):
        """strings `[batch]` -> int32 ragged ids `[batch, (pieces), (tokens)]`: the
        GPT-2 pieces stand where BertTokenizer has words."""
        pieces, ids, _, word_ids, _ = self.split_and_merge(texts)
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
        pieces, ids, byte_lengths, word_ids, special = self.split_and_merge(texts)
        # Pieces cover their text: a token's byte start is its start in all the
        # texts joined, less its text's start there.
        text_of_token = tf.gather(pieces.value_rowids(), word_ids)
        text_lengths = tf.strings.length(texts)
        text_starts = tf.cumsum(text_lengths, exclusive=True)
        starts = tf.cumsum(byte_lengths, exclusive=True) - tf.gather(text_starts, text_of_token)
        ends = starts + byte_lengths
        # trim_offsets: leading / trailing spaces (Ġ, one byte each) are not in the
        # span, nor the white space a special token strips (raw bytes).
        symbol = self.symbol_index(ids)
        special_text = tf.where(special, tf.gather(pieces.flat_values, word_ids), "")
        lengths = tf.strings.length(special_text)
        leading = tf.where(special, lengths - tf.strings.length(tf.strings.regex_replace(
            special_text, f"^[{WHITE_SPACE}]+", "")), tf.gather(self.leading_spaces, symbol))
        trailing = tf.where(special, lengths - tf.strings.length(tf.strings.regex_replace(
            special_text, f"[{WHITE_SPACE}]+$", "")), tf.gather(self.trailing_spaces, symbol))
        ids = self.symbol_ids(ids)
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


def mark_pieces(texts):
    """GPT-2's pieces, each with a MARK before it (some empty between two MARKs)."""
    marked = tf.strings.regex_replace(texts, LAST_SPACE, rf"\1{MARK}\2\3")
    return tf.strings.regex_replace(marked, PIECE, rf"{MARK}\0")


def merge_ranks(tokens, merges):
    """`{(a, b): rank}` of token ids; a repeated merge takes its last rank, as
    in tokenizers."""
    ids = {token: i for i, token in enumerate(tokens)}
    return {(ids[a], ids[b]): rank for rank, (a, b) in enumerate(merges)}


def merge_rules(tokens, ranks):
    """`({pair key: [rank, merged id, joins_left, joins_right]}, parallel)` for
    `merge`, a pair (a, b) keyed a * len(tokens) + b. While b's left neighbor
    grows from a, b can be joined to it no earlier than joins_left: the lowest
    rank of a merge (x, b), x a token ending in a's text; while a's right
    neighbor grows from b, a can be joined to it no earlier than joins_right
    (merges (a, y), y starting with b's text). `parallel`: every merge's result
    is merged only by later merges."""
    ids = {token: i for i, token in enumerate(tokens)}
    size = len(tokens)
    rules = {}

    def rule(a, b):
        return rules.setdefault(a * size + b, [NO_RANK, -1, NO_RANK, NO_RANK])

    first_use = {}
    for (a, b), rank in ranks.items():
        left, right = tokens[a], tokens[b]
        rule(a, b)[:2] = [rank, ids[left + right]]
        for k in range(len(left)):
            if left[k:] in ids:
                row = rule(ids[left[k:]], b)
                row[2] = min(row[2], rank)
        for k in range(1, len(right) + 1):
            if right[:k] in ids:
                row = rule(a, ids[right[:k]])
                row[3] = min(row[3], rank)
        for token in (a, b):
            first_use[token] = min(first_use.get(token, NO_RANK), rank)
    parallel = all(first_use.get(ids[tokens[a] + tokens[b]], NO_RANK) > rank
                   for (a, b), rank in ranks.items())
    return rules, parallel


def one_token_words(tokens, ranks, byte_chars):
    """`{word bytes: id}`: every token the merges build back from its own bytes
    (as the Rust BPE merges: the lowest-ranked pair, leftmost first)."""
    rank_of = {(tokens[a], tokens[b]): rank for (a, b), rank in ranks.items()}
    byte_of = {char: b for b, char in byte_chars.items()}
    words = {}
    for token_id, token in enumerate(tokens):
        if not all(char in byte_of for char in token):
            continue
        symbols = list(token)
        while len(symbols) > 1:
            pair_ranks = [rank_of.get(pair, NO_RANK) for pair in zip(symbols, symbols[1:])]
            rank = min(pair_ranks)
            if rank == NO_RANK:
                break
            k = pair_ranks.index(rank)
            symbols[k:k + 2] = [symbols[k] + symbols[k + 1]]
        if symbols == [token]:
            words[bytes(byte_of[char] for char in token)] = token_id
    return words


def by_piece(values, word_ids, pieces):
    """Flat token `values` of piece `word_ids` (sorted) -> ragged `[batch, (pieces),
    (tokens)]`, the empty pieces left out."""
    keep = tf.strings.length(pieces.flat_values) > 0
    kept = tf.concat([tf.where(keep)[:, 0], [tf.size(keep, tf.int64)]], 0)
    tokens = tf.RaggedTensor.from_row_splits(
        values, tf.searchsorted(word_ids, kept, out_type=tf.int64), validate=False)
    return tf.RaggedTensor.from_row_splits(tokens, kept_splits(keep, pieces.row_splits),
                                           validate=False)


def kept_splits(keep, row_splits):
    """Row splits after keeping the flat values where `keep`."""
    return tf.gather(tf.concat([[0], tf.cumsum(tf.cast(keep, tf.int64))], 0), row_splits)


def by_text(values, word_ids, pieces):
    """Flat token `values` of piece `word_ids` (sorted) -> ragged `[batch, (tokens)]`."""
    return tf.RaggedTensor.from_row_splits(
        values, tf.searchsorted(word_ids, pieces.row_splits, out_type=tf.int64), validate=False)


def char_index(char_table, byte_offsets, text_ids):
    """The character holding each byte offset (`char_table`: each text's
    character start bytes, padded with a large value)."""
    rows = tf.gather(char_table, text_ids)
    return tf.cast(tf.searchsorted(rows, byte_offsets[:, None], side="right")[:, 0] - 1,
                   tf.int32)
