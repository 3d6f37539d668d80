"""docs/architecture.md's tree is the file system's: every folder and root module it
names exists, and every subpackage and root module of tfbert/ (and every folder of
benchmarks/) is named there."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def tree_entries():
    """`{path: description}` of the first ```text block of docs/architecture.md,
    paths rebuilt from the indentation (two spaces a level)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"```text\n(.*?)```", text, re.S).group(1)
    entries, parents = {}, []
    for line in block.splitlines():
        match = re.match(r"( *)(\S+)(?:\s+(.*))?$", line)
        indent, name = len(match.group(1)), match.group(2)
        if indent % 2 or not (name.endswith("/") or name.endswith(".py")):
            continue  # a description's continuation line
        level = indent // 2
        parents = parents[:level]
        path = "".join(parents) + name
        entries[path] = match.group(3) or ""
        if name.endswith("/"):
            parents.append(name)
    return entries


def test_every_path_the_tree_names_exists():
    missing = [path for path in tree_entries() if not (ROOT / path).exists()]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_package_and_root_module_is_in_the_tree():
    entries = tree_entries()
    wanted = [p.relative_to(ROOT).as_posix() + "/" for p in (ROOT / "tfbert").iterdir()
              if p.is_dir() and (p / "__init__.py").exists()]
    wanted += [p.relative_to(ROOT).as_posix() + "/" for p in (ROOT / "tfbert").glob("*/*")
               if p.is_dir() and (p / "__init__.py").exists()]
    wanted += [p.relative_to(ROOT).as_posix() for p in (ROOT / "tfbert").glob("*.py")]
    wanted += [p.relative_to(ROOT).as_posix() + "/" for p in (ROOT / "benchmarks").iterdir()
               if p.is_dir() and (p / "__init__.py").exists()]
    absent = sorted(set(wanted) - set(entries))
    assert not absent, f"docs/architecture.md's tree leaves out {absent}"


def test_at_most_six_modules_at_the_package_root():
    modules = [p.name for p in (ROOT / "tfbert").glob("*.py") if p.name != "__init__.py"]
    assert len(modules) <= 6, sorted(modules)
