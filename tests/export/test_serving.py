"""TF Serving readiness of a task SavedModel: versioned layout, op rule,
`saved_model_cli show` and `run`, REST request bodies fed through the
signature, and bad requests answered without a crash."""

import base64
import json
import os
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertConfig, BertEncoder, BertPreprocessor
from tfbert.export import serving
from tfbert.export.op_check import check_op_rule
from tfbert.export.task_model import load_task_model
from tfbert.tasks.classification import ClassificationConfig, ClassificationTask
from fresh_python import python_command

TEXTS = ["A wonderful, moving film.", "Dull and far too long.", "Ürgüp is lovely!"]


@pytest.fixture(scope="module")
def served(uncased_vocab_file, tmp_path_factory):
    encoder = BertEncoder(BertConfig.from_preset("tiny", dropout_rate=0.0))
    task = ClassificationTask(ClassificationConfig(label_list=["negative", "positive"],
                                                   seq_length=24))
    task.prepare(BertPreprocessor(uncased_vocab_file, seq_length=24))
    model = task.build_model(encoder)
    base = tmp_path_factory.mktemp("saved_models") / "sentiment"
    path = str(base / "1")  # TF Serving's <model>/<version>/ layout
    task.export(model, path)
    return task, model, path


def test_layout_and_op_rule(served):
    _, _, path = served
    assert os.path.isfile(os.path.join(path, "saved_model.pb"))
    assert os.path.basename(path) == "1"
    ops = check_op_rule(path)
    assert "FastWordpieceTokenizeWithOffsets" in ops
    assert not {"EagerPyFunc", "PyFunc", "RoundRobinTrim"} & set(ops)


def cli(*args):
    # saved_model_cli in a fresh process; importing tensorflow_text first
    # registers the tokenizer ops, as a TF Serving build with tf-text has them.
    code = ("import sys, tensorflow_text\n"
            "from tensorflow.python.tools import saved_model_cli\n"
            "sys.argv = ['saved_model_cli'] + sys.argv[1:]\n"
            "saved_model_cli.main()\n")
    return subprocess.run([python_command(), "-c", code, *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


@pytest.mark.slow
def test_saved_model_cli_show_and_run(served, tmp_path):
    task, model, path = served
    show = cli("show", "--dir", path, "--tag_set", "serve", "--signature_def", "serving_default")
    assert show.returncode == 0, show.stderr[-2000:]
    assert "inputs['text'] tensor_info:" in show.stdout and "dtype: DT_STRING" in show.stdout
    for name in ("logits", "probabilities", "label"):
        assert f"outputs['{name}']" in show.stdout
    out_dir = tmp_path / "cli_out"
    run = cli("run", "--dir", path, "--tag_set", "serve", "--signature_def", "serving_default",
              "--input_exprs", f"text={TEXTS!r}", "--outdir", str(out_dir))
    assert run.returncode == 0, run.stderr[-2000:]
    got = np.load(out_dir / "probabilities.npy")
    want = task.predict(model, TEXTS)["probabilities"]
    assert np.abs(got - want).max() <= 1e-5


def test_rest_row_and_columnar_bodies(served):
    task, model, path = served
    loaded = load_task_model(path)
    want = task.predict(model, TEXTS)
    rows = serving.predict(loaded, json.dumps(
        {"signature_name": "serving_default", "instances": [{"text": t} for t in TEXTS]}))
    assert len(rows["predictions"]) == 3
    for row, label, probs in zip(rows["predictions"], want["label"], want["probabilities"]):
        assert row["label"] == label
        assert np.abs(np.array(row["probabilities"]) - probs).max() <= 1e-5
    plain = serving.predict(loaded, {"instances": TEXTS})
    assert plain == rows
    columns = serving.predict(loaded, {"inputs": {"text": TEXTS}})
    assert columns["outputs"]["label"] == [r["label"] for r in rows["predictions"]]


def test_bad_requests_get_outputs_or_clear_errors(served):
    _, _, path = served
    loaded = load_task_model(path)
    # Empty batch, empty and whitespace strings, invalid UTF-8 (as b64).
    assert serving.predict(loaded, {"instances": []}) == {"predictions": []}
    bad_utf8 = base64.b64encode(b"caf\xe9 \xff\xfe ok").decode()
    out = serving.predict(loaded, {"instances": [{"text": ""}, {"text": "   "},
                                                 {"text": {"b64": bad_utf8}}]})
    assert len(out["predictions"]) == 3
    assert all(np.isfinite(p["logits"]).all() for p in out["predictions"])
    for body, pattern in [
        ("{not json", "not JSON"),
        ({"instances": [{"txt": "a"}]}, r"missing \['text'\], unexpected \['txt'\]"),
        ({"signature_name": "nope", "instances": ["a"]}, "Unknown signature_name 'nope'"),
        ({"instances": ["a"], "inputs": {"text": ["a"]}}, "exactly one of"),
        ({"instances": [{"text": 3}]}, "does not fit"),
        ({"instances": [{"text": {"b64": "***"}}]}, "does not fit"),
    ]:
        with pytest.raises(serving.RequestError, match=pattern):
            serving.predict(loaded, body)
    # The signature itself on odd tensors: outputs, not a crash.
    fn = loaded.signatures["serving_default"]
    assert fn(text=tf.zeros([0], tf.string))["logits"].shape == (0, 2)
    assert fn(text=tf.constant(["x" * 100000]))["logits"].shape == (1, 2)


@pytest.mark.parametrize("change, message", [
    ({"input_word_ids": [[101, 30522, 102]]}, r"input_word_ids must be in \[0, 30522\)"),
    ({"input_word_ids": [[101, -5, 102]]}, r"input_word_ids must be in \[0, 30522\)"),
    ({"input_type_ids": [[0, 2, 0]]}, r"input_type_ids must be in \[0, 2\)"),
    ({"input_mask": [[1, 7, 1]]}, r"input_mask must hold 0 or 1"),
    ({"input_mask": [[1, 1]]}, r"."),  # shapes that disagree: rejected, never broadcast
])
def test_serving_ids_rejects_out_of_range_ids(served, change, message):
    # Negative or too-large ids used to return plausible probabilities.
    _, _, path = served
    model = load_task_model(path)
    ok = {"input_word_ids": [[101, 2307, 102]], "input_mask": [[1, 1, 1]],
          "input_type_ids": [[0, 0, 0]]}
    body = {"signature_name": "serving_ids", "inputs": ok}
    assert len(serving.predict(model, body)["outputs"]["probabilities"]) == 1
    body["inputs"] = {**ok, **change}
    with pytest.raises(serving.RequestError, match=message) as info:
        serving.predict(model, body)
    assert "\n" not in str(info.value)


def test_predict_tool_prints_no_traceback_for_bad_ids(served, tmp_path):
    _, _, path = served
    request = tmp_path / "bad.json"
    request.write_text(json.dumps({"signature_name": "serving_ids", "inputs": {
        "input_word_ids": [[101, -1, 102]], "input_mask": [[1, 1, 1]],
        "input_type_ids": [[0, 0, 0]]}}))
    tool = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "predict.py")
    proc = subprocess.run([python_command(), tool, f"--saved_model_dir={path}",
                           f"--request={request}"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "predict: error: input_word_ids must be in [0, 30522)")
