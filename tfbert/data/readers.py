"""Readers for fine-tuning data: labelled text (TSV/CSV/JSONL) and CoNLL-2003.

Every error names the file and the 1-based line, so a bad row is found in
seconds. Readers return plain Python lists; `tfbert.tasks` turns them into
`tf.data` pipelines (tokenization happens there, in the graph).

Example (a GLUE SST-2 style TSV with a header line `sentence<TAB>label`):
>>> examples = read_labeled_text("tests/data/finetune/sentiment_train.tsv",
...                              text_column="sentence", label_column="label")
>>> examples.text[0], examples.label[0]
('I think the video game made me happy .', 'positive')
"""

import csv
import dataclasses
import json
import os

FORMATS = ("tsv", "csv", "jsonl")


@dataclasses.dataclass
class TextExamples:
    """Parallel lists; `text_b` is None for single sentences, `label` is None
    without a label column. `line[i]` is the 1-based line of example i."""

    path: str
    text: list
    text_b: list = None
    label: list = None
    line: list = None

    def __len__(self):
        return len(self.text)

    def where(self, i):
        return f"{self.path}, line {self.line[i]}"


@dataclasses.dataclass
class TaggedSentences:
    """CoNLL sentences: `words[i]` and `tags[i]` are lists of equal length;
    `line[i]` is the line of the sentence's first word."""

    path: str
    words: list
    tags: list
    line: list

    def __len__(self):
        return len(self.words)

    def where(self, i):
        return f"{self.path}, line {self.line[i]}"


def _check_file(path):
    if os.path.isdir(path):  # not "not found": it is there, but not a file
        raise ValueError(f"{path} is a directory, not a data file.")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Data file not found: {path}")
    if os.path.getsize(path) == 0:
        raise ValueError(f"{path}: the file is empty.")


def _format_of(path, fmt):
    if fmt is None:
        fmt = os.path.splitext(path)[1].lstrip(".").lower()
        fmt = {"txt": "tsv", "json": "jsonl", "ndjson": "jsonl"}.get(fmt, fmt)
    if fmt not in FORMATS:
        raise ValueError(f"{path}: unknown format {fmt!r}; use one of {list(FORMATS)} "
                         "(set it explicitly when the file extension does not say).")
    return fmt


def jsonl_rows(path):
    """Yields `(line number, dict)` of a JSONL file (blank lines skipped);
    a missing or empty file, bad JSON, a row that is not an object or text
    that is not UTF-8 is a one-line error naming the file and line."""
    _check_file(path)
    yield from _rows(path, "jsonl")


def _rows(path, fmt):
    """Yields (line_number, row): a list of fields (tsv/csv) or a dict (jsonl).
    A UTF-8 byte-order mark (Excel, Notepad) is skipped."""
    try:
        yield from _rows_of_text(path, fmt)
    except UnicodeDecodeError as e:
        with open(path, "rb") as f:
            line = f.read()[: e.start].count(b"\n") + 1
        raise ValueError(f"{path}, line {line}: not UTF-8 text ({e.reason}).") from None


def _rows_of_text(path, fmt):
    with open(path, encoding="utf-8-sig", newline="") as f:
        if fmt == "jsonl":
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}, line {n}: not valid JSON ({e.msg}, "
                                     f"column {e.colno}).") from None
                if not isinstance(row, dict):
                    raise ValueError(f"{path}, line {n}: expected a JSON object, "
                                     f"got {type(row).__name__}.")
                yield n, row
            return
        # GLUE TSVs contain bare quote characters, so TSV reads without quoting.
        # strict: an unterminated quote is an error, not one field that
        # silently swallows every later row.
        reader = (csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE) if fmt == "tsv"
                  else csv.reader(f, strict=True))
        start = 1  # line where the row being read begins
        try:
            for row in reader:
                if row and any(field.strip() for field in row):
                    yield start, row
                start = reader.line_num + 1
        except csv.Error as e:
            if "unexpected end of data" in str(e):
                raise ValueError(f"{path}, line {start}: a quote opened on this line is never "
                                 "closed.") from None
            raise ValueError(f"{path}, line {reader.line_num}: malformed CSV ({e}).") from None


