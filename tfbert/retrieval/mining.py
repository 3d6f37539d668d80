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

A candidate whose text equals the positive or the query never counts.
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
from tfbert.retrieval.search import semantic_search

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
    pairs = [tuple(p) for p in pairs]
    if not pairs:
        raise ValueError("mine_hard_negatives got no (query, positive) pairs.")
    for i, pair in enumerate(pairs):
        if len(pair) != 2 or not all(isinstance(t, str) and t.strip() for t in pair):
            raise ValueError(f"pair {i} must be two non-empty strings (query, positive), "
                             f"got {pair!r:.80}.")
    if int(num_negatives) < 1:
        raise ValueError(f"num_negatives must be >= 1, got {num_negatives}.")
    if not 0 <= int(range_min) < int(range_max):
        raise ValueError(f"need 0 <= range_min < range_max, got {range_min} and {range_max}.")
    if relative_margin is not None and not 0 <= relative_margin < 1:
        raise ValueError(f"relative_margin must be in [0, 1), got {relative_margin}.")
    if embed is None:
        if encoder is None:
            raise ValueError("mine_hard_negatives needs encoder= (a SentenceEncoder) or embed=.")
        embed = lambda texts: encoder.encode(texts, batch_size=batch_size)
    queries = [q for q, _ in pairs]
    positives = [p for _, p in pairs]
    corpus = list(dict.fromkeys(positives)) if corpus is None else list(corpus)
    if not corpus or any(not isinstance(t, str) or not t.strip() for t in corpus):
        raise ValueError("The corpus must be a non-empty list of non-empty strings.")
    corpus_emb = np.asarray(embed(corpus), np.float32)
    query_emb = np.asarray(embed(queries), np.float32)
    positive_emb = np.asarray(embed(positives), np.float32)
    if corpus_emb.shape[1:] != query_emb.shape[1:]:
        raise ValueError(f"Corpus embeddings have dim {corpus_emb.shape[1:]}, queries "
                         f"{query_emb.shape[1:]}.")
    unit = lambda x: x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    positive_scores = (unit(query_emb) * unit(positive_emb)).sum(1)
    # Enough candidates for range_max after the positive and query copies are removed.
    k = min(len(corpus), int(range_max) + 2)
    rows = []
    for i, hits in enumerate(semantic_search(query_emb, corpus_emb, top_k=k)):
        query, positive, pos_score = queries[i], positives[i], float(positive_scores[i])
        ranked = [h for h in hits if corpus[h["corpus_id"]] not in (positive, query)]
        negatives, scores = [], []
        for hit in ranked[int(range_min):int(range_max)]:
            s = hit["score"]
            if absolute_margin is not None and not s < pos_score - absolute_margin:
                continue
            if relative_margin is not None and not s < pos_score * (1 - relative_margin):
                continue
            if max_score is not None and s > max_score:
                continue
            negatives.append(corpus[hit["corpus_id"]])
            scores.append(s)
            if len(negatives) == int(num_negatives):
                break
        if negatives or keep_empty:
            rows.append(MinedRow(query, positive, negatives, scores, pos_score))
    return rows


def training_rows(mined, format="triplet"):
    """The mined rows as dicts for a trainer (see module doc for the formats)."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {list(FORMATS)}, got {format!r}.")
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
