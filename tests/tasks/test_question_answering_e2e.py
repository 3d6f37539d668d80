"""SQuAD v2 end to end from converted all-MiniLM-L6-v2: fine-tuning beats two
trivial baselines on held-out paragraphs, and the exported SavedModel,
reloaded in a fresh process, answers raw strings exactly like `predict`
(contexts of 3+ windows included).

The data set is written here from real text: the first lines of Python
standard-library docstrings. A paragraph lists six functions ("The function
os.path.join does this: Join two or more pathname components ..."); a
question quotes one description ("Which function does this: ...?") and its
answer is the function's name, wherever the paragraph puts it; a third of
the questions quote a function that is not in the paragraph (unanswerable).
Dev paragraphs are new combinations and orders (never seen in training).
"""

import json
import random

import numpy as np
import pytest

from tfbert.data.squad import write_squad
from tfbert.metrics.squad import squad_scores
from tfbert.tasks.question_answering import QuestionAnsweringConfig, QuestionAnsweringTask
from tfbert.tasks.runner import TrainConfig, finetune

pytestmark = pytest.mark.slow

DOCSTRINGS = [
    ("os.path.join", "Join two or more pathname components, inserting the separator as needed"),
    ("os.path.basename", "Returns the final component of a pathname"),
    ("os.path.dirname", "Returns the directory component of a pathname"),
    ("os.path.exists", "Test whether a path exists"),
    ("os.getcwd", "Return a unicode string representing the current working directory"),
    ("os.listdir", "Return a list containing the names of the files in the directory"),
    ("shutil.copyfile", "Copy data from src to dst in the most efficient way possible"),
    ("shutil.rmtree", "Recursively delete a directory tree"),
    ("json.dumps", "Serialize obj to a JSON formatted str"),
    ("json.loads", "Deserialize a str instance containing a JSON document to a Python object"),
    ("math.sqrt", "Return the square root of x"),
    ("math.factorial", "Find the factorial of n"),
    ("math.isclose", "Determine whether two floating-point numbers are close in value"),
    ("random.shuffle", "Shuffle list x in place, and return None"),
    ("random.choice", "Choose a random element from a non-empty sequence"),
    ("time.sleep", "Delay execution for a given number of seconds"),
    ("re.compile", "Compile a regular expression pattern, returning a Pattern object"),
    ("re.escape", "Escape special characters in a string"),
    ("textwrap.dedent", "Remove any common leading whitespace from every line in text"),
    ("heapq.heappush", "Push item onto heap, maintaining the heap invariant"),
    ("bisect.insort", "Insert item x in list a, and keep it sorted assuming a is sorted"),
    ("functools.reduce", "Apply a function of two arguments cumulatively to the items of a "
                         "sequence"),
    ("glob.glob", "Return a list of paths matching a pathname pattern"),
    ("zlib.compress", "Returns a bytes object containing compressed data"),
    ("base64.b64encode", "Encode the bytes-like object s using Base64 and return a bytes object"),
    ("statistics.median", "Return the median (middle value) of numeric data"),
    ("copy.deepcopy", "Deep copy operation on arbitrary Python objects"),
    ("string.capwords", "Split the argument into words, capitalize each word and join the words"),
]


def make_articles(n_paragraphs, seed, prefix):
    rng = random.Random(seed)
    paragraphs = []
    for p in range(n_paragraphs):
        chosen = rng.sample(DOCSTRINGS, 6)
        sentences = [f"The function {name} does this: {desc}." for name, desc in chosen]
        context = " ".join(sentences)
        qas = []
        for i, (name, desc) in enumerate(rng.sample(chosen, 2)):
            qas.append({"id": f"{prefix}{p}a{i}", "question": f"Which function does this: {desc}?",
                        "is_impossible": False,
                        "answers": [{"text": name, "answer_start": context.index(
                            f"function {name} ") + len("function ")}]})
        absent = rng.choice([d for d in DOCSTRINGS if d not in chosen])
        qas.append({"id": f"{prefix}{p}n", "question": f"Which function does this: {absent[1]}?",
                    "is_impossible": True, "answers": []})
        paragraphs.append({"context": context, "qas": qas})
    return [{"title": "Python standard library", "paragraphs": paragraphs}]


