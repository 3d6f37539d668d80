"""Multi-label classification (`ClassificationConfig.multi_label`): data, the
thresholds chosen on validation data and saved with the weights, metrics,
predictions files, `predict`, and the exported SavedModel in a fresh process."""

import json
import os

import numpy as np
import pytest

from tfbert import BertConfig
from tfbert.tasks.classification import ClassificationTask
from tfbert.tasks.runner import finetune
from tfbert.train.train_config import TrainConfig

DATA = os.path.join(os.path.dirname(__file__), os.pardir, "data", "finetune")


def config(**overrides):
    return {"train_file": os.path.join(DATA, "topics_train.jsonl"),
            "dev_file": os.path.join(DATA, "topics_dev.tsv"), "text_column": "text",
            "label_column": "labels", "multi_label": True, "seq_length": 32, **overrides}


def test_reads_lists_separators_and_empty_label_sets(tmp_path, make_preprocessor):
    task = ClassificationTask.from_config(config()).prepare(make_preprocessor(32))
    assert task.label_list == ["food", "sport", "weather"]
    examples, targets = task.read(os.path.join(DATA, "topics_dev.tsv"))  # "a,b" in a TSV
    assert targets.shape == (60, 3) and (targets.sum(1) == 0).any() and (targets.sum(1) == 3).any()
    assert examples.label[0] == ["food", "sport", "weather"] and examples.label[1] == []
    x, y = next(iter(task.dataset(task.config.train_file, batch_size=4)))
    assert y.numpy().tolist()[:3] == [[0, 1, 1], [1, 0, 0], [0, 0, 0]]
    path = tmp_path / "pipes.csv"
    path.write_text('text,tags\n"rain, then a goal",weather|sport\nnothing,\n', encoding="utf-8")
    task = ClassificationTask.from_config(config(train_file=str(path), text_column="text",
                                     label_column="tags", label_separator="|"))
    task.prepare(make_preprocessor(32))
    assert task.label_list == ["sport", "weather"]
    assert task.read(str(path))[1].tolist() == [[1.0, 1.0], [0.0, 0.0]]


def test_each_logit_starts_at_its_labels_log_odds(make_preprocessor):
    from tfbert.encoder import BertEncoder

    task = ClassificationTask.from_config(config()).prepare(make_preprocessor(32))
    model = task.build_model(BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931)))
    targets = task.read(task.config.train_file)[1]
    prior = (targets.sum(0) + 1) / (len(targets) + 2)
    bias = model.get_layer("logits").bias.numpy()
    np.testing.assert_allclose(bias, np.log(prior / (1 - prior)), rtol=1e-6)
    assert len(set(np.round(bias, 4))) > 1  # the labels' frequencies differ in this file


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny encoder fine-tuned for 2 short epochs; the dev TSV is also the
    validation file that chooses the thresholds."""
    tmp = tmp_path_factory.mktemp("multi_label")
    train = TrainConfig(epochs=2, steps_per_epoch=10, batch_size=16, learning_rate=1e-3,
                        validation_file=os.path.join(DATA, "topics_dev.tsv"),
                        jit_compile=False, tensorboard=False, verbose=0)
    encoder = BertConfig.from_preset("tiny", vocab_size=1931)
    result = finetune(ClassificationTask.from_config(config()), train, str(tmp / "run"),
                      encoder_config=encoder, vocab_file="tests/data/pretraining/vocab.txt",
                      export_dir=str(tmp / "export"))
    return result, tmp


def test_thresholds_are_chosen_on_validation_data_and_kept_with_the_best_epoch(trained):
    result, tmp = trained
    assert result.main_metric == "micro_f1"
    scores = result.dev_scores[result.best_epoch - 1]
    for key in ("micro_f1", "macro_f1", "subset_accuracy", "micro_precision", "micro_recall",
                "validation_micro_f1"):
        assert 0.0 <= scores[key] <= 1.0
    assert set(scores["per_label"]) == {"food", "sport", "weather"}
    assert set(scores["per_label"]["food"]) == {"precision", "recall", "f1", "support"}
    # One global threshold, chosen on the 0.01 grid, stored in the model.
    kept = result.model.label_thresholds.numpy()
    assert len(set(kept.tolist())) == 1 and 0 < kept[0] < 1
    assert scores["thresholds"] == {l: pytest.approx(float(kept[0])) for l in scores["thresholds"]}
    # Dev scores with those thresholds, recomputed from the model's outputs.
    inputs, (targets, _) = result.dev
    probabilities = 1 / (1 + np.exp(-result.model.predict(inputs, verbose=0)))
    from tfbert.metrics.multi_label import multi_label_metrics

    again = multi_label_metrics(targets, probabilities >= kept, result.task.label_list)
    assert again["micro_f1"] == pytest.approx(scores["micro_f1"])
    assert result.summary["trainable_params"] == sum(
        w.numpy().size for w in result.model.trainable_weights)


def test_predictions_files_and_export_in_a_fresh_process(trained, run_python):
    result, tmp = trained
    task = result.task
    written = task.write_predictions(result.model, result.dev, str(tmp))
    assert [os.path.basename(p) for p in written] == ["dev_predictions.tsv", "dev_per_label.tsv"]
    rows = open(written[0], encoding="utf-8").read().splitlines()
    assert rows[0].split("\t") == ["index", "gold", "predicted", "p_food", "p_sport",
                                   "p_weather"]
    assert len(rows) == 61 and rows[1].split("\t")[1] == "food,sport,weather"
    per_label = [r.split("\t") for r in open(written[1], encoding="utf-8").read().splitlines()]
    assert [r[0] for r in per_label] == ["label", "food", "sport", "weather", "micro"]

    texts = ["the storm closed the roads and the team won the match .",
             "he read a long report .", "we ate fresh bread and soup ."]
    local = task.predict(result.model, texts)
    assert local["probabilities"].shape == (3, 3)
    thresholds = result.model.label_thresholds.numpy()
    for row, p in zip(local["labels"], local["probabilities"]):
        assert row == [l for l, q in zip(task.label_list, p) if q >= thresholds[0]]
    out = run_python(f"""
