"""The op rule check on real SavedModels: allowed, py_function, other tf-text ops."""

import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from tfbert.export.op_check import (
    OpRuleError,
    check_op_rule,
    core_op_names,
    list_saved_model_ops,
)


def save(fn, path, spec):
    module = tf.Module()
    module.f = tf.function(fn, input_signature=[spec])
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.f})
    return str(path)


def test_core_graph_passes(tmp_path):
    path = save(lambda x: {"y": tf.strings.length(x) * 2}, tmp_path / "core", tf.TensorSpec([None], tf.string))
    ops = check_op_rule(path)
    assert "StringLength" in ops and "Mul" in ops


def test_allowed_tokenizer_op_passes(tmp_path):
    tokenizer = tf_text.FastWordpieceTokenizer(["[UNK]", "a", "##b"], token_out_type=tf.int32)
    path = save(lambda x: {"ids": tokenizer.tokenize(x).flat_values}, tmp_path / "wp",
                tf.TensorSpec([None], tf.string))
    assert "FastWordpieceTokenizeWithOffsets" in check_op_rule(path)


def test_py_function_is_rejected(tmp_path):
    path = save(lambda x: {"y": tf.py_function(lambda v: v + 1, [x], tf.float32)},
                tmp_path / "py", tf.TensorSpec([None], tf.float32))
    with pytest.raises(OpRuleError, match="EagerPyFunc"):
        check_op_rule(path)


def test_other_tf_text_op_is_rejected(tmp_path):
    trimmer = tf_text.RoundRobinTrimmer(max_seq_length=4)

    def trim(x):
        ragged = tf.RaggedTensor.from_tensor(x)
        return {"y": trimmer.trim([ragged, ragged])[0].flat_values}

    path = save(trim, tmp_path / "rr", tf.TensorSpec([None, None], tf.int32))
    with pytest.raises(OpRuleError, match="RoundRobinTrim"):
        check_op_rule(path)


def test_core_ops_come_from_a_process_without_tensorflow_text():
    # tensorflow_text is imported here, so this process's registry knows the
    # tokenizer ops; the core list must not.
    from tensorflow.python.framework import op_def_registry

    assert op_def_registry.get("FastWordpieceTokenizeWithOffsets") is not None
    assert "FastWordpieceTokenizeWithOffsets" not in core_op_names()
    assert {"StringLength", "RaggedTensorToTensor", "StatefulPartitionedCall"} <= core_op_names()


def test_core_op_list_is_kept_per_tensorflow_build(tmp_path, monkeypatch):
    import json
    import sys

    from tfbert.export import op_check

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    op_check.core_op_names.cache_clear()
    try:
        names = core_op_names()  # listed by a fresh Python, then kept
        (path,) = (tmp_path / "tfbert").glob("core_ops-tf*.json")
        assert set(json.loads(path.read_text())) == names
        # A later process reads it: no Python is started (this one could not be).
        op_check.core_op_names.cache_clear()
        monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
        assert core_op_names() == names
        # A list that holds the tokenizer ops, or is not a list, is not trusted.
        for bad in (json.dumps(sorted(names | {"FastWordpieceTokenizeWithOffsets"})), "{"):
            path.write_text(bad)
            op_check.core_op_names.cache_clear()
            with pytest.raises(FileNotFoundError):
                core_op_names()
    finally:
        op_check.core_op_names.cache_clear()


def test_not_a_saved_model(tmp_path):
    with pytest.raises(FileNotFoundError, match="saved_model.pb"):
        list_saved_model_ops(str(tmp_path))
    (tmp_path / "saved_model.pb").write_bytes(b"\xff garbage")
    with pytest.raises(ValueError, match="cannot parse"):
        list_saved_model_ops(str(tmp_path))
