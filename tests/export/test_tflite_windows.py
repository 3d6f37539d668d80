"""Strings-in TFLite with windows: a long text read whole in LiteRT, with the
same windows and pooling as the SavedModel path (`long_text="windows"`)."""

import numpy as np
import pytest

from tfbert import BertEncoder, BertPreprocessor, SentenceEncoder
from tfbert.export.tflite import export_text_tflite
from tfbert.tasks.classification import ClassificationConfig, ClassificationTask

# Plain ASCII documentation text: tf-text's TFLite tokenizer gives the reference ids here.
TEXTS = [" ".join(["Return a new list containing all items from the iterable in ascending "
                   "order."] * 9),
         "Close the file.", "",
         " ".join(["The socket must be bound to an address and listening for connections."] * 4)]


def run_tflite(path, texts):
    import tensorflow_text as tf_text
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    runner = InterpreterWithCustomOps(
        model_path=path, custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS
    ).get_signature_runner("serve")
    return runner(text=np.array(texts))


def test_classifier_windows_in_litert(uncased_vocab_file, tiny_config, tmp_path):
    pre = BertPreprocessor(uncased_vocab_file, seq_length=16)
    for pooling in ("mean", "max"):
        task = ClassificationTask(ClassificationConfig(
            label_list=["a", "b", "c"], seq_length=16, long_text="windows", doc_stride=5,
            max_windows=6, window_pooling=pooling)).prepare(pre)
        if pooling == "mean":
            model = task.build_model(BertEncoder(tiny_config))
        path = export_text_tflite(pre, model, str(tmp_path / f"{pooling}.tflite"), windows={
            "pooling": pooling, "doc_stride": 5, "max_windows": 6})
        out = run_tflite(path, TEXTS)
        want = task.predict(model, TEXTS)["logits"]
        assert out["logits"].shape == (4, 3)
        np.testing.assert_allclose(out["logits"], want, atol=1e-5)
        assert out["num_windows"].tolist()[1:3] == [1, 1] and out["num_windows"][0] == 6


def test_embedding_windows_in_litert(uncased_vocab_file, tiny_config, tmp_path):
    pre = BertPreprocessor(uncased_vocab_file, seq_length=16)
    model = SentenceEncoder(BertEncoder(tiny_config), preprocessor=pre)
    path = export_text_tflite(pre, model, str(tmp_path / "embedding.tflite"), windows={
        "pooling": "wordpieces", "normalize": True, "doc_overlap": 4, "max_windows": 16})
    out = run_tflite(path, TEXTS)
    want = model.encode(TEXTS, long_text="windows", doc_overlap=4, max_windows=16)
    np.testing.assert_allclose(out["logits"], want, atol=1e-5)


def test_bad_windows_settings(uncased_vocab_file, tiny_config, tmp_path):
    pre = BertPreprocessor(uncased_vocab_file, seq_length=16)
    encoder = BertEncoder(tiny_config)
    for windows, words in (({"pooling": "sum"}, "pooling must be one of"),
                           ({"stride": 3}, "unknown key(s) ['stride']"),
                           ({"max_windows": 0}, "max_windows must be >= 1")):
        with pytest.raises(ValueError, match=r"windows: " + words.replace("(", r"\(").replace(
                ")", r"\)").replace("[", r"\[").replace("]", r"\]")):
            export_text_tflite(pre, encoder, str(tmp_path / "x.tflite"), windows=windows)
    assert not (tmp_path / "x.tflite").exists()
