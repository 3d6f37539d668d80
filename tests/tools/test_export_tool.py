"""tools/export.py for encoders: TF Hub pair, encoder SavedModel with the
`mlm` sub-object, TFLite (ids in and strings in), and --check."""

import json
import os
import subprocess

import keras
import numpy as np
import pytest
from fresh_python import python_command

from tfbert import BertConfig, BertEncoder
from tfbert.models.pretrainer import BertPretrainer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def export_tool(*args):
    proc = subprocess.run([python_command(), os.path.join(REPO, "tools", "export.py"), *args],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    return proc


@pytest.fixture(scope="module")
def pretrained_dir(uncased_vocab_file, tmp_path_factory):
    keras.utils.set_random_seed(0)
    model = BertPretrainer(BertEncoder(BertConfig.from_preset("tiny")))
    path = str(tmp_path_factory.mktemp("ckpt") / "tiny")
    model.save_checkpoint(path, uncased_vocab_file, lower_case=True)
    return path, model


@pytest.mark.slow
def test_tfhub_pair_and_check(pretrained_dir, tmp_path, run_python):
    ckpt, model = pretrained_dir
    out = str(tmp_path / "hub")
    proc = export_tool(f"--checkpoint_dir={ckpt}", "--kind=encoder", "--format=tfhub",
                       f"--output_dir={out}", "--seq_length=32")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(os.listdir(out)) == ["encoder", "preprocessor"]
    for sub in ("encoder", "preprocessor"):
        check = export_tool(f"--check={os.path.join(out, sub)}")
        assert check.returncode == 0, check.stderr[-3000:]
        assert "op rule: OK" in check.stdout
    texts = ["The quick brown fox jumps over the lazy dog.", "Hello, TF Hub!"]
    got = run_python(f"""
import json, tensorflow as tf, tensorflow_text
pre = tf.saved_model.load({os.path.join(out, 'preprocessor')!r})
enc = tf.saved_model.load({os.path.join(out, 'encoder')!r})
inputs = pre(tf.constant({texts!r}))
out = enc(inputs, training=False)
mlm = enc.mlm({{**inputs, "masked_lm_positions": tf.constant([[1, 2], [1, 3]])}})
print(json.dumps({{"pooled": out["pooled_output"].numpy().tolist(),
                  "mlm": mlm["mlm_logits"].numpy()[:, :, :5].tolist(),
                  "ids": inputs["input_word_ids"].numpy().tolist(),
                  "lower": bool(enc.do_lower_case.numpy())}}))
""")
    got = json.loads(got.strip().splitlines()[-1])
    from tfbert import BertPreprocessor

    pre = BertPreprocessor.from_pretrained(ckpt, seq_length=32)
    inputs = pre(np.array(texts))
    assert got["ids"] == inputs["input_word_ids"].numpy().tolist()
    assert got["lower"] is True
    ref = model.encoder(inputs)["pooled_output"].numpy()
    assert np.abs(np.array(got["pooled"]) - ref).max() <= 1e-5
    ref_mlm = model({**inputs, "masked_lm_positions": np.array([[1, 2], [1, 3]], "int32")})
    assert np.abs(np.array(got["mlm"]) - ref_mlm["mlm_logits"].numpy()[:, :, :5]).max() <= 1e-5


@pytest.mark.slow
def test_tflite_kinds_and_errors(pretrained_dir, tmp_path):
    ckpt, _ = pretrained_dir
    out = str(tmp_path / "tflite")
    proc = export_tool(f"--checkpoint_dir={ckpt}", "--kind=encoder", "--format=tflite",
                       f"--output_dir={out}", "--seq_length=32", "--text_input",
                       "--quantization=dynamic_range", "--tflite_padding=max_length")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "with the tokenizer" in proc.stdout
    import tensorflow_text as tf_text
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    serve = InterpreterWithCustomOps(
        model_path=os.path.join(out, "model.tflite"),
        custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS,
    ).get_signature_runner("serve")
    assert serve(text=np.array([b"hello world"], object))["input_word_ids"].shape == (1, 32)
    proc = export_tool(f"--checkpoint_dir={ckpt}", "--kind=encoder", "--format=tflite",
                       f"--output_dir={out}", "--quantization=int4")
    assert proc.returncode != 0 and "quantization" in proc.stderr
    proc = export_tool(f"--checkpoint_dir={tmp_path / 'missing'}", "--kind=encoder",
                       f"--output_dir={out}")
    assert proc.returncode == 1 and "missing" in proc.stderr


@pytest.mark.slow
def test_full_integer_tflite_from_the_training_file(pretrained_dir, tmp_path):
    from ai_edge_litert.interpreter import Interpreter

    ckpt, _ = pretrained_dir
    train = os.path.join(REPO, "tests", "data", "finetune", "sentiment_train.tsv")
    out = str(tmp_path / "int8")
    proc = export_tool(f"--checkpoint_dir={ckpt}", "--kind=encoder", "--format=tflite",
                       f"--output_dir={out}", "--seq_length=32", "--quantization=full_integer",
                       f"--representative_file={train}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    runner = Interpreter(model_path=os.path.join(out, "model.tflite")).get_signature_runner()
    ids = np.zeros((1, 32), np.int32)
    ids[0, :4] = [101, 7592, 2088, 102]
    got = runner(input_word_ids=ids, input_mask=(ids > 0).astype(np.int32),
                 input_type_ids=np.zeros_like(ids))
    assert got["pooled_output"].shape == (1, 128) and np.isfinite(got["pooled_output"]).all()
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    proc = export_tool(f"--checkpoint_dir={ckpt}", "--kind=encoder", "--format=tflite",
                       f"--output_dir={tmp_path / 'bad'}", "--quantization=full_integer",
                       f"--representative_file={empty}")
    assert proc.returncode == 1
    assert f"{empty}: the file is empty" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "bad").exists()
