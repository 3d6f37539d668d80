"""SQuAD v2 end to end from converted all-MiniLM-L6-v2, with the defaults
only, on one seed (slow).

- `finetune` with only the data, the checkpoint and a step floor of 300
  given (the recipe picks learning rate, batch size and epochs; the training
  file is too small to hold out a slice worth choosing on, so the last epoch
  is kept; question answering's default floor is 600, measured over 5 seeds
  by `benchmarks/bench_quality.py`)
  trains a model that answers, well above always-unanswerable. The claim
  for every seed is `benchmarks/bench_quality.py`'s, over 5 seeds in
  docs/quality.md; CI's guard runs one (a second seed was a third of its time).
  The BERT paper's SQuAD recipe (batch 32, 2 epochs) gets about 10 optimizer
  steps here and answers "" to everything: the failure this test exists to
  catch. (The comparison with the transformers reference on the same recipe,
  data and weights is `benchmarks/bench_quality.py --tasks=squad`, 5 seeds, in
  docs/quality.md: its run takes twice tfbert's time on CPU, more than CI
  can spend on one test.)
- The exported SavedModel, reloaded in a fresh process, answers raw strings
  exactly like `predict` (contexts of 3+ windows), and the official-format
  prediction files score like the run.

The data is real documentation (`benchmarks/common/squad_docs.py`): 150 questions
about Python standard-library functions, a third unanswerable; dev paragraphs
are new combinations and orders.
"""

import json
import os

import numpy as np
import pytest

from benchmarks.common.squad_docs import build_squad_docs
from tfbert.metrics.squad import squad_scores
from tfbert.tasks.question_answering import QuestionAnsweringTask
from tfbert.tasks.runner import TrainConfig, finetune

pytestmark = pytest.mark.slow

SEEDS = (0,)
# Half question answering's default floor (600): the collapse this test
# exists to catch is likelier with fewer steps, and 600 steps took the test
# from 640 s to about 1,300 s, over CI's budget (docs/quality.md).
MIN_STEPS = 300

SERVE = """
import json
import tensorflow as tf
from tfbert.export.task_model import load_task_model
serve = load_task_model(PATH).signatures["serving_default"]
out = serve(question=tf.constant(Q), context=tf.constant(C))
print(json.dumps({"answer": [a.decode() for a in out["answer"].numpy()],
                  "score": out["score"].numpy().tolist(),
                  "no_answer_score": out["no_answer_score"].numpy().tolist(),
                  "start_char": out["start_char"].numpy().tolist()}))
"""


def small_task(data_dir):
    """Short windows keep the test quick: every context needs 3+ of them."""
    return QuestionAnsweringTask(dict(
        train_file=os.path.join(data_dir, "squad", "train.json"),
        dev_file=os.path.join(data_dir, "squad", "dev.json"),
        seq_length=64, doc_stride=32, max_query_length=32, max_answer_length=12))


def test_squad_defaults_answer_and_serve(tmp_path, minilm_dir, run_python):
    from tfbert.convert import from_huggingface

    data = tmp_path / "data"
    build_squad_docs(str(data / "squad"), train_paragraphs=50, dev_paragraphs=20,
                     functions_per_paragraph=6)
    checkpoint = from_huggingface(str(minilm_dir), str(tmp_path / "minilm"))
    dev = json.load(open(data / "squad" / "dev.json", encoding="utf-8"))["data"][0]["paragraphs"]
    gold = {qa["id"]: [a["text"] for a in qa["answers"]] for p in dev for qa in p["qas"]}
    never_answers = squad_scores(gold, {q: "" for q in gold})["f1"]  # 33.3

    first = None
    for seed in SEEDS:
        task = small_task(str(data))
        result = finetune(task, TrainConfig(seed=seed, min_steps=MIN_STEPS, verbose=0),
                          str(tmp_path / f"run{seed}"),
                          init_checkpoint=checkpoint,
                          export_dir=str(tmp_path / "export") if first is None else None)
        scores = result.dev_scores[result.best_epoch - 1]
        answers = sum(1 for r in task.predict(result.model, *zip(*[
            (qa["question"], p["context"]) for p in dev for qa in p["qas"]])) if r["answer"])
        recipe = {k: result.summary[k] for k in ("learning_rate", "batch_size", "epochs")}
        print(f"seed {seed}: recipe {recipe}, epoch {result.best_epoch} chosen on "
              f"{result.selected_on!r}; tfbert F1 {scores['f1']:.1f} ({answers} of {len(gold)} "
              f"answered)")
        assert recipe["epochs"] > 3  # small data: more passes (300+ steps), not 2-3 epochs
        # 10% of 50 paragraphs is 5: too few to choose on; all 50 train, the last epoch is kept.
        assert result.selected_on.startswith("none (10% of 50 paragraphs is 5")
        assert answers > 10, f"seed {seed}: the model (nearly) never answers"
        assert scores["f1"] > never_answers + 25
        first = first or (task, result, scores["f1"])

    # Seed 0's export, reloaded in a fresh process, answers like the in-memory model.
    task, result, first_f1 = first
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
    paths = task.write_predictions(result.model, result.dev, str(tmp_path / "run0"))
    predictions = json.load(open(paths[0], encoding="utf-8"))
    assert squad_scores(gold, predictions, json.load(open(paths[2])))["f1"] == pytest.approx(
        first_f1)
