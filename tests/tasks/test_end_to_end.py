"""End to end on the shipped real-text data: training lifts the task metric
well above chance, and the exported SavedModel, reloaded in a fresh process,
gives the in-memory model's predictions from raw strings.

Also: the frozen-encoder mode trains a head on cached features. (That
converted all-MiniLM-L6-v2 weights beat random initialisation on this data,
same recipe and steps, and that the export served from a fresh process
answers the sentences, is tests/tools/test_quickstart.py's main job.)
"""

import json
import os

import numpy as np
import pytest

from tfbert.config import BertConfig
from tfbert.tasks.classification import ClassificationConfig, ClassificationTask
from tfbert.tasks.runner import TrainConfig, finetune
from tfbert.tasks.tagging import TaggingConfig, TaggingTask

pytestmark = pytest.mark.slow

SERVE = """
import json
import tensorflow as tf
from tfbert.export.task_model import load_task_model
serve = load_task_model(PATH).signatures["serving_default"]
out = serve(**{k: tf.constant(v) for k, v in INPUTS.items()})
dec = lambda x: [dec(i) for i in x] if isinstance(x, list) else x.decode()
print(json.dumps({k: dec(v.numpy().tolist()) if v.dtype == tf.string else v.numpy().tolist()
                  for k, v in out.items()}))
"""


def serve_fresh(run_python, path, inputs):
    source = f"PATH = {path!r}\nINPUTS = {inputs!r}\n" + SERVE
    return json.loads(run_python(source).strip().splitlines()[-1])


def test_regression_end_to_end(tmp_path, data_dir, uncased_vocab_file, run_python):
    task = ClassificationTask(ClassificationConfig(
        train_file=os.path.join(data_dir, "rating_train.jsonl"),
        dev_file=os.path.join(data_dir, "rating_dev.jsonl"),
        text_column="review", label_column="stars", seq_length=16), regression=True)
    train = TrainConfig(batch_size=16, learning_rate=1e-3, epochs=3, steps_per_epoch=25)
    result = finetune(task, train, str(tmp_path / "run"), encoder_config=BertConfig.from_preset(
        "tiny"), vocab_file=uncased_vocab_file, export_dir=str(tmp_path / "export"))
    print("dev", result.dev_scores)
    assert result.best_score > 0.6  # mean of Pearson and Spearman; chance is 0
    text = ["The food was excellent .", "Their staff is terrible .", "I found the view okay ."]
    want = task.predict(result.model, text)["score"]
    assert want[0] > want[2] > want[1]
    got = serve_fresh(run_python, result.export_dir, {"text": text})
    np.testing.assert_allclose(got["score"], want, atol=1e-5)


def test_tagging_end_to_end(tmp_path, data_dir, uncased_vocab_file, run_python):
    task = TaggingTask(TaggingConfig(train_file=os.path.join(data_dir, "ner_train.conll"),
                                     dev_file=os.path.join(data_dir, "ner_dev.conll"),
                                     seq_length=32))
    train = TrainConfig(batch_size=16, learning_rate=1e-3, epochs=3, steps_per_epoch=25)
    result = finetune(task, train, str(tmp_path / "run"), encoder_config=BertConfig.from_preset(
        "tiny"), vocab_file=uncased_vocab_file, export_dir=str(tmp_path / "export"))
    print("dev", [{k: v for k, v in s.items() if k != "per_type"} for s in result.dev_scores])
    assert result.main_metric == "f1" and result.best_score > 0.45  # entity F1; chance ~0
    text = ["John Smith visited Paris last Monday .", "Google opened a new office in London ."]
    want = task.predict(result.model, text)
    got = serve_fresh(run_python, result.export_dir, {"text": text})
    for i, row in enumerate(want):
        n = got["num_words"][i]
        assert n == len(row) == len(text[i].split())
        assert got["tags"][i][:n] == [t for _, t, _, _ in row]
        assert got["words"][i][:n] == text[i].split()
    assert any(tag != "O" for row in want for _, tag, _, _ in row)


def test_frozen_encoder_head(tmp_path, minilm_checkpoint, data_dir):
    ckpt = minilm_checkpoint
    from tfbert.tasks.frozen_classification import FrozenClassificationTask

    task = FrozenClassificationTask(dict(
        train_file=os.path.join(data_dir, "sentiment_train.tsv"),
        dev_file=os.path.join(data_dir, "sentiment_dev.tsv"), seq_length=24, head_epochs=20))
    train = TrainConfig(batch_size=16, verbose=0)
    result = finetune(task, train, str(tmp_path / "frozen"), init_checkpoint=ckpt)
    print(f"frozen MiniLM, last four layers: dev accuracy {result.best_score:.3f}")
    assert result.best_score >= 0.8
    # The returned model maps raw strings to labels like a fine-tuned one.
    assert task.predict(result.model, ["The book was brilliant ."])["label"][0] == "positive"
