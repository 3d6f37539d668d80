"""SQuAD v1.1 / v2.0 JSON reader (`data` -> `paragraphs` -> `qas`).

Returns plain Python lists; the question answering task turns them into
windows in the graph. Every error names the file and the question id (or
the article/paragraph when there is no id yet), so a bad record is found in
seconds. Version 2.0 is detected from the data: any `is_impossible` key.

Example:
>>> import json, tempfile
>>> path = tempfile.mktemp(suffix=".json")
>>> _ = open(path, "w").write(json.dumps({"version": "v2.0", "data": [{"title": "t",
...     "paragraphs": [{"context": "Python was created by Guido van Rossum.",
...         "qas": [{"id": "q1", "question": "Who created Python?", "is_impossible": False,
...                  "answers": [{"text": "Guido van Rossum", "answer_start": 22}]}]}]}]}))
>>> squad = read_squad(path)
>>> squad.version_2, squad.examples[0].answers, squad.examples[0].answer_bytes
(True, ['Guido van Rossum'], (22, 38))
"""

import dataclasses
import json
import os


@dataclasses.dataclass
class SquadExample:
    """One question. `answers`: gold texts ([] when unanswerable);
    `answer_starts`: their character offsets in `context`; `answer_bytes`:
    UTF-8 byte `(start, end)` of the first answer (the training target),
    `(-1, -1)` when unanswerable."""

    id: str
    question: str
    context: str
    answers: list
    answer_starts: list
    is_impossible: bool
    answer_bytes: tuple = (-1, -1)


@dataclasses.dataclass
class SquadData:
    path: str
    examples: list
    version_2: bool

    def __len__(self):
        return len(self.examples)


def _byte_offset(text, char_offset):
    return len(text[:char_offset].encode("utf-8"))


def read_squad(path):
    """Reads a SQuAD JSON file into a `SquadData` (checks every answer)."""
    if os.path.isdir(path):  # not "not found": it is there, but not a file
        raise ValueError(f"{path} is a directory, not a SQuAD file.")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"SQuAD file not found: {path}")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 ({e}).") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise ValueError(f"{path}: a SQuAD file is an object with a `data` list.")

    examples, seen = [], {}
    version_2 = False
    for a, article in enumerate(doc["data"]):
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            where = f"{path}, data[{a}].paragraphs[{p}]"
            context = paragraph.get("context")
            qas = paragraph.get("qas", [])
            if not isinstance(qas, list):
                raise ValueError(f"{where}: `qas` must be a list.")
            for q, qa in enumerate(qas):
                qid = qa.get("id")
                if qid is None or str(qid) == "":
                    raise ValueError(f"{where}.qas[{q}]: question without an `id`.")
                qid = str(qid)
                here = f"{path}: question id {qid!r}"
                if qid in seen:
                    raise ValueError(f"{here}: duplicate id (also at {seen[qid]}).")
                seen[qid] = f"data[{a}].paragraphs[{p}].qas[{q}]"
                if not isinstance(context, str) or not context.strip():
                    raise ValueError(f"{here}: empty context.")
                question = qa.get("question")
                if not isinstance(question, str) or not question.strip():
                    raise ValueError(f"{here}: empty question.")
                if "is_impossible" in qa:
                    version_2 = True
                impossible = bool(qa.get("is_impossible", False))
                answers = qa.get("answers", [])
                if not isinstance(answers, list):
                    raise ValueError(f"{here}: `answers` must be a list.")
                if impossible and answers:
                    raise ValueError(f"{here}: is_impossible but has answers "
                                     "(v2.0 keeps those under `plausible_answers`).")
                texts, starts = [], []
                for answer in answers:
                    text, start = answer.get("text"), answer.get("answer_start")
                    if not isinstance(text, str) or not isinstance(start, int):
                        raise ValueError(f"{here}: an answer needs `text` (string) and "
                                         "`answer_start` (int).")
                    if context[start: start + len(text)] != text:
                        found = context[start: start + len(text)]
                        raise ValueError(f"{here}: answer {text!r} not found at answer_start="
                                         f"{start} (the context has {found!r} there).")
                    texts.append(text)
                    starts.append(start)
                if not impossible and not texts:
                    raise ValueError(f"{here}: no answers and not is_impossible.")
                answer_bytes = (-1, -1)
                if texts:
                    answer_bytes = (_byte_offset(context, starts[0]),
                                    _byte_offset(context, starts[0] + len(texts[0])))
                examples.append(SquadExample(qid, question, context, texts, starts, impossible,
                                             answer_bytes))
    if not examples:
        raise ValueError(f"{path}: no questions.")
    return SquadData(path, examples, version_2)


def write_squad(path, articles, version="v2.0"):
    """Writes `articles` (the `data` list) as a SQuAD JSON file."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"version": version, "data": articles}, f, ensure_ascii=False, indent=1)
    return path
