"""Real (query, passage) pairs from the docstrings of the Python standard
library (every machine has them).

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

import importlib
import inspect
import random

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


def docstring_pairs():
    """`(module, query, passage)`: each distinct query and passage once, in a
    fixed order (sorted module by module, attribute by attribute, then
    shuffled with seed 0)."""
    seen_q, seen_p, rows = set(), set(), []
    for module, _, obj in stdlib_objects():
        doc = inspect.getdoc(obj) if inspect.isfunction(obj) or inspect.isclass(obj) else None
        if not doc:
            continue
        paragraphs = [p for p in doc.split("\n\n") if p.strip()]
        lines = paragraphs[0].split("\n")
        if len(lines) > 1:  # summary line, then the rest of its paragraph
            query, passage = lines[0], " ".join(lines[1:])
        elif len(paragraphs) > 1:  # PEP 257: summary line, blank line, body
            query, passage = lines[0], paragraphs[1]
        else:
            continue
        query, passage = " ".join(query.split()), " ".join(passage.split())
        if (len(query) < 15 or len(passage) < 40 or query in seen_q or passage in seen_p
                or passage.startswith((">>>", ":", "Args", "Parameters", "Example"))):
            continue
        seen_q.add(query)
        seen_p.add(passage)
        rows.append((module, query, passage))
    random.Random(0).shuffle(rows)
    return rows
