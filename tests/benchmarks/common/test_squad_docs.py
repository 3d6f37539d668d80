"""The documentation QA set: real docstring sentences, answers where they
say they are, a third unanswerable, disjoint train/dev paragraphs, contexts
longer than one window."""

import json

import tensorflow as tf

from benchmarks.common.squad_docs import build_squad_docs, documented_functions
from tfbert.tasks.question_answering import QuestionAnsweringTask
from tfbert.text.preprocessor import BertPreprocessor


def test_squad_docs_set(tmp_path, uncased_vocab_file):
    functions = documented_functions()
    assert len(functions) > 200
    assert ("shutil.rmtree", "Recursively delete a directory tree") in functions
    sizes = build_squad_docs(str(tmp_path), train_paragraphs=20, dev_paragraphs=10)
    assert sizes["unanswerable"] * 3 == sizes["train_questions"] + sizes["dev_questions"]
    splits = {s: json.load(open(tmp_path / f"{s}.json", encoding="utf-8"))["data"][0]["paragraphs"]
              for s in ("train", "dev")}
    assert not {p["context"] for p in splits["train"]} & {p["context"] for p in splits["dev"]}
    for p in splits["train"] + splits["dev"]:
        for qa in p["qas"]:
            for answer in qa["answers"]:
                start = answer["answer_start"]
                assert p["context"][start:start + len(answer["text"])] == answer["text"]
    # 8 functions a paragraph: every context needs two windows at seq_length 128.
    task = QuestionAnsweringTask(dict(seq_length=128, doc_stride=64, max_query_length=48))
    task.prepare(BertPreprocessor(vocab_file=uncased_vocab_file, seq_length=128))
    qas = [(qa["question"], p["context"]) for p in splits["dev"] for qa in p["qas"]]
    w = task.windows(tf.constant([q for q, _ in qas]), tf.constant([c for _, c in qas]))
    assert min(w["num_windows"].numpy()) >= 2
