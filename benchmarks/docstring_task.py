"""A small real-text task with few gold labels and an unlabelled pool, for
task distillation (tests/tasks/test_distillation.py, bench_distill.py).

Which family of standard-library modules a docstring sentence comes from
(files/OS, networking/mail, text, numbers/dates, concurrency: the task of
bench_pretrain_payoff.py, real sentences of this machine's Python). Unlike
that benchmark, only a few sentences per class are labelled; a larger pool
of the same families' sentences is kept without labels, as the in-domain
text a user has but has not labelled (`transfer.txt`, one sentence per
line: the teacher labels it, gold-only training cannot use it).

    >>> sizes = build_docstring_task(tempfile.mkdtemp(), train_per_class=2,
    ...                              dev_per_class=3, pool_per_class=4)
    >>> sizes["train"], sizes["dev"], sizes["transfer"]
    (10, 15, 20)
"""

import os
import random
import tempfile  # noqa: F401  (the doctest)

from benchmarks.bench_pretrain_payoff import family_sentences


def build_docstring_task(out_dir, train_per_class=30, dev_per_class=60, pool_per_class=120,
                         seed=0):
    """Writes `train.tsv` and `dev.tsv` (`sentence<TAB>label`, with a header)
    and `transfer.txt` (unlabelled, one sentence per line) into `out_dir`;
    disjoint sentences, the same number per class, deterministic for a seed.
    Returns the row counts."""
    rng = random.Random(seed)
    rows = {"train": [], "dev": [], "transfer": []}
    for family, sentences in family_sentences().items():
        sentences = list(sentences)
        rng.shuffle(sentences)
        need = train_per_class + dev_per_class + pool_per_class
        if len(sentences) < need:
            raise ValueError(f"family {family!r} has {len(sentences)} sentences, {need} needed.")
        cuts = (train_per_class, train_per_class + dev_per_class, need)
        rows["train"] += [(s, family) for s in sentences[:cuts[0]]]
        rows["dev"] += [(s, family) for s in sentences[cuts[0]:cuts[1]]]
        rows["transfer"] += [(s, family) for s in sentences[cuts[1]:cuts[2]]]
    os.makedirs(out_dir, exist_ok=True)
    for split, items in rows.items():
        rng.shuffle(items)
        if split == "transfer":  # no labels: the text a user has not labelled
            text = "".join(f"{s}\n" for s, _ in items)
            name = "transfer.txt"
        else:
            text = "sentence\tlabel\n" + "".join(f"{s}\t{label}\n" for s, label in items)
            name = f"{split}.tsv"
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.write(text)
    return {split: len(items) for split, items in rows.items()}


# The task-distillation recipe measured on this task (README, "Smaller and
# faster models"): 20 gold sentences per class, 200 unlabelled per class,
# 60 dev per class. The students' steps are explicit (steps_per_epoch x
# epochs) so the distilled and the gold-only student take the same
# optimizer steps; fewer epochs keep dev scoring (the best epoch is kept)
# cheap.
TASK_SIZES = dict(train_per_class=20, dev_per_class=60, pool_per_class=200)
SEQ_LENGTH = 64
TEACHER_TRAIN = dict(batch_size=16, learning_rate=1e-4, epochs=8, seed=1)
STUDENT_TRAIN = dict(batch_size=16, learning_rate=5e-4, epochs=4, steps_per_epoch=75)
STUDENT_LAYERS = [0, 5]  # teacher layers the 2-layer student starts from
DISTILL = dict(temperature=1.0, soft_weight=1.0, hard_weight=0.5)


if __name__ == "__main__":  # python -m benchmarks.docstring_task data/docstrings
    import sys

    print(build_docstring_task(sys.argv[1], **TASK_SIZES))
