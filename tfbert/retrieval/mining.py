"""Hard-negative mining: for each (query, positive), the bi-encoder's most similar
passages that are not the positive (sentence-transformers' `util.mine_hard_negatives`).

The candidates are the corpus (default: all the positives) ranked by cosine
to the query with the exact chunked search. Guards against false negatives
(a passage as relevant as the positive, only not labelled so):

- `range_min` / `range_max`: skip the first `range_min` candidates, look no
  further than rank `range_max` (0-based, over the corpus minus the positive);
- `absolute_margin`: keep a candidate only if `score < positive score - margin`;
- `relative_margin`: only if `score < positive score * (1 - relative_margin)`;
- `max_score`: only if `score <= max_score`;
- `num_negatives`: at most this many per query (hardest first).

A candidate whose text equals the positive or the query never counts, and a
passage the corpus holds more than once is one candidate (a row never repeats a
negative). Embeddings with a NaN or infinite value are refused, naming the text.
`write_rows` writes the result for the trainers, atomically:

    "triplet"    {"anchor", "positive", "negative"} one row per negative:
                 `--task=sentence_embedding` with `negative_column: negative`
                 (the ranking loss's hard negative)
    "listwise"   {"query", "positive", "negatives": [...]}: `--task=cross_encoder`
    "pointwise"  {"query", "passage", "label"} (1 for the positive, 0 each
                 negative): `--task=cross_encoder` with BCE

Example (embeddings given, so no model runs):
>>> pairs = [("q0", "p0"), ("q1", "p1")]
>>> corpus = ["p0", "p1", "n0", "n1"]
>>> emb = {"q0": [1, 0], "q1": [0, 1], "p0": [1, 0.1], "p1": [0.1, 1], "n0": [1, 0.3],
...        "n1": [0.9, 0.9]}
>>> mined = mine_hard_negatives(pairs, corpus, embed=lambda t: np.array([emb[x] for x in t]),
...                             num_negatives=2)
>>> [(m.query, m.negatives) for m in mined]
[('q0', ['n0', 'n1']), ('q1', ['n1', 'n0'])]
>>> mine_hard_negatives(pairs, corpus, embed=lambda t: np.array([emb[x] for x in t]),
...                     num_negatives=2, absolute_margin=0.1)[0].negatives  # n0: too close
['n1', 'p1']
"""

import dataclasses
import json

import numpy as np

from tfbert.atomic import write_text
from tfbert.config_loader import check_int, check_number
from tfbert.retrieval.search import as_embeddings, semantic_search

FORMATS = ("triplet", "listwise", "pointwise")


@dataclasses.dataclass
class MinedRow:
    """A query, its positive and the mined negatives (hardest first) with their scores."""

    query: str
    positive: str
    negatives: list
    scores: list
    positive_score: float


