"""QA defaults do not collapse: `finetune` with only the data and the
checkpoint given (the recipe picks learning rate, batch size and epochs; a
held-out slice picks the epoch) trains models that answer, on two seeds, and
their mean F1 is not under the transformers reference's on the same recipe.

The data is real documentation (`benchmarks/squad_docs.py`): 150 questions
about Python standard-library functions, a third unanswerable, each context
three windows long. The BERT paper's SQuAD recipe (batch 32, 2 epochs) gets
about 10 optimizer steps here and answers "" to everything: the failure this
test exists to catch.
"""

import os
import statistics

import pytest

from benchmarks import bench_quality
from benchmarks.squad_docs import build_squad_docs

pytestmark = pytest.mark.slow

SEEDS = (0, 1)


def test_squad_defaults_answer_on_every_seed(tmp_path, minilm_dir, monkeypatch):
    from tfbert.convert import from_huggingface
    from tfbert.tasks.question_answering import QuestionAnsweringTask

    data = tmp_path / "data"
    build_squad_docs(str(data / "squad"), train_paragraphs=50, dev_paragraphs=20,
                     functions_per_paragraph=6)
    checkpoint = from_huggingface(str(minilm_dir), str(tmp_path / "minilm"))
    # Short windows keep the test quick: every context needs 3+ of them.
    small = lambda name, data_dir: QuestionAnsweringTask(dict(
        train_file=os.path.join(data_dir, "squad", "train.json"),
        dev_file=os.path.join(data_dir, "squad", "dev.json"),
        seq_length=64, doc_stride=32, max_query_length=32, max_answer_length=12))
    monkeypatch.setattr(bench_quality, "task_for", small)

    ours, theirs = [], []
    for seed in SEEDS:
        scores, recipe = bench_quality.tfbert_run("squad", str(data), checkpoint, seed,
                                                  str(tmp_path))
        reference = bench_quality.reference_run("squad", str(data), checkpoint, str(minilm_dir),
                                                recipe, seed)
        print(f"seed {seed}: recipe {recipe}; tfbert F1 {scores['f1']:.1f} "
              f"({scores['answers']} answers of 60); reference F1 {reference['f1']:.1f} "
              f"({reference['answers']} answers)")
        assert recipe["epochs"] > 3  # small data: more passes (300+ steps), not 2-3 epochs
        assert scores["answers"] > 10, f"seed {seed}: the model (nearly) never answers"
        ours.append(scores["f1"])
        theirs.append(reference["f1"])
    assert statistics.fmean(ours) >= statistics.fmean(theirs) - 3.0
    assert min(ours) > 60.0  # always-"" scores 33.3 on this data
