"""SQuAD EM/F1 with the rules of the official `evaluate-v1.1.py` / `evaluate-v2.0.py`.

Our own code, following the official scripts rule for rule:
- normalize: lower-case, drop `string.punctuation` characters, replace the
  words a/an/the (regex `\\b(a|an|the)\\b`) by a space, collapse whitespace;
- EM: normalized strings equal; F1: bag-of-tokens overlap of the normalized
  strings; each question scores the max over its gold answers;
- v2.0 only: gold answers that normalize to "" are dropped and a question
  without any gold answer has the single gold answer "" (unanswerable); F1 of
  two empty token lists is 1, of one empty list 0 (v1.1: F1 0 without a
  common token); a question whose null odds exceed `na_prob_thresh` (default
  1.0) is scored as answered ""; `HasAns_*` / `NoAns_*` splits; with null
  odds, `best_exact` / `best_f1` and their thresholds from the official
  threshold search.

Output names are the official v2.0 script's for both versions: `exact`, `f1`,
`total`, `HasAns_exact`, `HasAns_f1`, `HasAns_total`, `NoAns_exact`,
`NoAns_f1`, `NoAns_total`, `best_exact`, `best_exact_thresh`, `best_f1`,
`best_f1_thresh` (scores in percent, as there).

A question without a prediction scores 0 (v1.1's rule; the v2.0 script
would stop with a KeyError).

Example:
>>> normalize_answer("The  Eiffel-Tower!")
'eiffeltower'
>>> round(f1_score("the cat sat", "a cat sat down"), 4)
0.8
>>> gold = {"q1": ["Paris"], "q2": []}
>>> squad_scores(gold, {"q1": "paris", "q2": ""}, version=2)["exact"]
100.0
"""

import collections
import re
import string

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text):
    """Lower text, remove punctuation, articles and extra whitespace (official order)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_score(prediction, gold):
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction, gold, version=2):
    """Token F1 of normalized strings. v2.0: two empty answers agree (1.0)."""
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if version == 2 and (not pred_tokens or not gold_tokens):
        return float(pred_tokens == gold_tokens)
    common = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def gold_texts(answers, version=2):
    """The gold answers a question is scored against. v2.0 drops answers
    that normalize to "" and uses [""] when none is left (unanswerable)."""
    if version == 1:
        return list(answers)
    kept = [a for a in answers if normalize_answer(a)]
    return kept or [""]


def raw_scores(gold, predictions, version=2):
    """`(exact, f1)`: dicts id -> max score over the gold answers (0 to 1)."""
    exact, f1 = {}, {}
    for qid, answers in gold.items():
        if qid not in predictions:
            exact[qid] = f1[qid] = 0.0  # missing prediction: wrong (v1.1 rule)
            continue
        pred = predictions[qid]
        golds = gold_texts(answers, version)
        exact[qid] = max(exact_score(pred, g) for g in golds)
        f1[qid] = max(f1_score(pred, g, version) for g in golds)
    return exact, f1


def apply_no_answer_threshold(scores, null_odds, has_answer, threshold):
    """Questions with null odds above `threshold` count as answered ""."""
    out = {}
    for qid, s in scores.items():
        if null_odds.get(qid, 0.0) > threshold:
            out[qid] = float(not has_answer[qid])
        else:
            out[qid] = s
    return out


def _summary(exact, f1, qids):
    total = len(qids)
    return {"exact": 100.0 * sum(exact[q] for q in qids) / total,
            "f1": 100.0 * sum(f1[q] for q in qids) / total, "total": total}


def find_best_threshold(predictions, scores, null_odds, has_answer):
    """`(best score in percent, threshold)`: the official sweep. Start with
    every question answered "" (all NoAns right), then take questions in
    rising null odds (stable order: ties keep `null_odds`' order), switching
    each to its prediction; keep the best running total."""
    current = best = sum(1 for q in has_answer if not has_answer[q])
    best_threshold = 0.0
    for qid in sorted(null_odds, key=lambda q: null_odds[q]):
        if qid not in scores:
            continue
        if has_answer[qid]:
            current += scores[qid]
        elif predictions.get(qid, ""):
            current -= 1  # a NoAns question that now gets a non-empty answer
        if current > best:
            best = current
            best_threshold = null_odds[qid]
    return 100.0 * best / len(scores), best_threshold


def squad_scores(gold, predictions, null_odds=None, version=2, na_prob_thresh=1.0):
    """Official SQuAD metrics.

    Args:
        gold: dict id -> list of gold answer texts ([] for unanswerable).
        predictions: dict id -> predicted text ("" for no answer).
        null_odds: optional dict id -> null_score - best_span_score (the
            official `na_prob_file`); enables the `best_*` threshold search.
        version: 1 (v1.1 rules) or 2 (v2.0 rules).
        na_prob_thresh: questions with null odds above this are scored as "".

    Returns a dict with the official v2.0 script's names (percent).
    """
    if version not in (1, 2):
        raise ValueError(f"version must be 1 or 2, got {version!r}.")
    if not gold:
        raise ValueError("squad_scores: no gold questions.")
    exact, f1 = raw_scores(gold, predictions, version)
    # As the official script: HasAns means a non-empty `answers` list.
    has_answer = {q: bool(a) for q, a in gold.items()}
    odds = null_odds if null_odds is not None else {q: 0.0 for q in predictions}
    exact_t = apply_no_answer_threshold(exact, odds, has_answer, na_prob_thresh)
    f1_t = apply_no_answer_threshold(f1, odds, has_answer, na_prob_thresh)
    out = _summary(exact_t, f1_t, list(gold))
    for name, wanted in (("HasAns", True), ("NoAns", False)):
        qids = [q for q in gold if has_answer[q] == wanted]
        if qids:
            part = _summary(exact_t, f1_t, qids)
            out.update({f"{name}_{k}": v for k, v in part.items()})
    if null_odds is not None:
        # The sweep uses the raw (unthresholded) scores, as the official script.
        out["best_exact"], out["best_exact_thresh"] = find_best_threshold(
            predictions, exact, null_odds, has_answer)
        out["best_f1"], out["best_f1_thresh"] = find_best_threshold(
            predictions, f1, null_odds, has_answer)
    return out

