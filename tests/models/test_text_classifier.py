"""TextClassifier: Keras `fit` / `evaluate` / `predict` on raw strings, the
recipe behind `compile()`, the three ways out (.keras, export, checkpoint)
and one clear line for each bad input. Real data: the shipped sentiment set."""

import csv
import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertConfig, BertEncoder, BertPreprocessor, TextClassifier
from tfbert.models.classifier import BertClassifier
from tfbert.train.optimizer import AdamW, WarmupPolynomialDecay

VOCAB = "tests/data/pretraining/vocab.txt"
DATA = "tests/data/finetune"
LABELS = ["negative", "positive"]


def sentiment(split):
    with open(f"{DATA}/sentiment_{split}.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [r["sentence"] for r in rows], [r["label"] for r in rows]


def tiny(**kwargs):
    kwargs.setdefault("num_classes", 2)
    kwargs.setdefault("seq_length", 32)
    return TextClassifier.from_preset("tiny", vocab_file=VOCAB, **kwargs)


@pytest.fixture(scope="module")
def trained():
    """A tiny random classifier fitted on the sentiment set with compile() defaults."""
    keras.utils.set_random_seed(0)
    texts, labels = sentiment("train")
    model = tiny(label_list=LABELS)
    model.compile()
    history = model.fit(texts, labels, epochs=12, verbose=0)
    return model, history


def test_compile_defaults_train_and_are_the_recipe(trained):
    model, history = trained
    texts, labels = sentiment("train")
    # 160 texts at the recipe's batch 16: 10 updates an epoch, 12 epochs.
    schedule = model.optimizer._learning_rate
    assert isinstance(model.optimizer, AdamW)
    assert isinstance(schedule, WarmupPolynomialDecay)
    assert (schedule.decay_steps, schedule.warmup_steps) == (120, 12)
    assert schedule.learning_rate == pytest.approx(1e-3)  # the recipe's rate for `tiny`
    assert int(model.optimizer.iterations.numpy()) == 120
    assert float(model.optimizer.learning_rate) == pytest.approx(0.0, abs=1e-9)  # decayed
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    logits = model.predict(texts, verbose=0)
    train_accuracy = np.mean(np.array(LABELS)[logits.argmax(-1)] == np.array(labels))
    assert train_accuracy > 0.9


def test_every_input_kind_gives_the_same_predictions(trained):
    pd = pytest.importorskip("pandas")
    model, _ = trained
    texts, _ = sentiment("dev")
    reference = model.predict(texts, verbose=0)
    assert reference.shape == (len(texts), 2)
    for x in (np.array(texts), pd.Series(texts), np.array(texts, dtype=object),
              [t.encode() for t in texts], tf.constant(texts)):
        np.testing.assert_allclose(model.predict(x, verbose=0), reference, atol=1e-5)
    for ds in (tf.data.Dataset.from_tensor_slices(texts),
               tf.data.Dataset.from_tensor_slices(texts).batch(7)):
        np.testing.assert_allclose(model.predict(ds, verbose=0), reference, atol=1e-5)
    # The batch size changes the padding, never the result.
    np.testing.assert_allclose(model.predict(texts, batch_size=3, verbose=0), reference,
                               atol=1e-5)


def test_evaluate_on_lists_series_and_datasets(trained):
    pd = pytest.importorskip("pandas")
    model, _ = trained
    texts, labels = sentiment("dev")
    ids = [LABELS.index(label) for label in labels]
    frame = pd.DataFrame({"sentence": texts, "label": labels})
    scores = model.evaluate(frame["sentence"], frame["label"], verbose=0, return_dict=True)
    ds = tf.data.Dataset.from_tensor_slices((texts, ids)).batch(8)
    scores_ds = model.evaluate(ds, verbose=0, return_dict=True)
    assert sorted(scores) == ["accuracy", "loss"]
    assert scores["accuracy"] == pytest.approx(scores_ds["accuracy"], abs=1e-6)
    assert scores["loss"] == pytest.approx(scores_ds["loss"], rel=1e-4)
    predicted = model.predict(texts, verbose=0).argmax(-1)
    assert scores["accuracy"] == pytest.approx(np.mean(predicted == np.array(ids)), abs=1e-6)


def test_keras_file_round_trip_with_the_preprocessor_inside(trained, tmp_path, run_python):
    model, _ = trained
    texts, _ = sentiment("dev")
    path = str(tmp_path / "sentiment.keras")
    model.save(path)
    out = run_python(f"""
import json, keras
import tfbert  # registers the tfbert classes
model = keras.models.load_model({path!r})
texts = {texts[:8]!r}
print(json.dumps({{"logits": model.predict(texts, verbose=0).tolist(),
                   "labels": model.label_list, "optimizer": type(model.optimizer).__name__,
                   "lr": float(model.optimizer._learning_rate.learning_rate)}}))
""")
    loaded = json.loads(out.strip().splitlines()[-1])
    np.testing.assert_allclose(loaded["logits"], model.predict(texts[:8], verbose=0), atol=1e-5)
    assert loaded["labels"] == LABELS
    assert loaded["optimizer"] == "AdamW" and loaded["lr"] == pytest.approx(1e-3)


def test_export_is_the_tasks_strings_in_savedmodel(trained, tmp_path, run_python):
    model, _ = trained
    texts, _ = sentiment("dev")
    export_dir = model.export(str(tmp_path / "export" / "1"))
    out = run_python(f"""
import json
import tensorflow as tf, tensorflow_text  # the tokenizer ops
m = tf.saved_model.load({export_dir!r})
sig = m.signatures["serving_default"]
out = sig(text=tf.constant({texts[:6]!r}))
print(json.dumps({{"inputs": sorted(sig.structured_input_signature[1]),
                   "outputs": sorted(out), "label": [s.decode() for s in out["label"].numpy()],
                   "probabilities": out["probabilities"].numpy().tolist(),
                   "signatures": sorted(m.signatures)}}))
""")
    served = json.loads(out.strip().splitlines()[-1])
    assert served["inputs"] == ["text"]
    assert served["outputs"] == ["label", "label_id", "logits", "probabilities"]
    assert "serving_ids" in served["signatures"]
    probabilities = tf.nn.softmax(model.predict(texts[:6], verbose=0)).numpy()
    np.testing.assert_allclose(served["probabilities"], probabilities, atol=1e-5)
    assert served["label"] == [LABELS[i] for i in probabilities.argmax(-1)]


def test_save_pretrained_round_trip_and_head_check(trained, tmp_path):
    model, _ = trained
    texts, _ = sentiment("dev")
    out = model.save_pretrained(str(tmp_path / "ckpt"))
    again = TextClassifier.from_pretrained(out)
    assert again.label_list == LABELS and again.pairs is False
    # The saved seq_length (32) unless another is asked for.
    assert again.preprocessor.seq_length == 32
    assert TextClassifier.from_pretrained(out, seq_length=16).preprocessor.seq_length == 16
    np.testing.assert_allclose(again.predict(texts, verbose=0),
                               model.predict(texts, verbose=0), atol=1e-5)
    with pytest.raises(ValueError, match=r"classifier head has 2 outputs, but num_classes=3"):
        TextClassifier.from_pretrained(out, num_classes=3)
    # A plain encoder checkpoint (no text_classifier section): a fresh head of the asked size.
    from tfbert import checkpoint

    plain = checkpoint.save_checkpoint(str(tmp_path / "plain"), model.encoder.config,
                                       model.encoder.get_named_weights(),
                                       model.preprocessor.vocab.tokens, True)
    fresh = TextClassifier.from_pretrained(plain, num_classes=3, label_list=["a", "b", "c"])
    assert fresh.num_classes == 3 and fresh.label_list == ["a", "b", "c"]
    name = "embeddings/word_embeddings/embeddings"
    np.testing.assert_array_equal(fresh.encoder.get_named_weights()[name],
                                  model.encoder.get_named_weights()[name])


def test_pairs_regression_and_multi_label_heads():
    keras.utils.set_random_seed(1)
    a = ["The file is opened.", "The file is closed.", "A path is joined.", "A path is split."]
    b = ["It is open.", "It is shut.", "The parts are joined.", "The parts are apart."]
    pair = tiny(num_classes=2)
    pair.compile()
    pair.fit((a, b), [1, 1, 0, 0], epochs=1, verbose=0)
    assert pair.pairs and pair.text_inputs == ("text", "text_b")
    assert pair.predict((a, b), verbose=0).shape == (4, 2)
    # predict batches pairs by length (longest first); rows stay in input order.
    one_by_one = np.concatenate([pair.predict(([x], [y]), verbose=0) for x, y in zip(a, b)])
    np.testing.assert_allclose(pair.predict((a, b), batch_size=2, verbose=0), one_by_one,
                               atol=1e-5)
    with pytest.raises(ValueError, match="This model reads pairs; got 1 text column"):
        pair.predict(a, verbose=0)

    regression = tiny(num_classes=1)
    regression.compile()
    history = regression.fit(a, [0.5, 1.5, 2.5, 3.5], epochs=2, verbose=0)
    assert "mae" in history.history
    assert regression.predict(a, verbose=0).shape == (4, 1)

    multi = tiny(num_classes=3, multi_label=True, label_list=["io", "path", "close"])
    multi.compile()
    multi.fit(a, np.array([[1, 0, 0], [1, 0, 1], [0, 1, 0], [0, 1, 0]]), epochs=1, verbose=0)
    assert multi.predict(a, verbose=0).shape == (4, 3)
    np.testing.assert_allclose(multi.label_thresholds.numpy(), [0.5] * 3)


def test_user_choices_replace_the_recipe():
    keras.utils.set_random_seed(2)
    texts, labels = sentiment("train")
    model = tiny(label_list=LABELS)
    model.compile(optimizer=keras.optimizers.SGD(0.05, gradient_accumulation_steps=2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=[keras.metrics.SparseCategoricalAccuracy(name="acc")])
    stop = keras.callbacks.EarlyStopping(monitor="loss", patience=0)
    history = model.fit(texts, labels, batch_size=40, epochs=3, callbacks=[stop], verbose=0)
    assert isinstance(model.optimizer, keras.optimizers.SGD)
    assert "acc" in history.history
    # 4 micro-batches an epoch, 2 per update: the optimizer counts updates.
    assert int(model.optimizer.iterations.numpy()) == 2 * len(history.history["loss"])


def test_lora_through_the_encoder_layers():
    from tfbert.train.lora import enable_lora, lora_layers

    texts, labels = sentiment("train")
    model = tiny(label_list=LABELS)
    enable_lora(model, rank=2)
    assert lora_layers(model)
    frozen = [w.numpy() for w in model.encoder.embeddings.weights]
    model.compile()
    model.fit(texts[:32], labels[:32], epochs=1, verbose=0)
    for before, w in zip(frozen, model.encoder.embeddings.weights):
        np.testing.assert_array_equal(before, w.numpy())


def test_fit_under_a_two_replica_strategy(run_python):
    out = run_python(f"""
import json, csv
import tensorflow as tf
tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0],
    [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
from tfbert import TextClassifier
rows = list(csv.DictReader(open("{DATA}/sentiment_train.tsv"), delimiter="\\t"))
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
keras.utils.set_random_seed(0)
with strategy.scope():
    model = TextClassifier.from_preset("tiny", vocab_file="{VOCAB}", seq_length=32,
                                       label_list=["negative", "positive"])
    model.compile()
history = model.fit([r["sentence"] for r in rows], [r["label"] for r in rows], batch_size=32,
                    epochs=2, verbose=0)
print(json.dumps({{"replicas": strategy.num_replicas_in_sync,
                   "steps": int(model.optimizer.iterations.numpy()),
                   "decay_steps": model.optimizer._learning_rate.decay_steps,
                   "loss": history.history["loss"]}}))
""")
    result = json.loads(out.strip().splitlines()[-1])
    assert result["replicas"] == 2
    assert result["steps"] == result["decay_steps"] == 10  # 160 texts / 32, 2 epochs
    assert all(np.isfinite(result["loss"]))


@pytest.mark.parametrize("call, match", [
    (lambda m: m.fit(np.array([[2, 7, 3]]), [0]), r"x holds int64 values, not strings"),
    (lambda m: m.fit([[2, 7, 3]], [0]), r"x\[0\] is a list"),
    (lambda m: m.fit([2, 7], [0, 1]), r"x\[0\] is an int \(2\), not a string"),
    (lambda m: m.fit("one text", [0]), r"x is one string; pass a list of texts"),
    (lambda m: m.fit(None, [0]), r"x is None"),
    (lambda m: m.fit([], []), r"x is empty"),
    (lambda m: m.predict([]), r"x is empty"),
    (lambda m: m.fit(["a", None], [0, 1]), r"x\[1\] is NoneType"),
    (lambda m: m.fit(["a", "b"], [0, 2]), r"y\[1\] is 2: class ids must be in \[0, 2\) "
                                          r"\(num_classes=2\)"),
    (lambda m: m.fit(["a", "b"], [0.0, float("nan")]), r"y\[1\] is nan: a missing label"),
    (lambda m: m.fit(["a", "b"], np.array(["0", None], object)), r"y\[1\] is None: a missing "
                                                                  r"label"),
    (lambda m: m.fit(["a", "b"], [0, 1], batch_size=0), r"batch_size must be >= 1"),
    (lambda m: m.fit(["a", "b"], [0, 1], epochs=0), r"epochs must be >= 1 \(an integer or "
                                                          r"None\), got 0"),
    (lambda m: m.fit(["a", "b"], [0, 1], epochs=-2), r"epochs must be >= 1"),
    (lambda m: m.evaluate(["a", "b"], [0, 1], batch_size=-1), r"batch_size must be >= 1"),
    (lambda m: m.predict(["a", "b"], batch_size=0), r"batch_size must be >= 1"),
    (lambda m: m.predict(["a"], batch_size=2.5),
     r"batch_size must be >= 1 \(an integer or None\), got 2\.5"),
    (lambda m: m.predict([b"caf\xe9 au lait"]), r"x\[0\] is bytes that are not UTF-8 text "
                                        r"\(invalid continuation byte at byte 3\)"),
    (lambda m: m.predict(("a question", "an answer")), r"x is a tuple of two strings: pass one "
                                                       r"pair as \(\[text\], \[text_b\]\)"),
    (lambda m: m.fit(["a", "b"], [0, -1]), r"y\[1\] is -1"),
    (lambda m: m.fit(["a", "b"], [0]), r"y has 1 rows for 2 texts"),
    (lambda m: m.fit(["a", "b"], None), r"fit and evaluate need y"),
    (lambda m: m.fit(["a", "b"], ["good", "bad"]), r"labels \['bad', 'good'\] are not in "
                                                   r"label_list \['0', '1'\]"),
    (lambda m: m.fit(["a", "b"], [0.5, 1.0]), r"y holds fractions"),
    (lambda m: m.fit(["a", "b"], [[0, 1], [1, 0]]), r"0/1 matrix is for multi_label=True"),
    (lambda m: m.fit((["a", "b"], ["c"]), [0, 1]), r"the two text columns differ in length"),
    (lambda m: m.fit(["a", "b"], [0, 1], sample_weight=[1.0]), r"sample_weight has shape"),
    (lambda m: m.fit(tf.data.Dataset.from_tensor_slices(["a", "b"]), epochs=1),
     r"dataset of texts only: fit and evaluate need"),
    (lambda m: m.fit(tf.data.Dataset.from_tensor_slices(([1, 2], [0, 1]))),
     r"the dataset yields int32 texts, not strings"),
    (lambda m: m.fit(["a", "b"], [0, 1], validation_split=0.5), r"validation_split is not"),
    (lambda m: m("a text"), r"TextClassifier takes the dict of the three int32 id tensors"),
    (lambda m: m.predict({"text": ["a"]}), r"x is a dict \(text\)"),
    (lambda m: m.export("unused"), r"has not read any text yet"),
    (lambda m: m.evaluate(["a"], None), r"fit and evaluate need y: one label per text"),
    (lambda m: m.save(None), r"^save must be a path \(a string\), got None\.$"),
    (lambda m: m.save("m.h5"), r"^save: m\.h5 does not end in \.keras; name a \.keras file"),
    (lambda m: m.save("."), r"^save: \. is a directory; name a \.keras file to write\.$"),
    # Issue 66, the sweep: each was an error from inside, or an answer.
    (lambda m: m.save_pretrained(None), r"^save_pretrained must be a path \(a string\), got "
                                        r"None\.$"),  # once "The output directory is empty"
    (lambda m: m.predict({"b", "a"}), r"^x is a set, whose order is arbitrary"),  # rows shuffled
    (lambda m: m.fit(["a", "b"], [0, 1], seed="x"), r"^seed must be >= 0 \(an integer or "
                                                    r"None\), got 'x'\.$"),  # TensorFlow's
    (lambda m: m.fit(["a", "b"], [0, 1], sample_weight=["x", "y"]),
     r"^sample_weight must be numbers, one weight per text"),  # NumPy's "could not convert"
    (lambda m: TextClassifier(m.encoder, m.preprocessor, label_list="ab"),
     r"^label_list must be a list of label names, got the string 'ab'\.$"),  # labels a, b
    (lambda m: TextClassifier(m.encoder, m.preprocessor, num_clases=3),
     r"^TextClassifier got unexpected keyword argument\(s\) \['num_clases'\]\.$"),  # dropped
    (lambda m: TextClassifier.from_pretrained("nowhere", seq_length=0),
     r"^seq_length must be >= 2 \(an integer or None\), got 0\.$"),  # was replaced by a saved one
    (lambda m: TextClassifier.from_preset("tiny", None), r"^vocab_file must be a path"),
    (lambda m: m.fit(tf.data.Dataset.from_tensor_slices((["a", "b"], [0, 7])).batch(2)),
     r"^x: the dataset holds a class id outside \[0, 2\) \(num_classes=2\)\.$"),
])
def test_bad_input_is_one_line(call, match):
    model = tiny()
    model.compile()
    with pytest.raises((TypeError, ValueError), match=match) as info:
        call(model)
    assert "\n" not in str(info.value)


def test_fit_without_epochs_trains_the_recipes_epochs(capsys):
    """No `epochs` on a recipe-compiled model: the runner's choice for this
    many texts (300 updates at least, 20 epochs at most), said once and kept
    in `history.params`; without the recipe, Keras' one epoch."""
    texts, labels = sentiment("train")
    model = tiny(label_list=LABELS)
    model.compile()
    history = model.fit(texts[:32], labels[:32], verbose=2)  # 2 batches of 16 an epoch
    assert history.params["epochs"] == 20 and len(history.history["loss"]) == 20
    assert int(model.optimizer.iterations) == 40
    assert history.params["recipe"]["epochs"] == "20 (auto: 32 examples, at least 300 steps)"
    assert history.params["recipe"]["batch_size"] == "16 (auto: 32 examples)"
    said = [line for line in capsys.readouterr().out.splitlines() if "the recipe's" in line]
    assert said == ["TextClassifier.fit: the recipe's learning_rate 0.001 (auto: hidden size "
                    "128), batch_size 16 (auto: 32 examples), epochs 20 (auto: 32 examples, at "
                    "least 300 steps)"]
    # An explicit count is kept; a user's own optimizer keeps Keras' default of one.
    assert model.fit(texts[:32], labels[:32], epochs=2, verbose=0).params["epochs"] == 2
    own = tiny(label_list=LABELS)
    own.compile(optimizer="adam")
    history = own.fit(texts[:32], labels[:32], verbose=0)
    assert history.params["epochs"] == 1 and "recipe" not in history.params


def test_fit_with_validation_keeps_the_best_epoch(capsys):
    """With validation data, a recipe-compiled model ends on its best epoch
    (validation accuracy, ties to the lower loss), as the runner does; a
    user's own EarlyStopping takes precedence."""
    keras.utils.set_random_seed(1)
    texts, labels = sentiment("train")
    dev_texts, dev_labels = sentiment("dev")
    model = tiny(label_list=LABELS)
    model.compile()
    history = model.fit(texts[:64], labels[:64], epochs=5, verbose=2,
                        validation_data=(dev_texts[:32], dev_labels[:32]))
    logs = history.history
    keys = [(a, -l) for a, l in zip(logs["val_accuracy"], logs["val_loss"])]
    best = max(range(5), key=lambda i: (keys[i], -i))
    assert history.params["best_epoch"] == best + 1
    assert f"TextClassifier.fit: kept epoch {best + 1} of 5 (best val_accuracy)" in (
        capsys.readouterr().out)
    # The weights are that epoch's: evaluating gives its validation scores.
    scores = model.evaluate(dev_texts[:32], dev_labels[:32], return_dict=True, verbose=0)
    assert scores["loss"] == pytest.approx(logs["val_loss"][best], abs=1e-4)
    if best != 4:  # the last epoch's scores differ from the kept one's
        assert scores["loss"] != pytest.approx(logs["val_loss"][4], abs=1e-6)
    own = tiny(label_list=LABELS)
    own.compile()
    history = own.fit(texts[:32], labels[:32], epochs=2, verbose=0,
                      validation_data=(dev_texts[:16], dev_labels[:16]),
                      callbacks=[keras.callbacks.EarlyStopping(patience=5)])
    assert "best_epoch" not in history.params


def test_export_to_an_existing_file_names_the_file(tmp_path):
    """Not "has not read any text yet": the path is the problem."""
    model = tiny()
    (tmp_path / "taken").write_text("a file")
    with pytest.raises(ValueError, match=r"taken is a file, not a directory"):
        model.export(tmp_path / "taken")


def test_multi_label_targets_as_lists_of_label_names():
    """Each text's list of label names is the 0/1 matrix over label_list
    (NumPy alone calls such ragged rows an "inhomogeneous shape")."""
    multi = tiny(num_classes=3, multi_label=True, label_list=["sports", "food", "travel"])
    np.testing.assert_array_equal(
        multi.targets([["sports", "travel"], [], ["food"]], 3),
        [[1, 0, 1], [0, 0, 0], [0, 1, 0]])
    with pytest.raises(ValueError, match=r"^y\[1\] names 'music', which is not in label_list "):
        multi.targets([["sports"], ["music"]], 2)
    with pytest.raises(ValueError, match=r"^y has rows of different lengths"):
        multi.targets([[1, 0, 1], [0, 1]], 2)
    multi.compile()
    history = multi.fit(["A match in the rain .", "Soup and bread ."], [["sports"], ["food"]],
                        epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


def test_bad_targets_for_the_other_heads():
    regression = tiny(num_classes=1)
    regression.compile()
    with pytest.raises(ValueError, match=r"y\[1\] is not finite"):
        regression.fit(["a", "b"], [1.0, float("nan")])
    with pytest.raises(ValueError, match=r"regression targets must be one number per text"):
        regression.fit(["a", "b"], ["x", "y"])
    multi = tiny(num_classes=3, multi_label=True)
    multi.compile()
    with pytest.raises(ValueError, match=r"multi_label targets must be a 0/1 matrix of shape "
                                         r"\(2, 3\)"):
        multi.fit(["a", "b"], [0, 2])
    with pytest.raises(ValueError, match=r"0/1 matrix"):
        multi.fit(["a", "b"], [[0, 2, 0], [1, 0, 0]])


@pytest.mark.parametrize("kwargs, match", [
    ({"num_classes": 2.5}, r"num_classes must be an int"),
    ({"num_classes": 1, "multi_label": True}, r"multi_label needs num_classes >= 2"),
    ({"num_classes": 3, "label_list": ["a", "b"]}, r"label_list has 2 names for num_classes=3"),
    ({"num_classes": 1, "label_list": ["a"]}, r"regression has no labels"),
    ({"num_classes": 2, "label_list": ["a", "a"]}, r"names a label twice"),
    ({"threshold": 1.5, "multi_label": True}, r"threshold must be in \(0, 1\)"),
])
def test_bad_constructor_arguments(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        tiny(**kwargs)


def test_strings_given_to_an_ids_model_is_one_line():
    encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931))
    model = BertClassifier(encoder, num_classes=2)
    for x in (["a text"], np.array(["a text"]), tf.constant(["a text"]),
              tf.data.Dataset.from_tensor_slices(["a text"])):
        with pytest.raises(TypeError, match=r"BertClassifier takes the dict of the three int32 "
                                            r"id tensors .* use tfbert.TextClassifier"):
            model.predict(x)
    with pytest.raises(TypeError, match="not strings"):
        model(["a text"])


def test_get_config_round_trip():
    pre = BertPreprocessor(vocab_file=VOCAB, seq_length=16)
    model = TextClassifier(BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931)), pre,
                           num_classes=3, label_list=["a", "b", "c"], pairs=True, dropout=0.2)
    again = TextClassifier.from_config(model.get_config())
    assert again.get_config() == model.get_config()
    assert again.preprocessor.seq_length == 16 and again.label_list == ["a", "b", "c"]


