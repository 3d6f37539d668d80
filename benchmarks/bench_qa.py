"""Question answering throughput: questions/s of the exported SavedModel on long contexts.

The whole served path is timed: tokenization with offsets, windows, the
encoder over every window, the span search, answer text and offsets. Contexts
are real text (standard-library docstrings, ~`context_words` words each), so
each question needs several windows; the encoder is randomly initialised
(speed does not depend on the weights).
"""

import inspect
import json
import os
import tempfile
import time

import keras
import tensorflow as tf

from tfbert import BertConfig, BertEncoder
from tfbert.tasks.question_answering import QuestionAnsweringConfig, QuestionAnsweringTask
from tfbert.text.preprocessor import BertPreprocessor

VOCAB = os.path.join(os.path.dirname(os.path.dirname(__file__)), "tests", "data", "pretraining",
                     "vocab.txt")


def _contexts(n, words):
    text = " ".join(" ".join(inspect.getdoc(m).split()) for m in (json, os.path, tempfile, time))
    tokens = text.split()
    # Each context starts at a different word, so the batch is not n copies.
    return [" ".join((tokens[(i * 37) % len(tokens):] + tokens * 4)[:words]) for i in range(n)]


def run(preset="mini", seq_length=384, doc_stride=128, context_words=600, batch=8, repeats=3,
        vocab_file=VOCAB):
    """One line: questions/s and windows/question of the exported model."""
    config = BertConfig.from_preset(preset, vocab_size=sum(1 for _ in open(vocab_file)))
    task = QuestionAnsweringTask(QuestionAnsweringConfig(
        seq_length=seq_length, doc_stride=doc_stride, version_2=True))
    task.prepare(BertPreprocessor(vocab_file=vocab_file, seq_length=seq_length))
    model = task.build_model(BertEncoder(config))
    export_dir = task.export(model, tempfile.mkdtemp(prefix="bench_qa_"))
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    contexts = _contexts(batch, context_words)
    question = tf.constant(["What does the module provide for temporary files?"] * batch)
    context = tf.constant(contexts)
    windows = serve(question=question, context=context)["num_windows"].numpy()  # warm up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        serve(question=question, context=context)["answer"].numpy()
        best = min(best, time.perf_counter() - start)
    keras.backend.clear_session()
    return [f"squad export {preset} seq {seq_length} stride {doc_stride}, {context_words}-word "
            f"contexts ({windows.mean():.1f} windows/question), batch {batch}: "
            f"{batch / best:.2f} questions/s"]


if __name__ == "__main__":
    print("\n".join(run()))