def read_labeled_text(path, text_column, label_column=None, text_b_column=None,
                      format=None, header=True, label_separator=None):
    """Reads a TSV, CSV or JSONL file of (text, optional text_b, optional label).

    Args:
      path: the file; `format` ("tsv" | "csv" | "jsonl") defaults to its extension.
      text_column, text_b_column, label_column: column names (from the header
        line, or JSON keys) or 0-based integer indices (TSV/CSV). `text_b_column`
        and `label_column` may be None.
      header: TSV/CSV only: whether the first line names the columns (GLUE's
        CoLA has none; the others do).

      label_separator: set for multi-label data: each label is then a list
        of strings (a JSON list, or the column split at this separator; an
        empty or missing value is an example with no label).

    Returns a `TextExamples`. Labels are kept as stripped strings.
    """
    _check_file(path)
    fmt = _format_of(path, format)
    wanted = {"text": text_column, "text_b": text_b_column, "label": label_column}
    wanted = {k: v for k, v in wanted.items() if v is not None}
    if fmt == "jsonl":
        for key, col in wanted.items():
            if not isinstance(col, str):
                raise ValueError(f"{path}: JSONL columns are keys; {key}_column={col!r} is not.")
    columns, out = None, {"text": [], "text_b": [], "label": [], "line": []}
    rows = _rows(path, fmt)
    for n, row in rows:
        if fmt != "jsonl" and columns is None:
            columns = {}
            names = [c.strip() for c in row] if header else None
            for key, col in wanted.items():
                if isinstance(col, str):
                    if names is None:
                        raise ValueError(f"{path}: {key}_column={col!r} is a name but header=False; "
                                         "use a 0-based column index.")
                    if col not in names:
                        raise ValueError(f"{path}, line {n}: no column named {col!r} for "
                                         f"{key}_column; the header has {names}.")
                    columns[key] = names.index(col)
                else:
                    columns[key] = int(col)
            if header:
                continue
        values = {}
        for key, col in wanted.items():
            if fmt == "jsonl":
                if col not in row:
                    raise ValueError(f"{path}, line {n}: no key {col!r} ({key}_column); "
                                     f"the object has keys {sorted(row)}.")
                value = row[col]
                value = "" if value is None else value
                if key == "label" and label_separator is not None:
                    # Multi-label: a list of label names, or one string split at the
                    # separator. A number would silently become a label named "1".
                    names = value if isinstance(value, list) else [value]
                    if not all(isinstance(v, str) for v in names):
                        raise ValueError(f"{path}, line {n}: the {col!r} labels must be strings "
                                         f"(a list of names, or one string), got {value!r:.60}.")
                    if isinstance(value, list):
                        values[key] = [v.strip() for v in value if v.strip()]
                        continue
            else:
                index = columns[key]
                if not -len(row) <= index < len(row):
                    raise ValueError(f"{path}, line {n}: {key}_column is column {index} but the "
                                     f"line has {len(row)} field(s).")
                value = row[index]
            values[key] = str(value).strip() if not isinstance(value, str) else value.strip()
        for key in ("text", "text_b"):
            if key in values and not values[key]:
                raise ValueError(f"{path}, line {n}: the {key} column "
                                 f"{wanted[key]!r} is empty.")
        if label_separator is not None and isinstance(values.get("label"), str):
            values["label"] = [v.strip() for v in values["label"].split(label_separator)
                               if v.strip()]
        if "label" in values and values["label"] == "":
            raise ValueError(f"{path}, line {n}: the label column {wanted['label']!r} is empty.")
        for key, value in values.items():
            out[key].append(value)
        out["line"].append(n)
    if not out["text"]:
        raise ValueError(f"{path}: no examples (only a header or blank lines).")
    return TextExamples(
        path=path,
        text=out["text"],
        text_b=out["text_b"] if text_b_column is not None else None,
        label=out["label"] if label_column is not None else None,
        line=out["line"],
    )


