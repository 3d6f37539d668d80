"""The docstring-family task of the distillation test and benchmark: real
sentences, disjoint splits, balanced classes, deterministic for a seed."""

import collections

# benchmarks/ is a top-level folder of the repository, not part of the package.
from benchmarks.docstring_task import build_docstring_task


def rows(path, header):
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.split("\t") for line in (lines[1:] if header else lines)]


def test_splits_are_disjoint_balanced_and_deterministic(tmp_path):
    sizes = build_docstring_task(str(tmp_path / "a"), train_per_class=3, dev_per_class=4,
                                 pool_per_class=5, seed=7)
    assert sizes == {"train": 15, "dev": 20, "transfer": 25}
    train, dev = rows(tmp_path / "a" / "train.tsv", True), rows(tmp_path / "a" / "dev.tsv", True)
    transfer = rows(tmp_path / "a" / "transfer.txt", False)
    assert collections.Counter(label for _, label in train) == {
        f: 3 for f in ("concurrency", "files_os", "network_mail", "numbers_dates", "text")}
    assert all(len(row) == 1 for row in transfer)  # no labels in the transfer set
    texts = [t for t, _ in train] + [t for t, _ in dev] + [row[0] for row in transfer]
    assert len(set(texts)) == len(texts) and all(len(t.split()) >= 5 for t in texts)
    build_docstring_task(str(tmp_path / "b"), train_per_class=3, dev_per_class=4,
                         pool_per_class=5, seed=7)
    for name in ("train.tsv", "dev.tsv", "transfer.txt"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
