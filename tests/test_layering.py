"""The layout's import rules (docs/architecture.md), checked on the source's AST.

Data flows one way: text -> encoder -> models -> tasks -> train -> runs -> tools,
with export/'s writers under models/ (never importing models/, tasks/ or runs/).
The lower layers (text/, layers/, encoder.py, config.py, train/, metrics/,
data/) never import models/, tasks/, export/ or tools, and no module of
tfbert/ imports itself back through a cycle; neither does a subpackage
(`tfbert.text`, `tfbert.data`, ... each taken as one node).

benchmarks/: no `bench_*` module imports another (what two share lives in
benchmarks/common/), and benchmarks/common/ never imports a `bench_*` module.
"""

import ast
import importlib
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tfbert"
BENCHMARKS = ROOT / "benchmarks"
LOWER = ("tfbert.text", "tfbert.layers", "tfbert.encoder", "tfbert.config", "tfbert.train",
         "tfbert.metrics", "tfbert.data")
UPPER = ("tfbert.tasks", "tfbert.models", "tfbert.export", "tools")


def module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules(folder=PACKAGE):
    return {module_name(p): p for p in sorted(folder.rglob("*.py"))}


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


# === Subpackages as nodes ===

def package_of(name):
    """`tfbert.text.vocab` -> `tfbert.text`; a root module (`tfbert.checkpoint`) is its own node."""
    return ".".join(name.split(".")[:2])


def package_graph(graph):
    """Module edges folded into edges between subpackages. The root package
    (`tfbert/__init__.py`) assembles the public names from all of them: it is
    left out, as in test_no_import_cycles."""
    packages = {}
    for name, targets in graph.items():
        if name == "tfbert":
            continue
        node = package_of(name)
        packages.setdefault(node, set()).update(
            package_of(t) for t in targets if package_of(t) not in (node, "tfbert"))
    return packages


def test_no_package_cycles():
    graph = package_graph(internal_graph())
    assert {"tfbert.text", "tfbert.data", "tfbert.models"} <= set(graph)
    cycles = find_cycles(graph)
    assert not cycles, "\n".join(cycles)


def test_export_writers_never_import_models_tasks_or_runs():
    """export/ sits under models/: a strings-in model's export() calls its writers."""
    bad = [f"{name} imports {m}" for name, path in modules().items()
           if within(name, ("tfbert.export",))
           for m in imports_of(path, name)
           if within(m, ("tfbert.models", "tfbert.tasks", "tfbert.runs"))]
    assert not bad, "\n".join(bad)


def test_package_graph_folds_modules():
    graph = {"tfbert": {"tfbert.text.vocab"}, "tfbert.text.vocab": {"tfbert.text.packer"},
             "tfbert.text.packer": set(), "tfbert.text.extension": {"tfbert.data.documents"},
             "tfbert.data.documents": {"tfbert.text.vocab", "tfbert"}}
    assert package_graph(graph) == {"tfbert.text": {"tfbert.data"},
                                    "tfbert.data": {"tfbert.text"}}
    assert find_cycles(package_graph(graph)) == ["tfbert.data -> tfbert.text -> tfbert.data"]


# === benchmarks/ ===

def is_benchmark(name):
    """`benchmarks.bench_x` (or a name inside it, `benchmarks.bench_x.run`)."""
    parts = name.split(".")
    return parts[0] == "benchmarks" and len(parts) > 1 and parts[1].startswith("bench_")


def benchmark_violations(mods):
    """`a imports b` lines: a bench_* module importing another bench_* module,
    or a benchmarks.common module importing any."""
    bad = []
    for name, path in mods.items():
        if not (is_benchmark(name) or within(name, ("benchmarks.common",))):
            continue
        own = ".".join(name.split(".")[:2])
        for m in sorted(imports_of(path, name)):
            if is_benchmark(m) and not within(m, (own,)):
                bad.append(f"{name} imports {m}")
    return bad


def test_no_benchmark_imports_another():
    mods = modules(BENCHMARKS)
    assert sum(is_benchmark(name) for name in mods) > 10  # the walk found them
    assert any(within(name, ("benchmarks.common",)) for name in mods)
    bad = benchmark_violations(mods)
    assert not bad, "\n".join(bad)


def test_benchmark_rule_catches_every_form(tmp_path):
    (tmp_path / "common").mkdir()
    probes = {
        "benchmarks.bench_a": ("bench_a.py", "from benchmarks import bench_b"),
        "benchmarks.bench_c": ("bench_c.py", "def f():\n    from benchmarks.bench_d import run"),
        "benchmarks.common.x": ("common/x.py", "import benchmarks.bench_e"),
        "benchmarks.bench_ok": ("bench_ok.py", "from benchmarks.common.x import y"),
    }
    mods = {}
    for name, (file, source) in probes.items():
        (tmp_path / file).write_text(source)
        mods[name] = tmp_path / file
    assert benchmark_violations(mods) == [
        "benchmarks.bench_a imports benchmarks.bench_b",
        "benchmarks.bench_c imports benchmarks.bench_d",
        "benchmarks.bench_c imports benchmarks.bench_d.run",
        "benchmarks.common.x imports benchmarks.bench_e",
    ]