def encode_labels(examples, label_list):
    """Class ids of `examples.label` in `label_list`; an unknown label is an
    error naming the file, line and the valid labels."""
    index = {str(l): i for i, l in enumerate(label_list)}
    ids = []
    for i, label in enumerate(examples.label):
        if label not in index:
            raise ValueError(f"{examples.where(i)}: label {label!r} is not in the label list "
                             f"{list(index)}.")
        ids.append(index[label])
    return ids


def parse_float_labels(examples):
    """Regression targets as floats; a non-number is an error naming file and line."""
    values = []
    for i, label in enumerate(examples.label):
        try:
            values.append(float(label))
        except ValueError:
            raise ValueError(f"{examples.where(i)}: regression label {label!r} "
                             "is not a number.") from None
    return values


def read_conll(path, word_column=0, tag_column=-1):
    """Reads CoNLL-2003 style data: one `word ... tag` line per token
    (whitespace-separated columns), a blank line between sentences,
    `-DOCSTART-` lines skipped.

    `tag_column` picks the tag (-1: the last, NER in CoNLL-2003; 1: POS).
    A line with too few columns is an error naming the file and line.
    """
    _check_file(path)
    words, tags, lines = [], [], []
    cur_words, cur_tags, start = [], [], None

    def flush():
        if cur_words:
            words.append(list(cur_words))
            tags.append(list(cur_tags))
            lines.append(start)
        cur_words.clear()
        cur_tags.clear()

    needed = max(word_column if word_column >= 0 else -word_column - 1,
                 tag_column if tag_column >= 0 else -tag_column - 1) + 1
    with open(path, encoding="utf-8-sig") as f:  # skips a byte-order mark
        for n, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                flush()
                continue
            if fields[0] == "-DOCSTART-":
                flush()
                continue
            if len(fields) < max(needed, 2):
                raise ValueError(f"{path}, line {n}: expected 'word ... tag' columns, got "
                                 f"{len(fields)} field(s): {line.rstrip()!r}.")
            if not cur_words:
                start = n
            cur_words.append(fields[word_column])
            cur_tags.append(fields[tag_column])
    flush()
    if not words:
        raise ValueError(f"{path}: no sentences (only blank or -DOCSTART- lines).")
    return TaggedSentences(path=path, words=words, tags=tags, line=lines)


def encode_tags(sentences, label_list):
    """Tag ids per sentence; an unknown tag is an error naming file, line and tag."""
    index = {l: i for i, l in enumerate(label_list)}
    ids = []
    for i, seq in enumerate(sentences.tags):
        row = []
        for j, tag in enumerate(seq):
            if tag not in index:
                raise ValueError(f"{sentences.path}, line {sentences.line[i] + j}: tag {tag!r} "
                                 f"is not in the label list {list(index)}.")
            row.append(index[tag])
        ids.append(row)
    return ids


def encode_multi_labels(examples, label_list):
    """`[examples, labels]` 0/1 float32 matrix of `examples.label` (lists);
    an unknown label is an error naming the file, line and the valid labels.

    >>> class Examples:  # what read_labeled_text(..., label_separator=",") returns
    ...     label = [["b"], [], ["a", "b"]]
    ...     def where(self, i): return f"f.tsv, line {i + 2}"
    >>> encode_multi_labels(Examples(), ["a", "b"]).tolist()
    [[0.0, 1.0], [0.0, 0.0], [1.0, 1.0]]
    """
    import numpy as np

    index = {str(l): i for i, l in enumerate(label_list)}
    out = np.zeros((len(examples.label), len(label_list)), np.float32)
    for i, labels in enumerate(examples.label):
        for label in labels:
            if label not in index:
                raise ValueError(f"{examples.where(i)}: label {label!r} is not in the label list "
                                 f"{list(index)}.")
            out[i, index[label]] = 1.0
    return out
