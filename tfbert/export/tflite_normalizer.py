"""tfbert's reference normalization as a tf-text `FastBertNormalize` model,
for TFLite graphs (`--tflite_tokenizer=exact`).

TFLite has no string ops besides tf-text's kernels, and no Flex delegate
ships in the pip packages, so tfbert's normalizer (core string ops) cannot go
into a TFLite graph. But tf-text's `FastBertNormalize` kernel is a plain
per-codepoint map: a darts-clone trie from each character's UTF-8 bytes to
an entry (up to 63 bytes) in a string pool, read from a flatbuffer
(`fast_bert_normalizer_model.fbs`) that `FastBertNormalizer(model_buffer=...)`
takes. tf-text builds that table with ICU's NFKC case folding; here it is
built from `char_table.py`, i.e. from the reference tokenizer's own
per-character rules (clean, lower-case, NFD, strip Mn, pad punctuation).

What a per-character table cannot hold (measured on the parity corpus in
tests/export/test_tflite_text.py):
- the final-sigma rule of `str.lower` (uncased: Σ at a word end -> ς);
- NFC composition of character pairs (cased vocabularies only; the cased
  parity corpus reaches 99.4%, the misses being decomposed input);
- the reference's 100-character word limit: WordPiece's limit is in bytes
  (100), so a non-ASCII word of 34 to 100 characters over 100 bytes becomes
  [UNK] here and not in the reference;
- invalid UTF-8 bytes (the reference drops them; the kernel keeps them).
CJK ideographs map to themselves: tf-text's WordPiece splits them already,
on the same ranges as the reference.

Example:
>>> import tensorflow_text as tf_text
>>> normalizer = tf_text.FastBertNormalizer(model_buffer=normalizer_model(lower_case=True))
>>> [t.decode() for t in normalizer.normalize(tf.constant(["Héllo,\\x00 ﬁne Straße"])).numpy()]
['hello ,  ﬁne straße']
"""

import functools

import flatbuffers
import numpy as np

from tfbert.text.char_table import (
    CJK_RANGES,
    IDENTITY,
    MAX_CODEPOINT,
    PADDED,
    build_char_table,
    build_nfc_tables,
)

# Encoding of a trie value (tf-text fast_bert_normalizer.h): bit 30 "differs
# from the input", bits 6..29 the pool offset, bits 0..5 the UTF-8 length.
DIFFERENT = 0x40000000
MAX_LENGTH = 63
SURROGATES = range(0xD800, 0xE000)  # not encodable in valid UTF-8


def character_map(lower_case):
    """`{codepoint: output codepoints}` for every character whose reference
    normalization is not the character itself (the tokenizer's table; for
    cased vocabularies with each character's own NFC applied first)."""
    starts, rows = build_char_table(lower_case)
    cps = np.arange(MAX_CODEPOINT + 1)
    row_of = np.searchsorted(starts, cps, side="right") - 1
    first = rows[row_of, 0]
    # Each row's output once (the ~900k deleted codepoints share a few rows):
    # a per-codepoint lookup here took most of an OpenVINO export's time.
    outputs = [[int(c) for c in row if c != -1] for row in rows]
    mapping = {}
    for cp in np.flatnonzero((first != IDENTITY) & ((cps < 0xD800) | (cps > 0xDFFF))).tolist():
        if first[cp] == PADDED:
            if not any(lo <= cp <= hi for lo, hi in CJK_RANGES):  # WordPiece splits CJK itself
                mapping[cp] = [32, cp, 32]
        else:
            mapping[cp] = outputs[row_of[cp]]
    if not lower_case:
        nfc_starts, nfc_rows = build_nfc_tables()[:2]
        for start, end, row in zip(nfc_starts, list(nfc_starts[1:]) + [MAX_CODEPOINT + 1], nfc_rows):
            if row[0] == IDENTITY:
                continue
            nfc = [int(c) for c in row if c != -1]  # [] for deleted ranges
            for cp in range(int(start), int(end)):
                if cp not in SURROGATES:
                    mapping[cp] = [o for c in nfc for o in _table_output(starts, rows, c)]
    return {cp: out for cp, out in mapping.items() if out != [cp]}


def _table_output(starts, rows, cp):
    row = rows[np.searchsorted(starts, cp, side="right") - 1]
    if row[0] == IDENTITY:
        return [cp]
    if row[0] == PADDED:
        return [32, cp, 32]
    return [int(c) for c in row if c != -1]


@functools.lru_cache(maxsize=2)
def normalizer_model(lower_case):
    """The `FastBertNormalizerModel` flatbuffer (bytes) of the reference
    normalization; a few seconds to build (a million codepoints), cached per casing."""
    mapping = character_map(lower_case)
    pool, offsets, keys, values = bytearray(), {}, [], []
    zero_value = 0
    for cp in sorted(mapping):
        text = "".join(chr(c) for c in mapping[cp]).encode("utf-8")
        if len(text) > MAX_LENGTH:
            raise ValueError(f"U+{cp:04X} normalizes to {len(text)} bytes (at most {MAX_LENGTH}).")
        if text and text not in offsets:
            offsets[text] = len(pool)
            pool += text
        value = DIFFERENT | (offsets.get(text, 0) << 6) | len(text)
        if cp == 0:
            zero_value = value  # the trie cannot hold the empty key
            continue
        keys.append(chr(cp).encode("utf-8"))
        values.append(value)
    trie = build_trie(keys, values)
    return _flatbuffer(trie, zero_value, bytes(pool))


