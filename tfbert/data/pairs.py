"""Readers for sentence-embedding data: pairs, triplets, scored and labelled pairs.

TSV, CSV or JSONL with column flags, over `tfbert.data.readers` (same
formats, same file-and-line errors). A missing column, an empty text or a
score outside `[min_score, max_score]` is one error naming the file and line.

Example (the task tests build real (query, passage) pairs the same way):
>>> import tempfile
>>> path = tempfile.mkdtemp() + "/pairs.tsv"
>>> _ = open(path, "w").write("query\\tpassage\\tscore\\nOpen a file.\\tReturn a stream.\\t4\\n")
>>> pairs = read_pairs(path, text_column="query", text_b_column="passage")
>>> pairs.anchor, pairs.positive, pairs.negative
(['Open a file.'], ['Return a stream.'], None)
>>> read_scored_pairs(path, "query", "passage", "score", max_score=5.0).score
[0.8]
"""

import dataclasses

from tfbert.data import readers


@dataclasses.dataclass
class SentencePairs:
    """Parallel lists; `negative`, `score` and `label` are None when not read.
    `line[i]` is the 1-based line of row i in `path`."""

    path: str
    anchor: list
    positive: list
    negative: list = None
    score: list = None
    label: list = None
    line: list = None

    def __len__(self):
        return len(self.anchor)

    def where(self, i):
        return f"{self.path}, line {self.line[i]}"


def read_pairs(path, text_column, text_b_column, negative_column=None, label_column=None,
               format=None, header=True):
    """(anchor, positive[, negative][, label]) rows; labels as stripped strings."""
    rows = readers.read_labeled_text(path, text_column=text_column, label_column=label_column,
                                     text_b_column=text_b_column, format=format, header=header)
    negative = None
    if negative_column is not None:
        # The readers take two text columns; a second pass reads the third. Both
        # passes skip the same blank lines, so rows line up (checked).
        extra = readers.read_labeled_text(path, text_column=negative_column, format=format,
                                          header=header)
        if extra.line != rows.line:
            raise ValueError(f"{path}: rows of the negative column {negative_column!r} do not "
                             "line up with the pair columns.")
        negative = extra.text
    return SentencePairs(path=path, anchor=rows.text, positive=rows.text_b, negative=negative,
                         label=rows.label, line=rows.line)


def read_triplets(path, anchor_column, positive_column, negative_column, format=None,
                  header=True):
    """(anchor, positive, negative) rows."""
    return read_pairs(path, anchor_column, positive_column, negative_column=negative_column,
                      format=format, header=header)


def read_scored_pairs(path, text_column, text_b_column, score_column, min_score=0.0,
                      max_score=1.0, format=None, header=True):
    """(text, text_b, score) rows; scores must lie in `[min_score, max_score]`
    and are returned rescaled to [0, 1] (STS-B's 0..5: `max_score=5`)."""
    if not max_score > min_score:
        raise ValueError(f"max_score ({max_score}) must be greater than min_score ({min_score}).")
    pairs = read_pairs(path, text_column, text_b_column, label_column=score_column,
                       format=format, header=header)
    scores = []
    for i, raw in enumerate(pairs.label):
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"{pairs.where(i)}: score {raw!r} in column {score_column!r} "
                             "is not a number.") from None
        if not min_score <= value <= max_score:  # also rejects nan
            raise ValueError(f"{pairs.where(i)}: score {value:g} in column {score_column!r} is "
                             f"outside [{min_score:g}, {max_score:g}].")
        scores.append((value - min_score) / (max_score - min_score))
    pairs.score, pairs.label = scores, None
    return pairs
