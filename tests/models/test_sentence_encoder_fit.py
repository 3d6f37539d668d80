"""SentenceEncoder's Keras workflow: `compile()` picks a `tfbert.losses` loss
(in-batch negatives by default), `fit` / `evaluate` take rows of raw texts in
every form, and each bad input is one line. Real text: standard-library
functions' names beside the first line of their docstrings."""

import inspect
import json

import keras
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from tfbert import BertConfig, BertEncoder, BertPreprocessor, SentenceEncoder
from tfbert.losses import (CosineSimilarityLoss, MultipleNegativesRankingLoss, SoftmaxLoss,
                           TripletLoss)
from tfbert.train.optimizer import AdamW, WarmupPolynomialDecay

VOCAB = "tests/data/pretraining/vocab.txt"
FUNCTIONS = ["os.path.join", "os.path.split", "os.path.exists", "os.listdir", "os.getcwd",
             "json.dumps", "json.loads", "shutil.copyfile", "shutil.rmtree", "math.sqrt",
             "math.floor", "math.gcd", "random.shuffle", "random.choice", "textwrap.dedent",
             "textwrap.fill", "glob.glob", "fnmatch.fnmatch", "heapq.heappush", "heapq.heappop",
             "bisect.insort_right", "copy.deepcopy", "inspect.getsource", "time.sleep",
             "zlib.compress", "base64.b64encode", "operator.itemgetter", "functools.reduce",
             "itertools.chain", "shlex.split", "string.capwords", "calendar.isleap"]


def pairs():
    """(name as words, first line of its docstring): "os path join" ->
    "Join two or more pathname components, ..."."""
    modules = {name: __import__(name.rsplit(".", 1)[0], fromlist=["_"]) for name in FUNCTIONS}
    docs = [inspect.getdoc(getattr(modules[n], n.rsplit(".", 1)[1])).splitlines()[0]
            for n in FUNCTIONS]
    return [n.replace(".", " ").replace("_", " ") for n in FUNCTIONS], docs


def tiny(seq_length=24):
    pre = BertPreprocessor(vocab_file=VOCAB, seq_length=seq_length)
    config = BertConfig.from_preset("tiny", vocab_size=1931)
    return SentenceEncoder(BertEncoder(config), preprocessor=pre)


def recall_at_1(model, anchors, positives):
    scores = model.encode(anchors) @ model.encode(positives).T
    return float(np.mean(scores.argmax(1) == np.arange(len(anchors))))


def test_compile_defaults_train_in_batch_negatives():
    keras.utils.set_random_seed(0)
    anchors, positives = pairs()
    model = tiny()
    before = recall_at_1(model, anchors, positives)
    model.compile()  # MultipleNegativesRankingLoss + the recipe's AdamW
    history = model.fit((anchors, positives), epochs=15, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0]
    # Trained on these rows, the model finds each name's docstring among 32.
    after = recall_at_1(model, anchors, positives)
    assert after >= 0.75 and after > before + 0.4, (before, after)
    # The recipe: 32 rows at batch 16, 2 updates an epoch, 15 epochs.
    optimizer = model._training["loss"].optimizer
    assert optimizer is model._training["optimizer"] and isinstance(optimizer, AdamW)
    schedule = optimizer._learning_rate
    assert isinstance(schedule, WarmupPolynomialDecay)
    assert (schedule.decay_steps, schedule.warmup_steps) == (30, 3)
    assert schedule.learning_rate == pytest.approx(1e-3)  # the recipe's rate for `tiny`
    assert int(optimizer.iterations.numpy()) == 30
    assert float(optimizer.learning_rate) == pytest.approx(0.0, abs=1e-9)  # decayed


def test_every_row_form_gives_the_same_loss():
    anchors, positives = pairs()
    model = tiny()
    model.compile()
    expect = model.evaluate((anchors, positives), batch_size=8, verbose=0)
    forms = {
        "lists": (anchors, positives),
        "numpy": (np.array(anchors), np.array(positives)),
        "series": (pd.Series(anchors), pd.Series(positives)),
        "dict": {"anchor": anchors, "positive": positives},
        "dataframe": pd.DataFrame({"question": anchors, "answer": positives}),
        "dataset": tf.data.Dataset.from_tensor_slices((anchors, positives)),
        "batched dataset": tf.data.Dataset.from_tensor_slices((anchors, positives)).batch(8),
    }
    for name, x in forms.items():
        assert model.evaluate(x, batch_size=8, verbose=0) == pytest.approx(expect, rel=1e-5), name


