"""CoNLL-U sentences (Universal Dependencies' format), read for the probes.

One token a line with ten tab-separated columns (ID FORM LEMMA UPOS XPOS
FEATS HEAD DEPREL DEPS MISC), `#` comment lines, a blank line after each
sentence. Multiword-token lines (`3-4`) and empty nodes (`5.1`) are skipped:
the probes read syntactic words. A malformed line, an ID out of sequence or a
HEAD outside its sentence is one line naming the file and the line.

Example:
>>> path = os.path.join(tempfile.mkdtemp(), "two.conllu")
>>> _ = open(path, "w").write(
...     "# text = Files open.\\n"
...     "1\\tFiles\\tfile\\tNOUN\\tNNS\\t_\\t2\\tnsubj\\t_\\t_\\n"
...     "2\\topen\\topen\\tVERB\\tVBP\\t_\\t0\\troot\\t_\\t_\\n"
...     "3\\t.\\t.\\tPUNCT\\t.\\t_\\t2\\tpunct\\t_\\t_\\n\\n")
>>> [s] = read_conllu(path)
>>> s.words, s.column("upos"), s.heads, s.line
(['Files', 'open', '.'], ['NOUN', 'VERB', 'PUNCT'], [2, 0, 2], 2)
"""

import dataclasses
import os
import tempfile  # noqa: F401  (the doctest)

from tfbert import config_loader

COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
LABEL_COLUMNS = ("form", "lemma", "upos", "xpos", "feats", "deprel", "misc")


@dataclasses.dataclass
class ConlluSentence:
    """One sentence: its `words` (FORM), every column's values (`column(name)`),
    `heads` (int, 0 = the root) and the file and line of its first token."""

    columns: dict
    heads: list
    path: str
    line: int

    @property
    def words(self):
        return self.columns["form"]

    def column(self, name):
        return self.columns[name]

    def where(self, index):
        """`file, line N`: where the sentence's word `index` is (comments and
        skipped multiword lines shift it; the reader keeps each token's line)."""
        return f"{self.path}, line {self.columns['_line'][index]}"


def read_conllu(path, field=None):
    """The sentences of a CoNLL-U file as `ConlluSentence`s. `field`, when
    given, must be a label column some token of the file fills (not `_`
    throughout), else a one-line error naming the file and the field."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No CoNLL-U file: {path}")
    if field is not None and field not in LABEL_COLUMNS:
        raise ValueError(f"{path}: --field={field!r} is not a CoNLL-U label column; "
                         f"choose from {list(LABEL_COLUMNS)}.")
    sentences, rows = [], []
    for n, line in config_loader.text_lines(path):
        line = line.rstrip("\n").rstrip("\r")
        if not line.strip():
            if rows:
                sentences.append(_sentence(rows, path))
            rows = []
            continue
        if line.startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) != 10:
            raise ValueError(f"{path}, line {n}: expected 10 tab-separated CoNLL-U columns, "
                             f"got {len(cells)}: {line[:60]!r}.")
        if "-" in cells[0] or "." in cells[0]:
            continue  # a multiword token or an empty node
        if not cells[0].isdigit() or int(cells[0]) != len(rows) + 1:
            raise ValueError(f"{path}, line {n}: token ID {cells[0]!r} out of sequence "
                             f"(expected {len(rows) + 1}).")
        rows.append((n, cells))
    if rows:
        sentences.append(_sentence(rows, path))
    if not sentences:
        raise ValueError(f"{path}: no sentences.")
    if field is not None and all(v == "_" for s in sentences for v in s.column(field)):
        raise ValueError(f"{path}: the file has no {field!r} values (the column is '_' in "
                         "every token); choose another --field.")
    return sentences


def _sentence(rows, path):
    columns = {name: [cells[i] for _, cells in rows] for i, name in enumerate(COLUMNS)}
    columns["_line"] = [n for n, _ in rows]
    heads = []
    for n, cells in rows:
        head = cells[6]
        if head == "_":
            heads.append(None)  # no syntax in this file: only the structural probe needs it
            continue
        if not head.isdigit():
            raise ValueError(f"{path}, line {n}: HEAD {head!r} is not a word number (0 for the "
                             "root, or '_').")
        if int(head) > len(rows):
            raise ValueError(f"{path}, line {n}: HEAD {head!r} points outside its sentence of "
                             f"{len(rows)} words.")
        heads.append(int(head))
    return ConlluSentence(columns=columns, heads=heads, path=path, line=rows[0][0])


def syntax_of(sentence):
    """The sentence's `heads`, checked to form one tree: every word has a HEAD,
    exactly one word's is 0 and no HEADs loop; else one line naming the file
    and line."""
    heads = sentence.heads
    if None in heads:
        raise ValueError(f"{sentence.where(heads.index(None))}: HEAD is '_'; the structural "
                         "and attention-head analyses need a parsed file.")
    roots = [i for i, h in enumerate(heads) if h == 0]
    if len(roots) != 1:
        raise ValueError(f"{sentence.where(0)}: the sentence has {len(roots)} roots "
                         "(HEAD 0), a tree has one.")
    for i in range(len(heads)):
        node, steps = i, 0
        while heads[node]:
            node, steps = heads[node] - 1, steps + 1
            if steps > len(heads):
                raise ValueError(f"{sentence.where(i)}: the HEADs loop; they do not form a tree.")
    return heads


def tree_distances(heads):
    """int `[n, n]` path lengths between the words of a tree (`heads`: 1-based,
    0 = root), by breadth-first search from every word (n <= a few hundred)."""
    n = len(heads)
    neighbours = [[] for _ in range(n)]
    for child, head in enumerate(heads):
        if head:
            neighbours[child].append(head - 1)
            neighbours[head - 1].append(child)
    dist = [[-1] * n for _ in range(n)]
    for source in range(n):
        dist[source][source] = 0
        frontier = [source]
        while frontier:
            nxt = []
            for node in frontier:
                for other in neighbours[node]:
                    if dist[source][other] < 0:
                        dist[source][other] = dist[source][node] + 1
                        nxt.append(other)
            frontier = nxt
    return dist


def tree_depths(heads):
    """Depth of every word (the root's is 0); `heads` checked by `syntax_of`."""
    depths = []
    for i in range(len(heads)):
        depth, node = 0, i
        while heads[node]:
            node, depth = heads[node] - 1, depth + 1
        depths.append(depth)
    return depths