@pytest.mark.slow
def test_fit_and_the_runner_train_the_same_model(tmp_path):
    """One training path: `tfbert.tasks.runner.finetune` (what tools/finetune.py runs) and a
    user's `compile(); fit(...)` with the same seed and settings give the same dev score."""
    from tfbert.tasks.classification import ClassificationTask
    from tfbert.tasks.runner import finetune
    from tfbert.train.train_config import TrainConfig

    task = ClassificationTask({"train_file": f"{DATA}/sentiment_train.tsv",
                               "dev_file": f"{DATA}/sentiment_dev.tsv", "seq_length": 32,
                               "label_list": LABELS})
    train = TrainConfig(epochs=3, batch_size=16, seed=7, jit_compile=False, verbose=0,
                        tensorboard=False)
    result = finetune(task, train, str(tmp_path / "run"),
                      encoder_config=BertConfig.from_preset("tiny", vocab_size=1931),
                      vocab_file=VOCAB)
    assert result.best_epoch == 3  # 160 texts: too few to hold out; the last epoch is kept

    keras.utils.set_random_seed(7)
    model = tiny(label_list=LABELS)
    model.compile()
    texts, labels = sentiment("train")
    model.fit(texts, labels, batch_size=16, epochs=3, seed=7, verbose=0)
    dev_texts, dev_labels = sentiment("dev")
    predicted = np.array(LABELS)[model.predict(dev_texts, verbose=0).argmax(-1)]
    accuracy = float(np.mean(predicted == np.array(dev_labels)))
    assert accuracy == pytest.approx(result.dev_scores[-1]["accuracy"], abs=1e-9)
    # Not only the score: the same class, the same trained weights, the same logits.
    assert type(result.model) is TextClassifier
    np.testing.assert_allclose(model.predict(dev_texts, verbose=0),
                               result.model.predict(dev_texts, verbose=0), atol=1e-4)


