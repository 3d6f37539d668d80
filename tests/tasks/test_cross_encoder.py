"""CrossEncoderTask on a tiny random encoder: listwise (softmax, bce) and pointwise rows
train the `tfbert.CrossEncoder` Keras model through `finetune`, the model_dir loads with
`CrossEncoder.from_pretrained` and scores as the trained model does, the listwise loss
learns, and bad rows are one line."""

import json

import numpy as np
import pytest

from tfbert import CrossEncoder
from tfbert.config import BertConfig
from tfbert.data.rerank_rows import read_rerank_rows
from tfbert.tasks import get_task
from tfbert.tasks.cross_encoder import rerank_metrics
from tfbert.tasks.runner import TrainConfig, finetune

PAIRS = [  # real docstring-like (query, passage) pairs
    ("number of items", "Return the number of items in the container."),
    ("open a file", "Open file and return a stream."),
    ("empty the queue", "Remove all items from the queue."),
    ("split a string", "Return a list of the words in the string."),
    ("close a socket", "Close the socket and release its resources."),
    ("sort in place", "Sort the list in ascending order, in place."),
    ("wait for a thread", "Wait until the thread terminates."),
    ("text to bytes", "Encode the string using the codec registered for encoding."),
]
VOCAB = "tests/data/pretraining/vocab.txt"


def write_rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture()
def listwise(tmp_path):
    rows = [{"query": q, "positive": p,
             "negatives": [PAIRS[(i + k) % len(PAIRS)][1] for k in (1, 2, 3)]}
            for i, (q, p) in enumerate(PAIRS)]
    return write_rows(tmp_path / "listwise.jsonl", rows)


@pytest.fixture()
def pointwise(tmp_path):
    rows = []
    for i, (q, p) in enumerate(PAIRS):
        rows += [{"query": q, "passage": p, "label": 1},
                 {"query": q, "passage": PAIRS[(i + 1) % len(PAIRS)][1], "label": 0}]
    return write_rows(tmp_path / "pointwise.jsonl", rows)


def run(tmp_path, train_file, name, steps=2, lr=1e-3, export=False, **task):
    task = get_task("cross_encoder")({"train_file": train_file, "dev_file": train_file,
                                      "seq_length": 32, **task})
    config = BertConfig.from_preset("tiny", vocab_size=1931, num_layers=1)
    return finetune(task, TrainConfig(batch_size=4, epochs=1, steps_per_epoch=steps,
                                      learning_rate=lr, jit_compile=False, verbose=0,
                                      seed=0),
                    str(tmp_path / name), encoder_config=config, vocab_file=VOCAB,
                    export_dir=str(tmp_path / name / "export") if export else None)


def test_listwise_softmax_learns_and_model_dir_loads(tmp_path, listwise, run_python):
    result = run(tmp_path, listwise, "softmax", steps=30, lr=3e-3, export=True)
    assert result.task.loss_name == "softmax" and result.task.group_size == 4
    assert sorted(result.dev_scores[0]) == ["mrr_at_10", "recall_at_1"]
    # 8 queries, 4 candidates each: chance is 0.25 recall@1 and 0.52 MRR; 30 steps
    # of a 1-layer random model on the rows themselves reached 0.625 and 0.79.
    assert result.dev_scores[-1]["recall_at_1"] >= 0.5, result.dev_scores
    assert result.dev_scores[-1]["mrr_at_10"] >= 0.7, result.dev_scores
    loaded = CrossEncoder.from_pretrained(str(tmp_path / "softmax"))
    assert loaded.preprocessor.seq_length == 32
    pairs = [(q, p) for q, p in PAIRS]
    want = result.task.predict(result.model, [q for q, _ in pairs], [p for _, p in pairs])
    np.testing.assert_allclose(loaded.predict(pairs), want["score"], atol=1e-5)
    out = run_python(f"""
import json, tensorflow as tf, tensorflow_text
sig = tf.saved_model.load({result.export_dir!r}).signatures["serving_default"]
r = sig(query=tf.constant({json.dumps([q for q, _ in pairs])}),
        passage=tf.constant({json.dumps([p for _, p in pairs])}))
print(json.dumps(r["score"].numpy().tolist()))
""")
    np.testing.assert_allclose(json.loads(out.strip().splitlines()[-1]), want["score"],
                               atol=1e-5)


@pytest.mark.parametrize("rows, loss, pooling", [("pointwise", None, "cls"),
                                                  ("listwise", "bce", "mean")])
def test_bce_on_pointwise_and_listwise_rows(tmp_path, request, rows, loss, pooling):
    result = run(tmp_path, request.getfixturevalue(rows), rows, pooling=pooling,
                 **({"loss": loss} if loss else {}))
    assert result.task.loss_name == "bce"
    assert type(result.model) is CrossEncoder  # the Keras model a user's fit trains
    assert 0.0 <= result.dev_scores[-1]["mrr_at_10"] <= 1.0
    # The head's pooling travels with the model_dir.
    loaded = CrossEncoder.from_pretrained(str(tmp_path / rows))
    assert loaded.pooling == pooling
    pairs = [(q, p) for q, p in PAIRS]
    want = result.task.predict(result.model, [q for q, _ in pairs], [p for _, p in pairs])
    np.testing.assert_allclose(loaded.predict(pairs), want["score"], atol=1e-5)


def test_rows_reader_and_task_errors(tmp_path, pointwise, listwise):
    assert len(read_rerank_rows(pointwise).groups()) == len(PAIRS)
    bad = [
        ('{"query": "", "passage": "p", "label": 1}', "line 1: empty query"),
        ('{"query": "q", "passage": "p", "label": 2}', r"line 1: 'label' must be a number in \[0, 1\]"),
        ('{"query": "q", "positive": "p", "negatives": []}', "non-empty list"),
        ('{"query": "q", "positive": "p", "negatives": ["n", ""]}', "line 1: empty negatives"),
        ('{"query": "q", "text": "p"}', "a row needs 'passage'"),
        ('{"query": "q", "passage": "p", "label": 1}\n{"query": "q", "positive": "p", '
         '"negatives": ["n"]}', "line 2: a listwise row in a file of pointwise rows"),
    ]
    for i, (text, message) in enumerate(bad):
        path = tmp_path / f"bad{i}.jsonl"
        path.write_text(text + "\n")
        with pytest.raises(ValueError, match=message) as e:
            read_rerank_rows(str(path))
        assert "\n" not in str(e.value)
    task = get_task("cross_encoder")({"train_file": pointwise, "loss": "softmax"})
    with pytest.raises(ValueError, match="loss=softmax needs listwise rows"):
        task.prepare(None)
    task = get_task("cross_encoder")({"train_file": listwise, "num_negatives": 5})
    with pytest.raises(ValueError, match="3 negatives, but task.num_negatives is 5"):
        task.prepare(None)
    with pytest.raises(ValueError, match=r"task cross_encoder: loss: must be one of "
                                         r"\['softmax', 'bce'\], got 'hinge'"):
        get_task("cross_encoder")({"loss": "hinge"})
    with pytest.raises(ValueError, match=r"task cross_encoder: pooling: must be one of "
                                         r"\['cls', 'mean', 'max'\], got 'avg'"):
        get_task("cross_encoder")({"pooling": "avg"})


def test_rerank_metrics_ties_count_against_the_query():
    assert rerank_metrics([("q", ["a", "b"], [1, 0])], [0.5, 0.5])["recall_at_1"] == 0.0
    with pytest.raises(ValueError, match="No group has a relevant candidate"):
        rerank_metrics([("q", ["a"], [0])], [0.5])
