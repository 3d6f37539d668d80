"""The example datasets of `tfbert.datasets`: real sentences, the labelling
rule holds, disjoint splits, balanced classes, deterministic for a seed."""

import collections
import inspect
import os
import sysconfig

import pytest

from tfbert.datasets.docstring_families import FAMILIES, build_docstring_task, family_of
from tfbert.datasets.docstring_pairs import (docstring_pairs, package_docstring_pairs, pair_of,
                                             stdlib_objects)


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


def test_a_sentence_is_labelled_with_its_module_family():
    stdlib = sysconfig.get_paths()["stdlib"]
    assert family_of(os.path.join(stdlib, "asyncio", "tasks.py"), stdlib) == "concurrency"
    assert family_of(os.path.join(stdlib, "shutil.py"), stdlib) == "files_os"
    assert family_of(os.path.join(stdlib, "json", "decoder.py"), stdlib) is None
    assert all(modules for modules in FAMILIES.values())


def test_a_pair_is_a_docstring_summary_line_and_its_body():
    rows = docstring_pairs()
    assert len({q for _, q, _ in rows}) == len(rows) == len({p for _, _, p in rows})
    docs = [" ".join(inspect.getdoc(obj).split()) for _, _, obj in stdlib_objects()
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and inspect.getdoc(obj)]
    for module, query, passage in rows[:20]:
        assert any(doc.startswith(query) and passage in doc for doc in docs), (module, query)


def test_package_pairs_follow_the_same_rule_and_leave_out_excluded_pairs():
    stdlib_rows = [(q, p) for _, q, p in docstring_pairs()]
    rows = package_docstring_pairs(("json", "email"), exclude=stdlib_rows)
    assert rows and {package for package, _, _ in rows} <= {"json", "email"}
    assert len({q for _, q, _ in rows}) == len(rows) == len({p for _, _, p in rows})
    excluded_q, excluded_p = {q for q, _ in stdlib_rows}, {p for _, p in stdlib_rows}
    assert not any(q in excluded_q or p in excluded_p for _, q, p in rows)
    assert all(pair_of(f"{q}\n\n{p}") == (q, p) for _, q, p in rows)  # the rule, re-applied
    assert package_docstring_pairs(("json", "email"), exclude=stdlib_rows) == rows


def test_a_package_that_is_not_installed_is_named():
    with pytest.raises(ValueError, match="'no_such_package_xyz' is not installed"):
        package_docstring_pairs(("no_such_package_xyz",))
    with pytest.raises(ValueError, match="'sys' has no Python source"):
        package_docstring_pairs(("sys",))