def mine_hard_negatives(pairs, corpus=None, encoder=None, num_negatives=3, range_min=0,
                        range_max=50, absolute_margin=None, relative_margin=None, max_score=None,
                        batch_size=32, embed=None, keep_empty=False):
    """`[MinedRow]` for `pairs` `[(query, positive)]` (see module doc).

    `encoder`: a `tfbert.SentenceEncoder` (or pass `embed`, a function from a
    list of texts to `[n, dim]` embeddings). `corpus`: default the positives.
    Rows that end with no negative are dropped unless `keep_empty`.
    """
    if pairs is None or isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__iter__"):
        raise TypeError("mine_hard_negatives takes a list of (query, positive) pairs, got "
                        f"{type(pairs).__name__}.")
    pairs = [tuple(p) if isinstance(p, (list, tuple)) else (p,) for p in pairs]
    if not pairs:
        raise ValueError("mine_hard_negatives got no (query, positive) pairs.")
    for i, pair in enumerate(pairs):
        if len(pair) != 2 or not all(isinstance(t, str) and t.strip() for t in pair):
            raise ValueError(f"pair {i} must be two non-empty strings (query, positive), "
                             f"got {pair!r:.80}.")
    num_negatives = check_int(num_negatives, "num_negatives", 1)
    range_min = check_int(range_min, "range_min", 0)
    range_max = check_int(range_max, "range_max", 1)
    if not range_min < range_max:
        raise ValueError(f"need 0 <= range_min < range_max, got {range_min} and {range_max}.")
    absolute_margin = check_number(absolute_margin, "absolute_margin", allow_none=True)
    relative_margin = check_number(relative_margin, "relative_margin", 0, 1, allow_none=True,
                                   high_open=True)
    max_score = check_number(max_score, "max_score", allow_none=True)
    batch_size = check_int(batch_size, "batch_size", 1)
    if embed is None:
        if encoder is None:
            raise ValueError("mine_hard_negatives needs encoder= (a SentenceEncoder) or embed=.")
        if isinstance(encoder, (str, bytes)) or not callable(getattr(encoder, "encode", None)):
            raise TypeError("encoder must be a SentenceEncoder (it embeds with .encode), got "
                            f"{type(encoder).__name__}.")
        embed = lambda texts: encoder.encode(texts, batch_size=batch_size)
    elif not callable(embed):
        raise TypeError(f"embed must be a function from texts to [n, dim] embeddings, got "
                        f"{type(embed).__name__}.")
    queries = [q for q, _ in pairs]
    positives = [p for _, p in pairs]
    if corpus is None:
        corpus = positives
    elif isinstance(corpus, (str, bytes)) or not hasattr(corpus, "__iter__"):
        raise TypeError(f"corpus must be a list of passages, got {type(corpus).__name__}.")
    corpus = list(corpus)
    if not corpus or any(not isinstance(t, str) or not t.strip() for t in corpus):
        raise ValueError("The corpus must be a non-empty list of non-empty strings.")
    # One candidate per distinct passage: a passage held three times would otherwise
    # fill a row's three negatives with the same sentence.
    corpus = list(dict.fromkeys(corpus))

    def embeddings(texts, what):
        emb = as_embeddings(embed(texts), f"the embeddings of the {what}")
        if len(emb) != len(texts):
            raise ValueError(f"embed returned {len(emb)} embeddings for {len(texts)} {what}.")
        return emb

    corpus_emb = embeddings(corpus, "corpus passages")
    query_emb = embeddings(queries, "queries")
    positive_emb = embeddings(positives, "positives")
    if corpus_emb.shape[1:] != query_emb.shape[1:]:
        raise ValueError(f"Corpus embeddings have dim {corpus_emb.shape[1:]}, queries "
                         f"{query_emb.shape[1:]}.")
    unit = lambda x: x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    positive_scores = (unit(query_emb) * unit(positive_emb)).sum(1)
    # Enough candidates for range_max after the positive and query copies are removed.
    k = min(len(corpus), range_max + 2)
    rows = []
    for i, hits in enumerate(semantic_search(query_emb, corpus_emb, top_k=k)):
        query, positive, pos_score = queries[i], positives[i], float(positive_scores[i])
        ranked = [h for h in hits if corpus[h["corpus_id"]] not in (positive, query)]
        negatives, scores = [], []
        for hit in ranked[range_min:range_max]:
            s = hit["score"]
            if absolute_margin is not None and not s < pos_score - absolute_margin:
                continue
            if relative_margin is not None and not s < pos_score * (1 - relative_margin):
                continue
            if max_score is not None and s > max_score:
                continue
            negatives.append(corpus[hit["corpus_id"]])
            scores.append(s)
            if len(negatives) == num_negatives:
                break
        if negatives or keep_empty:
            rows.append(MinedRow(query, positive, negatives, scores, pos_score))
    return rows


def training_rows(mined, format="triplet"):
    """The mined rows as dicts for a trainer (see module doc for the formats)."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {list(FORMATS)}, got {format!r}.")
    if mined is None or not hasattr(mined, "__iter__"):
        raise TypeError(f"training_rows takes the rows mine_hard_negatives returns, got "
                        f"{type(mined).__name__}.")
    mined = list(mined)
    for i, row in enumerate(mined):
        if not isinstance(row, MinedRow):
            raise TypeError(f"row {i} is a {type(row).__name__}, not a MinedRow (the rows "
                            "mine_hard_negatives returns).")
    out = []
    for row in mined:
        if format == "listwise":
            if row.negatives:
                out.append({"query": row.query, "positive": row.positive,
                            "negatives": list(row.negatives)})
        elif format == "pointwise":
            out.append({"query": row.query, "passage": row.positive, "label": 1})
            out += [{"query": row.query, "passage": n, "label": 0} for n in row.negatives]
        else:
            out += [{"anchor": row.query, "positive": row.positive, "negative": n}
                    for n in row.negatives]
    return out


def write_rows(mined, path, format="triplet"):
    """Writes `training_rows(mined, format)` as JSONL to `path` (a temporary
    file renamed into place); returns the number of rows written."""
    rows = training_rows(mined, format)
    if not rows:
        raise ValueError(f"No {format} rows to write: no query kept a negative (loosen the "
                         "margins or widen range_max).")
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    write_text(path, data)
    return len(rows)
