"""The op rule for exported graphs (docs/architecture.md): list and check SavedModel ops.

Every exported SavedModel may hold only core TensorFlow ops plus the two
tf-text tokenizer ops that stock TF Serving builds and TFLite (custom ops)
support. Python-function ops never survive saving and are banned.
"""

import functools
import json
import os
import subprocess
import sys

from tfbert.atomic import cache_path, write_json

ALLOWED_CUSTOM_OPS = frozenset(["FastBertNormalize", "FastWordpieceTokenizeWithOffsets"])
BANNED_OPS = frozenset(["EagerPyFunc", "PyFunc", "PyFuncStateless"])


class OpRuleError(ValueError):
    """An exported graph uses ops outside the op rule."""


def list_saved_model_ops(path):
    """Sorted op type names in a SavedModel: graph nodes plus every node of
    every library function (function calls by name are not ops)."""
    from tensorflow.core.protobuf import saved_model_pb2

    pb_path = os.path.join(path, "saved_model.pb")
    if not os.path.isfile(pb_path):
        raise FileNotFoundError(f"Not a SavedModel directory (no saved_model.pb): {path}")
    saved_model = saved_model_pb2.SavedModel()
    with open(pb_path, "rb") as f:
        try:
            saved_model.ParseFromString(f.read())
        except Exception as e:  # protobuf's DecodeError
            raise ValueError(f"{pb_path}: cannot parse saved_model.pb: {e}") from None
    ops = set()
    for meta_graph in saved_model.meta_graphs:
        library = meta_graph.graph_def.library
        function_names = {f.signature.name for f in library.function}
        nodes = list(meta_graph.graph_def.node)
        for function in library.function:
            nodes.extend(function.node_def)
        ops.update(n.op for n in nodes if n.op not in function_names)
    return sorted(ops)


_CORE_OPS_SCRIPT = """
import json
from tensorflow.core.framework import op_def_pb2
from tensorflow.python.client import pywrap_tf_session as c_api
op_list = op_def_pb2.OpList()
op_list.ParseFromString(c_api.TF_GetBuffer(c_api.TF_GetAllOpList()))
print(json.dumps(sorted(op.name for op in op_list.op)))
"""


def _cache_path():
    """Where the core op list of this TensorFlow build is kept between processes."""
    import tensorflow as tf

    return cache_path(f"core_ops-tf{tf.version.VERSION}-{tf.version.GIT_VERSION}.json")


def _read_cached(path):
    """The cached list, or None when it is missing or not a plausible core op list."""
    try:
        with open(path, encoding="utf-8") as f:
            names = json.load(f)
    except (OSError, ValueError):
        return None
    if (not isinstance(names, list) or len(names) < 1000
            or not all(isinstance(n, str) for n in names) or ALLOWED_CUSTOM_OPS & set(names)):
        return None
    return frozenset(names)


@functools.lru_cache(maxsize=1)
def core_op_names():
    """Every op registered by core TensorFlow (no tensorflow_text).

    Read from a fresh Python that has not imported tensorflow_text, whose
    import registers its ops in this process and would hide them. That
    costs seconds (a TensorFlow import), paid by every export, so the list
    is kept per TensorFlow build in ~/.cache/tfbert (`XDG_CACHE_HOME`) for
    later processes; an unwritable cache only means no reuse.
    """
    path = _cache_path()
    cached = _read_cached(path)
    if cached is not None:
        return cached
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run(
        [sys.executable, "-c", _CORE_OPS_SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"Listing the core TensorFlow ops failed:\n{result.stderr[-2000:]}")
    names = json.loads(result.stdout.strip().splitlines()[-1])
    try:
        write_json(path, names)  # atomic_file makes the directory
    except OSError:
        pass
    return frozenset(names)


def non_core_ops(ops):
    """The ops in `ops` that core TensorFlow does not register."""
    core = core_op_names()
    return sorted(op for op in set(ops) if op not in core)


def check_op_rule(path):
    """Checks a SavedModel against the op rule; returns its sorted op list.

    Raises `OpRuleError` naming every offending op: custom ops other than
    `FastBertNormalize` / `FastWordpieceTokenizeWithOffsets`, and Python-function
    ops (`EagerPyFunc`, `PyFunc`, `PyFuncStateless`).

    Example:
    >>> import tempfile
    >>> from tfbert.export.preprocessor import export_preprocessor
    >>> pre = BertPreprocessor(vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"])
    >>> ops = check_op_rule(export_preprocessor(pre, tempfile.mkdtemp() + "/pre"))
    >>> [op for op in ops if op.startswith("Fast")]
    ['FastWordpieceTokenizeWithOffsets']
    """
    ops = list_saved_model_ops(path)
    custom = [op for op in non_core_ops(ops) if op not in ALLOWED_CUSTOM_OPS]
    banned = [op for op in ops if op in BANNED_OPS]
    if custom or banned:
        problems = []
        if custom:
            problems.append(
                f"non-core ops {custom} (allowed besides core TF: {sorted(ALLOWED_CUSTOM_OPS)})"
            )
        if banned:
            problems.append(f"Python-function ops {banned} (they do not survive saving)")
        raise OpRuleError(f"SavedModel {path} breaks the op rule: " + "; ".join(problems) + ".")
    return ops