# === Long texts: long_text="windows" ===

POOL = {"mean": lambda w: w.mean(0), "max": lambda w: w.max(0), "first": lambda w: w[0]}


def long_texts(split="train", sentences=6):
    """Texts of `sentences` shipped sentences of one label each, far longer than 16
    wordpieces, with that label."""
    texts, labels = sentiment(split)
    out_texts, out_labels = [], []
    for label in LABELS:
        same = [t for t, l in zip(texts, labels) if l == label]
        for i in range(0, len(same) - sentences + 1, sentences):
            out_texts.append(" ".join(same[i:i + sentences]))
            out_labels.append(label)
    return out_texts, out_labels


def windowed_model(**kwargs):
    kwargs.setdefault("label_list", LABELS)
    return tiny(seq_length=16, long_text="windows", doc_stride=7, **kwargs)


def by_hand(model, columns):
    """Each text's windows' logits, from the model on its windows' ids."""
    spans, inputs = model.windows(tuple(tf.constant(c) for c in columns))
    per_window = model(inputs, training=False).numpy()
    rows = spans["row"].numpy()
    return [per_window[rows == r] for r in range(len(columns[0]))]


@pytest.fixture(scope="module")
def windowed():
    """A tiny windowed classifier fitted on long texts (windows of 14 pieces, 7 apart)."""
    keras.utils.set_random_seed(0)
    texts, labels = long_texts()
    model = windowed_model()
    model.compile()
    history = model.fit(texts, labels, epochs=4, verbose=0)
    return model, history


