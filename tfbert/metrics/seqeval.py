"""Entity-level precision/recall/F1 with seqeval's default (conlleval) rules.

Tags are IOB2 (`B-PER`, `I-PER`, `O`); IOBES `E-`/`S-` are understood too.
Like seqeval's default mode, an `I-X` that follows `O` or a different type
starts a new entity, and an entity counts as correct only when its type, start
and end all match. Written by hand because seqeval is not a dependency; the
rules follow seqeval's `start_of_chunk` / `end_of_chunk`.

Example:
>>> get_entities(["B-PER", "I-PER", "O", "I-LOC"])
[('PER', 0, 1), ('LOC', 3, 3)]
>>> f1_report([["B-PER", "I-PER", "O"]], [["B-PER", "O", "O"]])["f1"]
0.0
"""

import collections

import numpy as np


def _split(tag):
    """'B-PER' -> ('B', 'PER'); 'O' -> ('O', '')."""
    if tag in ("O", ""):
        return "O", ""
    prefix, _, kind = tag.partition("-")
    return prefix, kind


def _ends(prev, prev_type, cur, cur_type):
    if prev == "O":
        return False
    if prev in ("E", "S"):
        return True
    if cur in ("B", "S", "O"):
        return True
    return prev_type != cur_type


def _starts(prev, prev_type, cur, cur_type):
    if cur == "O":
        return False
    if cur in ("B", "S"):
        return True
    if prev in ("O", "E", "S"):  # I-/E- after O or a closed entity opens one
        return True
    return prev_type != cur_type


def get_entities(tags):
    """`[(type, first, last), ...]` (inclusive word indices) of one tag sequence."""
    entities = []
    prev, prev_type, begin = "O", "", 0
    for i, tag in enumerate(list(tags) + ["O"]):
        cur, cur_type = _split(tag)
        if _ends(prev, prev_type, cur, cur_type):
            entities.append((prev_type, begin, i - 1))
        if _starts(prev, prev_type, cur, cur_type):
            begin = i
        prev, prev_type = cur, cur_type
    return entities


def is_bio_tag_set(labels):
    """True when every label is `O` or `B-`/`I-`/`E-`/`S-` + a type (an entity tag set)."""
    return all(l == "O" or (len(l) > 2 and l[0] in "BIES" and l[1] == "-") for l in labels)


def f1_report(true_sequences, pred_sequences):
    """Micro-averaged entity `precision`, `recall`, `f1`, plus `per_type`
    `{type: {precision, recall, f1, support}}`, over lists of tag sequences."""
    if len(true_sequences) != len(pred_sequences):
        raise ValueError(f"{len(true_sequences)} true sequences but {len(pred_sequences)} predicted.")
    true_set, pred_set = set(), set()
    for n, (t, p) in enumerate(zip(true_sequences, pred_sequences)):
        if len(t) != len(p):
            raise ValueError(f"Sequence {n}: {len(t)} true tags but {len(p)} predicted.")
        true_set.update((n,) + e for e in get_entities(t))
        pred_set.update((n,) + e for e in get_entities(p))

    def prf(true, pred):
        tp = len(true & pred)
        precision = tp / len(pred) if pred else 0.0
        recall = tp / len(true) if true else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"precision": precision, "recall": recall, "f1": f1, "support": len(true)}

    by_type = collections.defaultdict(lambda: (set(), set()))
    for e in true_set:
        by_type[e[1]][0].add(e)
    for e in pred_set:
        by_type[e[1]][1].add(e)
    report = prf(true_set, pred_set)
    report["per_type"] = {k: prf(*v) for k, v in sorted(by_type.items())}
    return report


def token_accuracy(true_sequences, pred_sequences):
    """Per-token accuracy over lists of tag sequences (for non-BIO tag sets like POS)."""
    true = [t for seq in true_sequences for t in seq]
    pred = [t for seq in pred_sequences for t in seq]
    if len(true) != len(pred):
        raise ValueError(f"{len(true)} true tags but {len(pred)} predicted.")
    if not true:
        raise ValueError("token_accuracy needs at least one tag; got none.")
    return float(np.mean(np.asarray(true) == np.asarray(pred)))