def build_trie(keys, values):
    """A darts-clone double-array trie (uint32 units) mapping each key (bytes,
    none a prefix of another) to its value (< 2**31), in the unit layout that
    tf-text's `DartsCloneTrieWrapper` reads:
    - label: bits 0..7 (bit 31 set marks a value unit), has-leaf: bit 8,
      offset to the children's block: bits 10..31 (`child = node ^ offset ^ byte`);
    - a key's last node has-leaf, its value unit sits at `node ^ offset`.
    Identical subtrees (e.g. the ~900k deleted unassigned codepoints) share
    one block, as darts-clone's DAWG does, which keeps the array small."""
    # Nested dict trie; a key's end holds ("value", v).
    root = {}
    for key, value in zip(keys, values):
        node = root
        for byte in key[:-1]:
            node = node.setdefault(byte, {})
        node[key[-1]] = ("value", value)

    blocks = {}  # block signature -> block id
    block_list = []  # id -> [(label, child block id, has_leaf)] or ("value", v)

    def intern(signature, content):
        if signature not in blocks:
            blocks[signature] = len(block_list)
            block_list.append(content)
        return blocks[signature]

    def block_of(node):
        children = []
        for label in sorted(node):
            child = node[label]
            if isinstance(child, tuple):
                children.append((label, intern(child, child), True))
            else:
                children.append((label, block_of(child), False))
        return intern(tuple(children), children)

    root_block = block_of(root)

    # Place blocks (children before parents: ids grow bottom-up), first fit:
    # a block's units sit at `base ^ label` inside one 256-unit chunk; bases
    # are unique, so a byte that is not a child never lands on a unit of
    # another block with that label.
    size = 256 * (len(block_list) // 2 + 2)
    used = np.zeros(size, bool)
    used[0] = True  # the root unit
    used_bases = np.zeros(size, bool)
    lows = np.arange(256)
    bases = [0] * len(block_list)
    chunk = 0
    # Where the last block of each label set went: the chunks before it had no
    # room for that set then and have less now, so the search starts there
    # (the same first fit, without rescanning ~100 chunks per block).
    last_chunk = {}
    for block_id, content in enumerate(block_list):
        label_set = (0,) if content[0] == "value" else tuple(c[0] for c in content)
        labels = np.array(label_set)
        search = max(chunk, last_chunk.get(label_set, 0))
        while True:
            positions = (search << 8) | (lows[:, None] ^ labels[None, :])
            fits = ~used[positions].any(axis=1) & ~used_bases[(search << 8) | lows]
            if fits.any():
                base = (search << 8) | int(np.argmax(fits))
                break
            search += 1
        used[base ^ labels] = True
        used_bases[base] = True
        bases[block_id] = base
        last_chunk[label_set] = base >> 8
        while used[chunk << 8:(chunk + 1) << 8].all():
            chunk += 1

    units = np.zeros(int(np.flatnonzero(used).max()) + 1, np.uint32)
    for block_id, content in enumerate(block_list):
        base = bases[block_id]
        if content[0] == "value":
            units[base] = content[1] | 0x80000000
            continue
        for label, child, has_leaf in content:
            units[base ^ label] = _unit(offset=(base ^ label) ^ bases[child], label=label,
                                        has_leaf=has_leaf)
    units[0] = _unit(offset=bases[root_block], label=0, has_leaf=False)
    return units


def _unit(offset, label, has_leaf):
    if offset >= 1 << 21:
        raise ValueError("trie too large for direct offsets")  # never near: ~100k units
    return (offset << 10) | (int(has_leaf) << 8) | label


def _flatbuffer(trie, zero_value, pool):
    # FastBertNormalizerModel: lower_case_nfd_strip_accents (0), trie_array
    # (1), data_for_codepoint_zero (2), normalized_string_pool (3).
    builder = flatbuffers.Builder(len(pool) + 4 * len(trie) + 1024)
    pool_vector = builder.CreateNumpyVector(np.frombuffer(pool, np.uint8))
    trie_vector = builder.CreateNumpyVector(trie.astype(np.uint32))
    builder.StartObject(4)
    builder.PrependBoolSlot(0, False, False)
    builder.PrependUOffsetTRelativeSlot(1, trie_vector, 0)
    builder.PrependInt32Slot(2, zero_value, 0)
    builder.PrependUOffsetTRelativeSlot(3, pool_vector, 0)
    builder.Finish(builder.EndObject())
    return bytes(builder.Output())