def test_windows_train_and_the_schedule_counts_windows(windowed):
    from tfbert.text.windows import window_spans

    model, history = windowed
    texts, labels = long_texts()
    lengths = model.preprocessor.tokenize(tf.constant(texts)).merge_dims(1, 2).row_lengths()
    windows = int(tf.reduce_sum(window_spans(lengths, 14, doc_stride=7)["num_windows"]))
    assert windows > 5 * len(texts) and model.num_texts(texts) == windows
    steps = -(-windows // 16)  # the recipe's batch 16 (of windows), 4 epochs
    assert model.optimizer._learning_rate.decay_steps == int(model.optimizer.iterations) \
        == 4 * steps
    assert history.history["loss"][-1] < 0.8 * history.history["loss"][0]
    # evaluate reads windows too: each with its text's label.
    scores = model.evaluate(texts, labels, verbose=0, return_dict=True)
    assert sorted(scores) == ["accuracy", "loss"] and scores["accuracy"] > 0.5


def test_each_window_carries_its_texts_label_and_weight():
    model = windowed_model()
    texts, labels = long_texts()
    texts, labels = texts[:4] + ["Great film ."], labels[:4] + ["positive"]
    weights = np.array([1.0, 2.0, 0.0, 0.5, 3.0], np.float32)
    per_text = model.windows_per_text([np.array(texts, object)])
    want = sorted((LABELS.index(l), w) for l, w, n in zip(labels, weights, per_text)
                  for _ in range(n))
    ids = lambda x: [tuple(r[m > 0]) for r, m in zip(x["input_word_ids"].numpy(),
                                                     x["input_mask"].numpy())]
    got, in_order = [], []
    for x, ys, ws in model.text_batches(texts, labels, weights, batch_size=8):
        got += [(int(y), float(w)) for y, w in zip(ys.numpy(), ws.numpy())]
        in_order += ids(x)
    assert sorted(got) == want and len(got) == per_text.sum() > len(texts)
    # The training stream: one epoch is every window once, a text's windows mixed with others'.
    stream = model.text_batches(texts, labels, batch_size=8, shuffle=True, seed=3)
    epoch = [w for x, _ in stream.take(-(-int(per_text.sum()) // 8)) for w in ids(x)]
    assert sorted(epoch) == sorted(in_order) and epoch != in_order
    # Counted once for fit's schedule and its batches: the same texts give
    # the same counts without tokenizing again; other texts are counted anew.
    again = model.windows_per_text([np.array(list(texts), object)])
    assert again is model.windows_per_text([np.array(texts, object)])
    changed = model.windows_per_text([np.array(texts[:4] + [texts[0]], object)])
    assert changed is not again and changed[-1] == per_text[0] > per_text[-1]


def test_predict_pools_the_windows_logits_in_every_mode(windowed):
    model, _ = windowed
    texts, _ = sentiment("dev")
    x = [" ".join(texts[:7]), "Awful food .", "", " ".join(texts[7:10])]
    windows = by_hand(model, [x])
    assert [len(w) for w in windows][1:3] == [1, 1] and len(windows[0]) > 3
    rows = {}
    for pooling in POOL:
        same = model
        if pooling != model.window_pooling:
            same = TextClassifier.from_config({**model.get_config(), "window_pooling": pooling})
            same.set_weights(model.get_weights())
        rows[pooling] = same.predict(x, batch_size=4)
        np.testing.assert_allclose(rows[pooling], np.stack([POOL[pooling](w) for w in windows]),
                                   atol=1e-5)
    # "first" is what truncation reads: the long text's row is another.
    assert not np.allclose(rows["first"][0], rows["mean"][0])
    # batch_size counts windows (a text with more is a call of its own): same rows.
    np.testing.assert_allclose(model.predict(x, batch_size=1), rows["mean"], atol=1e-5)
    ds = tf.data.Dataset.from_tensor_slices(x).batch(3)
    np.testing.assert_allclose(model.predict(ds), rows["mean"], atol=1e-5)


def test_pairs_window_the_second_text():
    texts, labels = long_texts()
    questions, passages = ["Is it good ?", "Was the food bad ?"] * 2, texts[:4]
    model = windowed_model()
    per_text = model.windows_per_text([np.array(questions, object), np.array(passages, object)])
    assert model.num_texts((questions, passages)) == per_text.sum() > 8 and model.pairs
    batches = model.text_batches((questions, passages), labels[:4], batch_size=64)
    assert sum(len(y) for _, y in batches) == per_text.sum()
    spans, inputs = model.windows((tf.constant(questions[:1]), tf.constant(passages[:1])))
    q = model.preprocessor.tokenize(tf.constant(questions[:1])).merge_dims(1, 2)[0].numpy()
    ids, types = inputs["input_word_ids"].numpy(), inputs["input_type_ids"].numpy()
    assert ids.shape[0] > 2
    for w in range(ids.shape[0]):  # every window: [CLS] question [SEP] passage part [SEP]
        np.testing.assert_array_equal(ids[w, 1:1 + len(q)], q)
        assert types[w, 1 + len(q)] == 0 and types[w, 2 + len(q)] == 1
    want = np.stack([w.mean(0) for w in by_hand(model, [questions, passages])])
    np.testing.assert_allclose(model.predict((questions, passages)), want, atol=1e-5)
    with pytest.raises(ValueError, match="This model reads pairs; got 1 text column"):
        model.predict(passages)


def test_multi_label_and_regression_with_windows():
    texts = long_texts()[0][:3]
    multi = windowed_model(num_classes=3, multi_label=True, label_list=["io", "path", "close"],
                           window_pooling="max")
    targets = np.array([[1, 0, 0], [1, 0, 1], [0, 0, 0]])
    regression = windowed_model(num_classes=1, label_list=None)
    for model, y in ((multi, targets), (regression, [0.5, 1.5, 2.5])):
        per_text = model.windows_per_text([np.array(texts, object)])
        got = np.concatenate([t for _, t in model.text_batches(texts, y, batch_size=8)])
        want = np.repeat(model.targets(y, 3), per_text, axis=0)  # text order: no shuffle
        np.testing.assert_array_equal(got, want)
    want = np.stack([w.max(0) for w in by_hand(multi, [texts])])
    np.testing.assert_allclose(multi.predict(texts), want, atol=1e-5)


def test_window_settings_survive_keras_file_and_checkpoint(windowed, tmp_path):
    import os

    model, _ = windowed
    model = TextClassifier.from_config({**model.get_config(), "doc_overlap": 5,
                                        "max_windows": 9, "window_pooling": "max"})
    model.set_weights(windowed[0].get_weights())
    x = [" ".join(sentiment("dev")[0][:8]), "Great film ."]
    want = model.predict(x)
    settings = {"long_text": "windows", "doc_stride": 7, "doc_overlap": 5, "max_windows": 9,
                "window_pooling": "max"}
    path = str(tmp_path / "windows.keras")
    model.save(path)
    for again in (keras.models.load_model(path),
                  TextClassifier.from_pretrained(model.save_pretrained(str(tmp_path / "ckpt")))):
        assert again.window_settings() == settings
        np.testing.assert_allclose(again.predict(x), want, atol=1e-5)
    # A checkpoint written before the window settings: truncation, as it was.
    config_path = os.path.join(str(tmp_path / "ckpt"), "config.json")
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    for key in settings:
        del config["text_classifier"][key]
    with open(config_path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    old = TextClassifier.from_pretrained(str(tmp_path / "ckpt"))
    assert old.long_text == "truncate" and old.window_pooling == "mean"


@pytest.mark.slow
def test_windowed_export_serves_predict(windowed, tmp_path, run_python):
    model, _ = windowed
    texts, _ = sentiment("dev")
    x = [" ".join(texts[:9]), "Great film .", "", "word " * 300]
    export_dir = model.export(str(tmp_path / "export"))
    out = run_python(f"""
import json
import tensorflow as tf, tensorflow_text  # the tokenizer ops
m = tf.saved_model.load({export_dir!r})
out = m.signatures["serving_default"](text=tf.constant({x!r}))
print(json.dumps({{"logits": out["logits"].numpy().tolist(),
                   "label": [s.decode() for s in out["label"].numpy()]}}))
""")
    served = json.loads(out.strip().splitlines()[-1])
    want = model.predict(x)
    np.testing.assert_allclose(served["logits"], want, atol=1e-5)
    assert served["label"] == [LABELS[i] for i in want.argmax(-1)]


@pytest.mark.slow
def test_windows_under_a_two_replica_strategy(run_python):
    out = run_python(f"""
import json, csv
import numpy as np
import tensorflow as tf
tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0],
    [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
from tfbert import TextClassifier
rows = list(csv.DictReader(open("{DATA}/sentiment_dev.tsv"), delimiter="\\t"))
texts = [" ".join(r["sentence"] for r in rows[i:i + 5]) for i in range(0, 40, 5)] + ["Good ."]
labels = [rows[i]["label"] for i in range(0, 40, 5)] + ["positive"]
settings = dict(vocab_file="{VOCAB}", seq_length=16, label_list=["negative", "positive"],
                long_text="windows", doc_stride=7)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
keras.utils.set_random_seed(0)
with strategy.scope():
    model = TextClassifier.from_preset("tiny", **settings)
    model.compile()
history = model.fit(texts, labels, epochs=1, verbose=0)
one_device = TextClassifier.from_preset("tiny", **settings)
one_device.set_weights(model.get_weights())
print(json.dumps({{"replicas": strategy.num_replicas_in_sync,
                   "steps": int(model.optimizer.iterations.numpy()),
                   "windows": model.num_texts(texts), "loss": history.history["loss"],
                   "shape": list(model.predict(texts).shape),
                   "diff": float(np.abs(model.predict(texts, batch_size=5)
                                        - one_device.predict(texts)).max())}}))
""")
    result = json.loads(out.strip().splitlines()[-1])
    assert result["replicas"] == 2 and result["shape"] == [9, 2]
    assert result["steps"] == result["windows"] // 16  # replicas: full batches only
    assert np.isfinite(result["loss"]).all() and result["diff"] < 1e-5


@pytest.mark.parametrize("kwargs, match", [
    ({"long_text": "chunks"}, r"long_text must be one of \('truncate', 'windows'\), got 'chunks'"),
    ({"doc_stride": 0}, r"doc_stride must be >= 1"),
    ({"doc_stride": -3}, r"doc_stride must be >= 1"),
    ({"doc_overlap": -1}, r"doc_overlap must be >= 0"),
    ({"max_windows": 0}, r"max_windows must be >= 1"),
    ({"max_windows": 2.5}, r"max_windows must be >= 1 \(an integer\)"),
    ({"window_pooling": "sum"}, r"window_pooling must be one of \('mean', 'max', 'first'\)"),
    ({"long_text": "windows", "doc_overlap": 14}, r"doc_overlap=14 must be < 14"),
    ({"long_text": "windows", "doc_overlap": 7, "pairs": True},
     r"doc_overlap=7 must be < 7, the text wordpieces of a window after the first text"),
])
def test_bad_window_arguments_are_one_line(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match) as info:
        tiny(seq_length=16, **kwargs)
    assert "\n" not in str(info.value)