def test_scored_pairs_labels_and_triplets():
    """The other losses: scores (a DataFrame's `score` column is y, as
    sentence-transformers reads it), class ids, three columns."""
    keras.utils.set_random_seed(1)
    anchors, positives = pairs()
    # A pair scores 1 with its own docstring, 0 with the next function's.
    shifted = positives[1:] + positives[:1]
    frame = pd.DataFrame({"a": anchors * 2, "b": positives + shifted,
                          "score": [1.0] * len(anchors) + [0.0] * len(anchors)})
    model = tiny()
    model.compile(loss=CosineSimilarityLoss(model))
    history = model.fit(frame, epochs=6, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    cosine = np.sum(model.encode(anchors) * model.encode(positives), axis=1)
    wrong = np.sum(model.encode(anchors) * model.encode(shifted), axis=1)
    assert cosine.mean() > wrong.mean() + 0.2

    loss = SoftmaxLoss(model, num_labels=2)
    model.compile(loss=loss, optimizer=keras.optimizers.Adam(1e-3))
    labels = np.array([1] * len(anchors) + [0] * len(anchors))
    model.fit((anchors * 2, positives + shifted), labels, epochs=1, verbose=0)
    assert loss.optimizer.iterations.numpy() == 4

    model.compile(loss=TripletLoss(model))
    history = model.fit((anchors, positives, shifted), epochs=1, verbose=0, batch_size=16)
    assert np.isfinite(history.history["loss"][0])


def test_user_optimizer_validation_data_and_the_ways_out(tmp_path, run_python):
    anchors, positives = pairs()
    model = tiny()
    optimizer = keras.optimizers.SGD(0.01)
    model.compile(optimizer=optimizer)
    history = model.fit((anchors, positives), epochs=2, batch_size=16, verbose=0,
                        validation_data=((anchors[:8], positives[:8]), None),
                        callbacks=[keras.callbacks.EarlyStopping(patience=5)])
    assert model._training["loss"].optimizer is optimizer
    assert len(history.history["val_loss"]) == 2
    # Training leaves the model what it was: a .keras file loads with equal embeddings.
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded.encode(anchors[:4]), model.encode(anchors[:4]), atol=1e-6)
    # export: the task's strings-in SavedModel, served in a fresh process.
    export_dir = model.export(str(tmp_path / "export" / "1"), truncate_dim=32)
    out = run_python(f"""
import json
import tensorflow as tf, tensorflow_text  # the tokenizer ops
m = tf.saved_model.load({export_dir!r})
out = m.signatures["serving_default"](text=tf.constant({anchors[:4]!r}))
print(json.dumps({{"outputs": sorted(out), "signatures": sorted(m.signatures),
                   "embedding": out["embedding"].numpy().tolist()}}))
""")
    served = json.loads(out.strip().splitlines()[-1])
    assert served["outputs"] == ["embedding"] and "serving_ids" in served["signatures"]
    np.testing.assert_allclose(served["embedding"], model.encode(anchors[:4], truncate_dim=32),
                               atol=1e-5)


