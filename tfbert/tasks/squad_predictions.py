"""SQuAD results from the answer function's outputs, and the official
prediction files.

`question_result` turns one question's row of the answer function's NumPy
outputs (`QuestionAnsweringTask.answer`) into the dict `predict` returns;
`write_prediction_files` writes `predictions.json`, `nbest_predictions.json`
and (v2.0) `null_odds.json` as google-research's `run_squad.py` does, the
files `evaluate-v2.0.py` reads.

Example:
>>> entries = nbest_entries({"nbest": [{"text": "Paris", "score": 2.0},
...                                    {"text": "Paris", "score": 1.0}],
...                          "null_score": 2.0}, version_2=True)
>>> [(e["text"], round(e["probability"], 2)) for e in entries]
[('Paris', 0.5), ('', 0.5)]
"""

import json
import math
import os


def question_result(out, j):
    """Question `j` of the answer function's outputs `out` (NumPy): `answer`,
    `score`, `start_char`, `end_char`, `num_windows`, v2.0 `no_answer_score`
    and `null_score`, and `nbest` (`text`, `score`, `start_logit`,
    `end_logit`, `start_char`, `end_char`)."""
    dec = lambda b: b.decode("utf-8", "replace")
    result = {"answer": dec(out["answer"][j]), "score": float(out["score"][j]),
              "start_char": int(out["start_char"][j]), "end_char": int(out["end_char"][j]),
              "num_windows": int(out["num_windows"][j])}
    if "no_answer_score" in out:
        result["no_answer_score"] = float(out["no_answer_score"][j])
        result["null_score"] = float(out["null_score"][j])
    nbest = []
    for n in range(out["nbest_scores"].shape[1]):
        if out["nbest_start_char"][j, n] < 0:
            break  # fewer candidates than n_best_size
        nbest.append({"text": dec(out["nbest_answers"][j, n]),
                      "score": float(out["nbest_scores"][j, n]),
                      "start_logit": float(out["nbest_start_logits"][j, n]),
                      "end_logit": float(out["nbest_end_logits"][j, n]),
                      "start_char": int(out["nbest_start_char"][j, n]),
                      "end_char": int(out["nbest_end_char"][j, n])})
    result["nbest"] = nbest
    return result


def nbest_entries(result, version_2):
    """n-best list as `run_squad.py` writes it: distinct texts, softmax
    probabilities over the listed scores (v2.0: the null answer "" with
    the null score among them)."""
    entries, seen = [], set()
    for e in result["nbest"]:
        if e["text"] in seen:
            continue  # the same text from another span: keep the best one
        seen.add(e["text"])
        entries.append(dict(e))
    if version_2 and "" not in seen:
        entries.append({"text": "", "score": result["null_score"], "start_logit": None,
                        "end_logit": None, "start_char": -1, "end_char": -1})
        entries.sort(key=lambda e: -e["score"])
    if entries:
        top = max(e["score"] for e in entries)
        weights = [math.exp(e["score"] - top) for e in entries]
        for e, wgt in zip(entries, weights):
            e["probability"] = wgt / sum(weights)
    return entries


def write_prediction_files(ids, results, version_2, out_dir):
    """`predictions.json`, `nbest_predictions.json` and (v2.0)
    `null_odds.json` of `results` (`question_result` dicts, one per question
    id in `ids`) in `out_dir`; returns the paths."""
    files = {"predictions.json": {q: r["answer"] for q, r in zip(ids, results)},
             "nbest_predictions.json": {q: nbest_entries(r, version_2)
                                        for q, r in zip(ids, results)}}
    if version_2:
        files["null_odds.json"] = {q: r["no_answer_score"] for q, r in zip(ids, results)}
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for name, content in files.items():
        path = os.path.join(out_dir, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(content, f, ensure_ascii=False, indent=1)
        paths.append(path)
    return paths
