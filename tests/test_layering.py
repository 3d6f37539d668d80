"""The layout's import rules (docs/architecture.md), checked on the source's AST.

Data flows one way: text -> encoder -> models -> tasks -> train/export -> tools.
The lower layers (text/, layers/, encoder.py, config.py, train/, metrics/,
data/) never import models/, tasks/, export/ or tools, and no module of
tfbert/ imports itself back through a cycle.
"""

import ast
import importlib
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tfbert"
LOWER = ("tfbert.text", "tfbert.layers", "tfbert.encoder", "tfbert.config", "tfbert.train",
         "tfbert.metrics", "tfbert.data")
UPPER = ("tfbert.tasks", "tfbert.models", "tfbert.export", "tools")


def module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules():
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path, name):
    """Modules named by `import` / `from ... import` anywhere in the file
    (function-level imports count too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            found.add(base)
            # `from tfbert.tasks import base` names the module tfbert.tasks.base.
            found.update(f"{base}.{a.name}" for a in node.names)
    return found


def within(name, prefixes):
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def internal_graph():
    mods = modules()
    return {name: {m for m in imports_of(path, name) if m in mods and m != name}
            for name, path in mods.items()}


def test_every_module_imports():
    for name in modules():
        importlib.import_module(name)


def test_lower_layers_never_import_upper_ones():
    bad = []
    for name, path in modules().items():
        if within(name, LOWER):
            bad += [f"{name} imports {m}" for m in imports_of(path, name) if within(m, UPPER)]
    assert not bad, "\n".join(bad)


def find_cycles(graph):
    state, stack, cycles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def test_no_import_cycles():
    graph = internal_graph()
    # A package's __init__ importing its own submodules is how the package
    # is assembled, not a cycle back into it.
    for name in graph:
        graph[name] = {m for m in graph[name] if not m.startswith(name + ".")}
    cycles = find_cycles(graph)
    assert not cycles, "\n".join(cycles)


def test_cycle_finder_finds_cycles():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a -> b -> c -> a"]
    assert find_cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


@pytest.mark.parametrize("source, expected", [
    ("from tfbert.models import classifier", {"tfbert.models", "tfbert.models.classifier"}),
    ("import tfbert.export.serving", {"tfbert.export.serving"}),
    ("def f():\n    from tfbert.tasks.base import Task", {"tfbert.tasks.base",
                                                          "tfbert.tasks.base.Task"}),
])
def test_import_walker_sees_every_form(tmp_path, source, expected):
    path = tmp_path / "probe.py"
    path.write_text(source)
    assert imports_of(path, "tfbert.train.probe") == expected
