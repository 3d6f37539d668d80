"""Reader for cross-encoder (reranker) training data: JSONL rows of two shapes.

    {"query": ..., "passage": ..., "label": 0 or 1 (or a float in [0, 1])}   pointwise
    {"query": ..., "positive": ..., "negatives": [...]}                     listwise

A file holds one shape (the first row decides; a row of the other shape is
an error). Every error names the file and the 1-based line: an empty query,
passage or negative, a label outside [0, 1], an empty negatives list.

Example:
>>> import tempfile
>>> path = tempfile.mkdtemp() + "/rows.jsonl"
>>> _ = open(path, "w").write('{"query": "open a file", "positive": "Open file and return a '
...                           'stream.", "negatives": ["Sort a list.", "Join paths."]}\\n')
>>> rows = read_rerank_rows(path)
>>> rows.kind, rows.query, rows.negatives
('listwise', ['open a file'], [['Sort a list.', 'Join paths.']])
>>> rows.groups()[0]
('open a file', ['Open file and return a stream.', 'Sort a list.', 'Join paths.'], [1.0, 0.0, 0.0])
"""

import dataclasses

from tfbert.data import readers

KINDS = ("pointwise", "listwise")


@dataclasses.dataclass
class RerankRows:
    """Parallel lists. Pointwise: `passage`, `label`; listwise: `positive`,
    `negatives` (a list per row). `line[i]` is the 1-based line of row i."""

    path: str
    kind: str
    query: list
    passage: list = None
    label: list = None
    positive: list = None
    negatives: list = None
    line: list = None

    def __len__(self):
        return len(self.query)

    def where(self, i):
        return f"{self.path}, line {self.line[i]}"

    def groups(self):
        """`[(query, candidates, labels)]`: one group per query (pointwise rows
        of the same query are gathered, in file order); what reranking is scored on."""
        if self.kind == "listwise":
            return [(q, [p] + list(n), [1.0] + [0.0] * len(n))
                    for q, p, n in zip(self.query, self.positive, self.negatives)]
        groups = {}
        for q, p, y in zip(self.query, self.passage, self.label):
            group = groups.setdefault(q, ([], []))
            group[0].append(p)
            group[1].append(y)
        return [(q, c, y) for q, (c, y) in groups.items()]


def _text(row, key, where):
    value = row.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{where}: {key!r} must be a string, got {value!r:.60}.")
    if not value.strip():
        raise ValueError(f"{where}: empty {key}.")
    return value


def read_rerank_rows(path, query_column="query", passage_column="passage", label_column="label",
                     positive_column="positive", negatives_column="negatives"):
    """Reads a JSONL file of pointwise or listwise rows (see module doc)."""
    rows = RerankRows(path=path, kind="", query=[], line=[])
    for n, row in readers.jsonl_rows(path):
        where = f"{path}, line {n}"
        kind = "listwise" if positive_column in row else (
            "pointwise" if passage_column in row else None)
        if kind is None:
            raise ValueError(f"{where}: a row needs {passage_column!r} and {label_column!r} "
                             f"(pointwise) or {positive_column!r} and {negatives_column!r} "
                             f"(listwise); got keys {sorted(row)}.")
        if not rows.kind:
            rows.kind = kind
            if kind == "listwise":
                rows.positive, rows.negatives = [], []
            else:
                rows.passage, rows.label = [], []
        elif kind != rows.kind:
            raise ValueError(f"{where}: a {kind} row in a file of {rows.kind} rows "
                             f"(line {rows.line[0]}); use one shape per file.")
        rows.query.append(_text(row, query_column, where))
        rows.line.append(n)
        if kind == "listwise":
            rows.positive.append(_text(row, positive_column, where))
            negatives = row.get(negatives_column)
            if not isinstance(negatives, list) or not negatives:
                raise ValueError(f"{where}: {negatives_column!r} must be a non-empty list of "
                                 f"strings, got {negatives!r:.60}.")
            rows.negatives.append([_text({negatives_column: t}, negatives_column, where)
                                   for t in negatives])
        else:
            rows.passage.append(_text(row, passage_column, where))
            label = row.get(label_column)
            if isinstance(label, bool) or not isinstance(label, (int, float)) or not (
                    0.0 <= label <= 1.0):
                raise ValueError(f"{where}: {label_column!r} must be a number in [0, 1] "
                                 f"(1 relevant, 0 not), got {label!r:.60}.")
            rows.label.append(float(label))
    if not rows.query:
        raise ValueError(f"{path}: no rows.")
    return rows
