"""The reference BERT text normalization as a per-codepoint table.

The reference tokenizer (google-research `tokenization.py`, Hugging Face's
Python `BertTokenizer`) cleans, lower-cases, strips accents and splits on
punctuation one character at a time. So its whole normalization is a map
codepoint -> output codepoints, which we precompute here with Python's own
`unicodedata` and `str.lower` (the reference's exact definitions) and apply
in the graph with `searchsorted` + `gather` (core TF ops). tf-text's
`FastBertNormalize` is not used: it also does compatibility folding
(ß->ss, ﬁ->fi, …->...) and keeps U+FFFD, so it disagrees with the reference.

Output codepoint 32 (space) separates words; every punctuation and CJK
character is surrounded by spaces so it becomes its own word.
"""

import functools
import hashlib
import sys
import unicodedata
import zipfile

import numpy as np

from tfbert.atomic import atomic_file, cache_path

SPACE = 32
MAX_CODEPOINT = sys.maxunicode

# The reference `_is_chinese_char` ranges (CJK Unified Ideographs and friends).
CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def is_cjk(cp):
    return cp >= 0x3400 and any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def is_control(char):
    if char in "\t\n\r":
        return False
    return unicodedata.category(char).startswith("C")


def is_whitespace(char):
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def is_punctuation(char):
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def normalize_char(cp, lower_case):
    """The reference output of one codepoint, as a list of codepoints."""
    char = chr(cp)
    if cp == 0 or cp == 0xFFFD or is_control(char):
        return []
    if is_whitespace(char) or char.isspace():  # str.split() also splits on \u2028 etc.
        return [SPACE]
    pad = is_cjk(cp)
    if lower_case:
        text = unicodedata.normalize("NFD", char.lower())
        char_list = [c for c in text if unicodedata.category(c) != "Mn"]
    else:
        char_list = [char]
    out = []
    for c in char_list:
        if c.isspace():
            out.append(SPACE)
        elif pad or is_punctuation(c):
            out.extend([SPACE, ord(c), SPACE])
        else:
            out.append(ord(c))
    return out


# Letters, digits and symbols that are neither punctuation nor whitespace:
# they map to themselves when they also survive lower-casing and NFD.
SIMPLE_CATEGORIES = frozenset(["Ll", "Lo", "Lm", "Nd", "No", "Nl", "So", "Sm", "Sc", "Sk", "Mc"])


def simple_lower(char):
    return char.lower() == char and unicodedata.is_normalized("NFD", char)


def kept_on_disk(build):
    """`build(*args)` -> a tuple of arrays, kept in tfbert's cache
    (`tfbert.atomic.cache_path`) between processes. Building a table walks
    all 1.1M codepoints in Python (0.2-0.6 s each, about 0.8 s per
    tokenizer), paid by every process that tokenizes (each tool run); the
    file is keyed by this Python's Unicode version and this module's source,
    so it is never stale. A missing, unreadable or unwritable file means
    building anew."""

    @functools.wraps(build)
    def cached(*args):
        name = "-".join([build.__name__, *map(str, args), tables_key()])
        path = cache_path(f"char_tables/{name}.npz")
        try:
            with np.load(path) as arrays:
                return tuple(arrays[f"a{i}"] for i in range(len(arrays.files)))
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            pass
        tables = build(*args)
        try:
            with atomic_file(path) as tmp, open(tmp, "wb") as f:
                np.savez(f, **{f"a{i}": a for i, a in enumerate(tables)})
        except OSError:
            pass
        return tables

    return cached


@functools.lru_cache(maxsize=1)
def tables_key():
    """This Python's Unicode version and this module's source, hashed: read
    when a table is first wanted, not when the module is imported."""
    with open(__file__, "rb") as f:
        source = f.read()
    what = f"{unicodedata.unidata_version} {sys.maxunicode} ".encode() + source
    return hashlib.sha256(what).hexdigest()[:16]


IDENTITY = -2  # table row marker: output the codepoint itself
PADDED = -3  # table row marker: output space, the codepoint, space


@functools.lru_cache(maxsize=2)
@kept_on_disk
def build_char_table(lower_case):
    """`(starts, rows)`: the normalization as ranges of codepoints.

    `starts` int32 `[n]` sorted range starts (the first is 0); range `i`
    covers `starts[i] .. starts[i+1]-1`. `rows` int32 `[n, width]`: the
    output codepoints padded with -1, or `[IDENTITY, -1, ...]` /
    `[PADDED, -1, ...]` for ranges whose characters map to themselves / to
    themselves between spaces. Deleted ranges are all -1. Ranges keep the
    table small: most of the 1.1M codepoints are unassigned (deleted) or map
    to themselves.
    """
    starts, rows = [], []
    previous = None
    for cp in range(MAX_CODEPOINT + 1):
        char = chr(cp)
        category = unicodedata.category(char)
        if category[0] == "C" and char not in "\t\n\r":
            out = []
        elif 126 < cp != 0xFFFD and category in SIMPLE_CATEGORIES and (not lower_case or simple_lower(char)) and not is_cjk(cp):
            out = [IDENTITY]  # fast path, same answer as normalize_char
        else:
            out = normalize_char(cp, lower_case)
            if out == [cp]:
                out = [IDENTITY]
            elif out == [SPACE, cp, SPACE]:
                out = [PADDED]
        # Ranges of markers or deletions merge; explicit mappings stay single.
        mergeable = out in ([], [IDENTITY], [PADDED])
        if mergeable and out == previous:
            continue
        starts.append(cp)
        rows.append(out)
        previous = out if mergeable else None
    width = max(3, max(len(r) for r in rows))
    values = np.full((len(rows), width), -1, np.int32)
    for i, r in enumerate(rows):
        values[i, : len(r)] = r
    return np.asarray(starts, np.int32), values


