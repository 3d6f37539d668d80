"""The normalization tables kept between processes (`kept_on_disk`): read back
as built, rebuilt when the file is damaged, built anyway when the cache
cannot be written. (What the tables hold is tests/text/test_tokenizer_parity.py's
claim: ids equal to the reference tokenizer's on the Unicode stress corpus.)"""

import os

import numpy as np

from tfbert.text import char_table

# The disk-cached builder without the in-process lru_cache, and the bare builder.
cached_casing = char_table.build_casing_table.__wrapped__
built_casing = cached_casing.__wrapped__


def cache_file(root):
    folder = root / "tfbert" / "char_tables"
    files = os.listdir(folder)
    assert len(files) == 1 and files[0].startswith("build_casing_table-"), files
    return folder / files[0]


def test_tables_are_kept_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    want = built_casing()
    first = cached_casing()
    path = cache_file(tmp_path)
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(first, want))

    # The second call reads the file: what is in it is what it returns.
    np.savez(path, a0=np.array([0, 7], np.int32), a1=np.array([0, 1], np.int32))
    assert [a.tolist() for a in cached_casing()] == [[0, 7], [0, 1]]


def test_a_damaged_file_is_built_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cached_casing()
    path = cache_file(tmp_path)
    path.write_bytes(path.read_bytes()[:100])  # truncated
    again = cached_casing()
    assert all(np.array_equal(a, b) for a, b in zip(again, built_casing()))
    assert all(np.array_equal(a, b) for a, b in zip(np.load(path).values(), again))


def test_an_unwritable_cache_only_means_no_reuse(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    tables = cached_casing()
    assert all(np.array_equal(a, b) for a, b in zip(tables, built_casing()))
