"""Task SavedModels: reloaded in a fresh process, raw strings give the
in-memory model's outputs; the ids signature too; written atomically."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertConfig, BertEncoder
from tfbert.tasks.classification import ClassificationConfig, ClassificationTask
from tfbert.tasks.feature_extraction import FeatureExtractionConfig, FeatureExtractionTask
from tfbert.tasks.tagging import TaggingConfig, TaggingTask

TEXT = ["The pasta was superb !", "Angela Merkel visited Ürgüp , didn't she?", "ok"]
TEXT_B = ["I loved it .", "Yes .", "Fine"]

FRESH = """
import json, sys
import numpy as np
import tensorflow as tf
from tfbert.export.task_model import load_task_model
paths, text, text_b = json.loads(INPUT)
dec = lambda x: [dec(i) for i in x] if isinstance(x, list) else x.decode()
plain = lambda res: {k: dec(v.numpy().tolist()) if v.dtype == tf.string else v.numpy().tolist()
                     for k, v in res.items()}
out = {}
for name, path in paths.items():
    sigs = load_task_model(path).signatures
    kwargs = {"text": tf.constant(text)}
    if name == "pairs":
        kwargs["text_b"] = tf.constant(text_b)
    res = sigs["serving_default"](**kwargs)
    out[name] = plain(res)
    ids = {k: tf.constant(v, tf.int32) for k, v in IDS.items()}
    out[name + "_ids"] = plain(sigs["serving_ids"](**ids))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def make_preprocessor(uncased_vocab_file):
    from tfbert.text.preprocessor import BertPreprocessor

    return lambda n: BertPreprocessor(vocab_file=uncased_vocab_file, seq_length=n)


@pytest.fixture(scope="module")
def exported(tmp_path_factory, make_preprocessor):
    tmp_path = tmp_path_factory.mktemp("task_models")
    encoder = BertEncoder(BertConfig.from_preset("tiny", dropout_rate=0.0))
    pairs = ClassificationTask(ClassificationConfig(
        label_list=["neg", "pos"], text_b_column="b", seq_length=24)).prepare(make_preprocessor(24))
    tagging = TaggingTask(TaggingConfig(label_list=["O", "B-PER", "I-PER"], seq_length=12)
                          ).prepare(make_preprocessor(12))
    features = FeatureExtractionTask(FeatureExtractionConfig(layers=(-2, -1), seq_length=16)
                                     ).prepare(make_preprocessor(16))
    models = {"pairs": (pairs, pairs.build_model(encoder)),
              "tagging": (tagging, tagging.build_model(encoder)),
              "features": (features, features.build_model(encoder))}
    paths = {n: str(tmp_path / n / "export" / "1") for n in models}
    for name, (task, model) in models.items():
        task.export(model, paths[name])
    return models, paths


def test_fresh_process_matches_in_memory(exported, run_python, make_preprocessor):
    models, paths = exported
    ids = {k: v.numpy().tolist() for k, v in make_preprocessor(10)(tf.constant(TEXT)).items()}
    source = f"INPUT = {json.dumps(json.dumps([paths, TEXT, TEXT_B]))!s}\nIDS = {ids!r}\n" + FRESH
    out = json.loads(run_python(source).strip().splitlines()[-1])

    task, model = models["pairs"]
    want = task.predict(model, TEXT, TEXT_B)
    np.testing.assert_allclose(out["pairs"]["logits"], want["logits"], atol=1e-5)
    np.testing.assert_allclose(out["pairs"]["probabilities"], want["probabilities"], atol=1e-5)
    assert out["pairs"]["label"] == want["label"].tolist()
    np.testing.assert_allclose(out["pairs_ids"]["logits"], model(
        {k: tf.constant(v) for k, v in ids.items()}), atol=1e-5)

    task, model = models["tagging"]
    want = task.predict(model, TEXT)
    for i, row in enumerate(want):
        n = out["tagging"]["num_words"][i]
        assert n == len(row)
        assert out["tagging"]["words"][i][:n] == [w for w, _, _, _ in row]
        assert out["tagging"]["tags"][i][:n] == [t for _, t, _, _ in row]
    # Byte offsets in the SavedModel; character offsets in Python.
    raw = TEXT[1].encode()
    s, e = out["tagging"]["start"][1][2], out["tagging"]["end"][1][2]
    assert raw[s:e].decode() == "visited" == TEXT[1][want[1][2][2]:want[1][2][3]]

    task, model = models["features"]
    want = task.features(model, TEXT)
    np.testing.assert_allclose(out["features"]["embedding"], want["embedding"], atol=1e-5)
    n = len(want["features"][1])
    np.testing.assert_allclose(np.asarray(out["features"]["features"])[1, :n],
                               want["features"][1], atol=1e-5)
    assert np.asarray(out["features"]["input_mask"]).sum(1).tolist() == [
        len(f) for f in want["features"]]


def test_exports_follow_the_op_rule(exported):
    from tfbert.export.op_check import check_op_rule

    for path in exported[1].values():
        ops = check_op_rule(path)  # raises on any op outside the rule
        assert "FastWordpieceTokenizeWithOffsets" in ops  # tokenization is in the graph


def test_export_replaces_atomically(exported):
    models, paths = exported
    task, model = models["pairs"]
    path = paths["pairs"]
    task.export(model, path)  # over an existing export
    parent = os.path.dirname(path)
    assert sorted(os.listdir(parent)) == ["1"]
    assert os.path.isfile(os.path.join(path, "saved_model.pb"))


def test_keras_tfsmlayer_loads_with_defaults(exported, run_python):
    # `keras.layers.TFSMLayer(path)` calls the "serve" endpoint by default;
    # a fresh Keras 3 process loads the task export with no arguments.
    _, paths = exported
    out = run_python(
        "import json, keras, tensorflow as tf, tensorflow_text\n"
        f"layer = keras.layers.TFSMLayer({paths['tagging']!r})\n"
        "out = layer({'text': tf.constant(['Angela Merkel visited Paris .'])})\n"
        "print(json.dumps(sorted(out)))\n")
    assert "tags" in json.loads(out.strip().splitlines()[-1])


def test_export_directories_are_readable_by_others(exported):
    # TF Serving often runs as another user: no 0700 from the temporary dir.
    import stat

    _, paths = exported
    for path in paths.values():
        mode = stat.S_IMODE(os.stat(path).st_mode)
        assert mode & 0o055 == 0o055 & ~_umask(), oct(mode)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_pre_layer_norm_classifier_from_strings_matches_keras(make_preprocessor, tmp_path):
    """A pre-LN encoder (final layer norm included) exports like a post-LN one."""
    from tfbert.export.task_model import load_task_model

    encoder = BertEncoder(BertConfig.from_preset("tiny", dropout_rate=0.0, norm_first=True))
    task = ClassificationTask(ClassificationConfig(label_list=["neg", "pos"], seq_length=24)
                              ).prepare(make_preprocessor(24))
    model = task.build_model(encoder)
    path = str(tmp_path / "export" / "1")
    task.export(model, path)
    got = load_task_model(path).signatures["serving_default"](text=tf.constant(TEXT))
    want = task.predict(model, TEXT)
    np.testing.assert_allclose(got["logits"].numpy(), want["logits"], atol=1e-5)