SERVE = """
import json
import tensorflow as tf
from tfbert.export.task_model import load_task_model
serve = load_task_model(PATH).signatures["serving_default"]
out = serve(question=tf.constant(Q), context=tf.constant(C))
print(json.dumps({"answer": [a.decode() for a in out["answer"].numpy()],
                  "score": out["score"].numpy().tolist(),
                  "no_answer_score": out["no_answer_score"].numpy().tolist(),
                  "start_char": out["start_char"].numpy().tolist(),
                  "num_windows": out["num_windows"].numpy().tolist()}))
"""


def test_squad_v2_minilm_end_to_end(tmp_path, minilm_dir, run_python):
    from tfbert.convert import from_huggingface

    ckpt = from_huggingface(minilm_dir, str(tmp_path / "minilm"))
    train_file = write_squad(str(tmp_path / "train.json"), make_articles(60, 1, "t"))
    dev_file = write_squad(str(tmp_path / "dev.json"), make_articles(16, 2, "d"))
    task = QuestionAnsweringTask(QuestionAnsweringConfig(
        train_file=train_file, dev_file=dev_file, seq_length=64, doc_stride=24,
        max_query_length=24, max_answer_length=10))
    train = TrainConfig(batch_size=16, learning_rate=1e-4, epochs=3, seed=0, jit_compile=False,
                        verbose=0)
    result = finetune(task, train, str(tmp_path / "run"), init_checkpoint=ckpt,
                      export_dir=str(tmp_path / "export"))
    scores = result.dev_scores[result.best_epoch - 1]

    # Two trivial baselines, scored by the same official rules.
    dev = json.load(open(dev_file, encoding="utf-8"))["data"][0]["paragraphs"]
    gold = {qa["id"]: [a["text"] for a in qa["answers"]] for p in dev for qa in p["qas"]}
    no_answer = squad_scores(gold, {q: "" for q in gold})
    first_sentence = squad_scores(gold, {qa["id"]: p["context"].split(". ")[0]
                                         for p in dev for qa in p["qas"]})
    print(f"dev per epoch: {[(round(s['exact'], 1), round(s['f1'], 1)) for s in result.dev_scores]}"
          f"; best {scores}; always-unanswerable EM/F1 {no_answer['exact']:.1f}/"
          f"{no_answer['f1']:.1f}; first sentence {first_sentence['exact']:.1f}/"
          f"{first_sentence['f1']:.1f}")
    for baseline in (no_answer, first_sentence):
        assert scores["exact"] > baseline["exact"] + 15
        assert scores["f1"] > baseline["f1"] + 15
    assert scores["HasAns_exact"] > 50

    # The export, reloaded in a fresh process, answers like the in-memory model.
    questions = [qa["question"] for p in dev[:6] for qa in p["qas"]]
    contexts = [p["context"] for p in dev[:6] for qa in p["qas"]]
    want = task.predict(result.model, questions, contexts)
    assert min(r["num_windows"] for r in want) >= 3
    source = f"PATH = {result.export_dir!r}\nQ = {questions!r}\nC = {contexts!r}\n" + SERVE
    got = json.loads(run_python(source).strip().splitlines()[-1])
    assert got["answer"] == [r["answer"] for r in want]
    assert got["start_char"] == [r["start_char"] for r in want]
    np.testing.assert_allclose(got["score"], [r["score"] for r in want], atol=1e-4)
    np.testing.assert_allclose(got["no_answer_score"], [r["no_answer_score"] for r in want],
                               atol=1e-4)
    assert any(r["answer"] for r in want) and any(not r["answer"] for r in want)

    # The prediction files tools/finetune.py writes next to results.json.
    paths = task.write_predictions(result.model, result.dev, str(tmp_path / "run"))
    predictions = json.load(open(paths[0], encoding="utf-8"))
    assert squad_scores(gold, predictions, json.load(open(paths[2])))["f1"] == pytest.approx(
        scores["f1"])