import json, tensorflow as tf
import tensorflow_text  # registers the tokenizer ops
m = tf.saved_model.load({result.export_dir!r})
r = m.signatures["serving_default"](text=tf.constant({texts!r}))
print(json.dumps({{k: v.numpy().tolist() for k, v in r.items() if k != "labels"}}))
print(json.dumps([[s.decode() for s in row] for row in r["labels"].numpy()]))
""")
    served, labels = (json.loads(line) for line in out.strip().splitlines()[-2:])
    np.testing.assert_allclose(served["probabilities"], local["probabilities"], atol=1e-5)
    assert served["label_mask"] == local["label_mask"].tolist()
    assert served["num_labels"] == [len(r) for r in local["labels"]]
    # Dense for TF Serving's REST API: chosen labels first, "" after them.
    assert labels == [r + [""] * (3 - len(r)) for r in local["labels"]]


def test_fixed_threshold_and_bad_thresholds(make_preprocessor):
    task = ClassificationTask.from_config(config(threshold=0.3))
    assert task.config.threshold == 0.3
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match=r"threshold: must be in \(0, 1\), got"):
            ClassificationTask.from_config(config(threshold=bad))
    with pytest.raises(ValueError, match=r"label_list: \['a'\] appear\(s\) more than once"):
        ClassificationTask.from_config(config(label_list=["a", "b", "a"]))
    task = ClassificationTask.from_config(config(label_list=["food", "sport"])).prepare(make_preprocessor(32))
    with pytest.raises(ValueError, match=r"topics_dev.tsv, line 2: label 'weather' is not in the "
                                         r"label list \['food', 'sport'\]"):
        task.read(os.path.join(DATA, "topics_dev.tsv"))


def test_strings_in_tflite_gives_the_same_decisions(trained, tmp_path):
    """`export_tflite`: LiteRT with tf-text's kernels, ASCII text (where the
    TFLite tokenizer equals the reference one)."""
    import tensorflow_text as tf_text
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    result, _ = trained
    model = result.model
    path = result.task.export_tflite(model, str(tmp_path / "topics.tflite"))
    runner = InterpreterWithCustomOps(
        model_path=path, custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS
    ).get_signature_runner("serve")
    texts = ["snow covered the hills and we ate fresh bread and soup .",
             "the train was on time ."]
    out = runner(text=np.array([t.encode() for t in texts], object))
    local = result.task.predict(model, texts)
    np.testing.assert_allclose(out["probabilities"], local["probabilities"], atol=1e-5)
    assert out["label_mask"].tolist() == local["label_mask"].tolist()
    assert out["num_labels"].tolist() == local["num_labels"].tolist()


def test_long_texts_read_in_windows(trained, tmp_path, make_preprocessor):
    """`long_text=windows` with multi-label: one row of label probabilities per
    text (the windows' logits averaged), the same in predict and the export."""
    from tfbert.export.task_model import load_task_model

    result, _ = trained
    windows = ClassificationTask.from_config(config(seq_length=8, long_text="windows",
                                        label_list=result.task.label_list))
    windows.prepare(result.task.preprocessor)
    texts = [" ".join(["Heavy rain fell before the match and the soup went cold ."] * 6),
             "Sunny .", ""]
    spans, inputs = windows.windows({"text": np.array(texts)})
    assert int(spans["num_windows"][0]) > 3
    want = windows.predict(result.model, texts)
    per_window = result.model(inputs).numpy()
    first = per_window[spans["row"].numpy() == 0].mean(0)
    np.testing.assert_allclose(want["logits"][0], first, atol=1e-5)
    served = load_task_model(windows.export(result.model, str(tmp_path / "export"))).signatures[
        "serving_default"](text=np.array(texts))
    np.testing.assert_allclose(served["probabilities"].numpy(), want["probabilities"], atol=1e-5)
    assert served["label_mask"].numpy().tolist() == want["label_mask"].tolist()