def test_bad_input_is_one_line(raises_one_line_from_tfbert):
    anchors, positives = pairs()
    model = tiny()
    other = tiny()
    check = raises_one_line_from_tfbert
    check("not a loss", lambda: model.compile(loss="mse"), r"loss must be a tfbert\.losses loss")
    check("another model's loss", lambda: model.compile(loss=MultipleNegativesRankingLoss(other)),
          r"wraps another SentenceEncoder")
    check("evaluate first", lambda: tiny().evaluate((anchors, positives)), r"call compile\(\)")
    model.compile()
    cases = {
        "one column": (lambda: model.fit(anchors), r"x must be rows of texts: a tuple of 2 or 3"),
        "four columns": (lambda: model.fit((anchors,) * 4), r"a tuple of 2 or 3 columns"),
        "unequal columns": (lambda: model.fit((anchors, positives[:3])),
                            r"the text columns differ in length \(32, 3\)"),
        "y for ranking": (lambda: model.fit((anchors, positives), [1.0] * 32),
                          r"MultipleNegativesRankingLoss takes no y"),
        "ids": (lambda: model.fit(model.preprocessor(tf.constant(anchors))),
                r"takes rows of raw texts; ids go to"),
        "numbers as texts": (lambda: model.fit(([1, 2], [3, 4])),
                             r"x\[0\]\[0\] is an int \(1\), not a string"),
        "empty": (lambda: model.fit(([], [])), r"is empty: no texts"),
        "bad dict": (lambda: model.fit({"query": anchors, "positive": positives}),
                     r"needs 'anchor' and 'positive'"),
        "int dataset": (lambda: model.fit(tf.data.Dataset.from_tensor_slices(([1], [2]))),
                        r"the dataset must yield a tuple of 2 or 3 string columns"),
        "bad validation": (lambda: model.fit((anchors, positives), validation_data=anchors),
                           r"validation_data must be \(x, y\)"),
        "no epochs": (lambda: model.fit((anchors, positives), epochs=0),
                      r"epochs must be >= 1 \(an integer\), got 0"),
        "batch of none": (lambda: model.fit((anchors, positives), batch_size=0),
                          r"batch_size must be >= 1 \(an integer or None\), got 0"),
    }
    for name, (action, pattern) in cases.items():
        check(name, action, pattern)
    model.compile(loss=CosineSimilarityLoss(model))
    check("no scores", lambda: model.fit((anchors, positives)), r"needs y: one score per row")
    check("score count", lambda: model.fit((anchors, positives), [1.0]),
          r"y has shape \(1,\); expected \(32,\)")
    check("string scores", lambda: model.fit((anchors, positives), ["high"] * 32),
          r"y must hold numbers")
    check("nan score", lambda: model.fit((anchors, positives), [np.nan] + [0.5] * 31),
          r"y holds NaN or inf at row 0")
    check("three columns", lambda: model.fit((anchors, positives, positives), [1.0] * 32),
          r"CosineSimilarityLoss takes 2 text columns, got 3")
    model.compile(loss=SoftmaxLoss(model, num_labels=3))
    check("label range", lambda: model.fit((anchors, positives), [0, 1, 3] + [0] * 29),
          r"y\[2\] is 3: labels must be class ids in \[0, 3\)")
    model.compile(loss=TripletLoss(model))
    check("triplet pairs", lambda: model.fit((anchors, positives)),
          r"TripletLoss takes 3 text columns, got 2")


def test_fit_under_a_two_replica_strategy(run_python):
    """`fit` inside `MirroredStrategy.scope()` on two CPU replicas: the recipe
    counts the global batches and the loss falls (in-batch negatives are each
    replica's half of the batch, as in sentence-transformers without gathering
    across devices); `encode` then equals the same weights on one device."""
    anchors, positives = pairs()
    out = run_python(f"""
import json
import numpy as np
import tensorflow as tf
tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0],
    [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
from tfbert import BertConfig, BertEncoder, BertPreprocessor, SentenceEncoder
anchors, positives = {anchors!r}, {positives!r}

def tiny():
    config = BertConfig.from_preset("tiny", vocab_size=1931)
    return SentenceEncoder(BertEncoder(config),
                           preprocessor=BertPreprocessor(vocab_file="{VOCAB}", seq_length=24))

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
keras.utils.set_random_seed(0)
with strategy.scope():
    model = tiny()
    model.compile()
history = model.fit((anchors, positives), batch_size=8, epochs=5, verbose=0)
plain = tiny()
plain.set_weights(model.get_weights())
difference = np.abs(model.encode(anchors) - plain.encode(anchors)).max()
optimizer = model._training["loss"].optimizer
print(json.dumps({{"replicas": strategy.num_replicas_in_sync,
                   "steps": int(optimizer.iterations.numpy()),
                   "decay_steps": optimizer._learning_rate.decay_steps,
                   "loss": history.history["loss"], "difference": float(difference)}}))
""")
    result = json.loads(out.strip().splitlines()[-1])
    assert result["replicas"] == 2
    assert result["steps"] == result["decay_steps"] == 5 * (32 // 8)
    assert np.isfinite(result["loss"]).all() and result["loss"][-1] < 0.8 * result["loss"][0]
    assert result["difference"] < 1e-5
