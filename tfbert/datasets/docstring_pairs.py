"""Real (query, passage) pairs from the docstrings of the Python standard
library (every machine has them) and, for more training rows, of installed
packages (`package_docstring_pairs`).

The rule: for each documented function or class of `MODULES`, the summary
line of its docstring is the query, and the rest of its first paragraph (or,
PEP 257 style, its next paragraph) is the passage. Pairs with a short query
or passage, a passage that is code or an argument list, or a query or passage
seen before are left out.

    >>> rows = docstring_pairs()
    >>> len(rows) > 1000
    True
    >>> module, query, passage = rows[0]
    >>> module in MODULES
    True
"""

import ast
import glob
import importlib
import importlib.util
import inspect
import random
import re

MODULES = ("argparse ast asyncio.base_events base64 bisect bz2 calendar codecs collections "
           "concurrent.futures configparser contextlib copy csv dataclasses datetime decimal "
           "difflib email.message enum filecmp fnmatch fractions ftplib functools getopt gettext "
           "glob gzip hashlib heapq hmac http.client imaplib inspect io ipaddress itertools json "
           "locale logging lzma mailbox mimetypes multiprocessing.pool netrc numbers operator "
           "optparse os pathlib pdb pickle pkgutil platform plistlib poplib pprint queue random "
           "re reprlib sched secrets selectors shelve shlex shutil smtplib socket socketserver "
           "sqlite3 ssl statistics string struct subprocess sysconfig tarfile tempfile textwrap "
           "threading timeit tokenize trace traceback typing unittest.case urllib.parse "
           "urllib.request uuid warnings wave weakref xml.dom.minidom xml.etree.ElementTree "
           "zipfile zipimport").split()


def stdlib_objects():
    """`(module, dotted name, object)`: the functions and classes defined in
    each of `MODULES`, and the methods of those classes, in sorted order."""
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except Exception:  # a module missing on this build (e.g. no _ssl)
            continue
        for attr, obj in sorted(vars(module).items()):
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            yield name, f"{name}.{attr}", obj
            if inspect.isclass(obj):
                for m, f in sorted(vars(obj).items()):
                    if inspect.isfunction(f):
                        yield name, f"{name}.{attr}.{m}", f


def pair_of(doc):
    """`(query, passage)` from one docstring by the rule above, or None."""
    paragraphs = [p for p in doc.split("\n\n") if p.strip()]
    if not paragraphs:
        return None
    lines = paragraphs[0].split("\n")
    if len(lines) > 1:  # summary line, then the rest of its paragraph
        query, passage = lines[0], " ".join(lines[1:])
    elif len(paragraphs) > 1:  # PEP 257: summary line, blank line, body
        query, passage = lines[0], paragraphs[1]
    else:
        return None
    query, passage = " ".join(query.split()), " ".join(passage.split())
    if (len(query) < 15 or len(passage) < 40
            or passage.startswith((">>>", ":", "Args", "Parameters", "Example"))):
        return None
    return query, passage


def _distinct(rows, seen_q, seen_p):
    """`rows` less any whose query or passage is in `seen_q`/`seen_p` (which grow)."""
    kept = []
    for module, query, passage in rows:
        if query not in seen_q and passage not in seen_p:
            seen_q.add(query)
            seen_p.add(passage)
            kept.append((module, query, passage))
    return kept


def docstring_pairs():
    """`(module, query, passage)`: each distinct query and passage once, in a
    fixed order (sorted module by module, attribute by attribute, then
    shuffled with seed 0)."""
    rows = []
    for module, _, obj in stdlib_objects():
        doc = inspect.getdoc(obj) if inspect.isfunction(obj) or inspect.isclass(obj) else None
        pair = pair_of(doc) if doc else None
        if pair:
            rows.append((module, *pair))
    rows = _distinct(rows, set(), set())
    random.Random(0).shuffle(rows)
    return rows


def package_docstring_pairs(packages=("tensorflow", "keras", "numpy"), exclude=()):
    """`(package, query, passage)` by the same rule from the functions and classes
    in the source files of installed `packages` (read with `ast`, not imported;
    test files skipped), each distinct query and passage once, none that is in
    `exclude` (`(query, passage)` pairs, e.g. a test set), shuffled with seed 0.
    What it returns depends on the installed versions.

    >>> rows = package_docstring_pairs(("json",))
    >>> sorted({package for package, _, _ in rows})
    ['json']
    """
    rows = []
    for package in packages:
        spec = importlib.util.find_spec(package)
        if spec is None or not (spec.submodule_search_locations or spec.origin):
            raise ValueError(f"package_docstring_pairs: {package!r} is not installed")
        if spec.submodule_search_locations:  # a package: its source tree
            paths = sorted(p for root in spec.submodule_search_locations
                           for p in glob.glob(f"{root}/**/*.py", recursive=True)
                           if not re.search(r"/tests?/|/test_[^/]*$|_test\.py$", p))
        elif spec.origin.endswith(".py"):  # a single-file module
            paths = [spec.origin]
        else:
            raise ValueError(f"package_docstring_pairs: {package!r} has no Python source")
        for path in paths:
            try:
                with open(path, encoding="utf-8") as f:
                    tree = ast.parse(f.read())
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue  # a template or a file for another Python version
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    doc = ast.get_docstring(node)
                    pair = pair_of(doc) if doc else None
                    if pair:
                        rows.append((package, *pair))
    rows = _distinct(rows, {q for q, _ in exclude}, {p for _, p in exclude})
    random.Random(0).shuffle(rows)
    return rows