CASED = 1  # `casing_classes` value of a cased letter
CASE_IGNORABLE = 2  # skipped when looking for the neighbours of a sigma


@functools.lru_cache(maxsize=1)
@kept_on_disk
def build_casing_table():
    """`(starts, classes)` ranges of codepoints: 0 other, CASED, CASE_IGNORABLE.

    Python's `str.lower` maps capital sigma to final ς when a cased letter
    precedes it and none follows (skipping case-ignorable characters); the
    reference lower-cases whole words, so we need both properties. They are
    read off `str.lower` itself, so they match the running Python exactly.
    Characters the reference deletes before lower-casing (controls, U+FFFD)
    count as ignorable: they are gone by then.
    """
    starts, classes = [], []
    for cp in range(MAX_CODEPOINT + 1):
        char = chr(cp)
        category = unicodedata.category(char)
        if category[0] == "C" and char not in "\t\n\r" or cp == 0xFFFD:
            cls = CASE_IGNORABLE  # deleted by the cleaning before lower-casing
        elif (char + "\u03a3").lower()[-1] == "\u03c2":
            cls = CASED
        elif ("A" + char + "\u03a3").lower()[-1] == "\u03c2":
            cls = CASE_IGNORABLE
        else:
            cls = 0
        if not classes or classes[-1] != cls:
            starts.append(cp)
            classes.append(cls)
    return np.asarray(starts, np.int32), np.asarray(classes, np.int32)


HANGUL_S, HANGUL_L, HANGUL_V, HANGUL_T = 0xAC00, 0x1100, 0x1161, 0x11A7


@functools.lru_cache(maxsize=1)
@kept_on_disk
def build_nfc_tables():
    """Tables for the NFC step of the cased reference (Hugging Face's Python
    BERT tokenizer applies `unicodedata.normalize("NFC")` after cleaning).

    Returns `(starts, rows, pair_keys, pair_values, seconds)`:
    - `starts`/`rows`: ranges as `build_char_table`, mapping every codepoint
      to its own NFC (singletons like U+2126 -> Ω, composition exclusions
      like U+0958 -> क + ़) and deleting what the cleaning deletes;
    - `pair_keys` int64 sorted `first * 0x110000 + second` and
      `pair_values` int32: the canonical compositions (incl. Hangul L+V, LV+T);
    - `seconds` int32 sorted: every codepoint that can be a second.
    """
    starts, rows = [], []
    previous = None
    for cp in range(MAX_CODEPOINT + 1):
        char = chr(cp)
        if unicodedata.category(char)[0] == "C" and char not in "\t\n\r" or cp in (0, 0xFFFD):
            out = []
        elif unicodedata.is_normalized("NFC", char):
            out = [IDENTITY]
        else:
            nfc = unicodedata.normalize("NFC", char)
            out = [IDENTITY] if nfc == char else [ord(c) for c in nfc]
        mergeable = out in ([], [IDENTITY])
        if mergeable and out == previous:
            continue
        starts.append(cp)
        rows.append(out)
        previous = out if mergeable else None
    width = max(len(r) for r in rows)
    values = np.full((len(rows), width), -1, np.int32)
    for i, r in enumerate(rows):
        values[i, : len(r)] = r

    pairs = {}
    for cp in range(MAX_CODEPOINT + 1):
        if 0xAC00 <= cp <= 0xD7A3:
            continue  # Hangul syllables: algorithmic, below
        decomposition = unicodedata.decomposition(chr(cp))
        if not decomposition or decomposition.startswith("<"):
            continue
        parts = [int(p, 16) for p in decomposition.split()]
        if len(parts) == 2 and unicodedata.normalize("NFC", chr(parts[0]) + chr(parts[1])) == chr(cp):
            pairs[parts[0] * 0x110000 + parts[1]] = cp
    for l in range(19):
        for v in range(21):
            lv = HANGUL_S + (l * 21 + v) * 28
            pairs[(HANGUL_L + l) * 0x110000 + HANGUL_V + v] = lv
            for t in range(1, 28):
                pairs[lv * 0x110000 + HANGUL_T + t] = lv + t
    keys = np.asarray(sorted(pairs), np.int64)
    composites = np.asarray([pairs[k] for k in keys], np.int32)
    seconds = np.unique((keys % 0x110000).astype(np.int32))
    return np.asarray(starts, np.int32), values, keys, composites, seconds


BMP_SIZE = 0x10000


def resolve_bmp(starts, rows):
    """Dense `[65536, width]` output rows of the Basic Multilingual Plane, with
    the IDENTITY/PADDED markers resolved: one `gather` per character instead
    of a binary search (the hot path; other planes still use the ranges)."""
    cps = np.arange(BMP_SIZE, dtype=np.int32)
    dense = rows[np.searchsorted(starts, cps, side="right") - 1].copy()
    first = dense[:, 0].copy()
    identity, padded = first == IDENTITY, first == PADDED
    dense[identity, 0] = cps[identity]
    if dense.shape[1] >= 3:
        dense[padded, 0] = SPACE
        dense[padded, 1] = cps[padded]
        dense[padded, 2] = SPACE
    return dense
