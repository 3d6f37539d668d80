"""TF Serving's REST request format, applied to a loaded SavedModel.

TF Serving's binary cannot run everywhere (not on this project's CI); this
module feeds a REST `:predict` body through a signature exactly as the server
would, so exported models can be checked end to end without it:

    row format      {"signature_name": "serving_default",
                     "instances": [{"text": "a"}, {"text": "b"}]}
                    (or, for one input, "instances": ["a", "b"])
                    -> {"predictions": [{"logits": [...], ...}, ...]}
    columnar format {"inputs": {"text": ["a", "b"]}}
                    -> {"outputs": {"logits": [[...], [...]], ...}}
"""

import base64
import binascii
import json
import re

import numpy as np
import tensorflow as tf


class RequestError(ValueError):
    """A request the server would answer with HTTP 400."""


def predict(saved_model, body):
    """Answers a REST predict `body` (dict or JSON text) with `saved_model`
    (a `tf.saved_model.load` result) like TF Serving does.

    Example:
    >>> predict(model, {"instances": [{"text": "great film"}]})  # doctest: +SKIP
    {'predictions': [{'label': 'positive', 'probabilities': [0.1, 0.9], ...}]}
    """
    if isinstance(body, (str, bytes)):
        try:
            body = json.loads(body)
        except json.JSONDecodeError as e:
            raise RequestError(f"Request body is not JSON: {e}") from None
    if not isinstance(body, dict):
        raise RequestError("Request body must be a JSON object.")
    name = body.get("signature_name", "serving_default")
    if name not in saved_model.signatures:
        raise RequestError(
            f"Unknown signature_name {name!r}; the model has {sorted(saved_model.signatures)}."
        )
    fn = saved_model.signatures[name]
    specs = fn.structured_input_signature[1]
    if ("instances" in body) == ("inputs" in body):
        raise RequestError('The body needs exactly one of "instances" (row) or "inputs" (columnar).')
    row_format = "instances" in body
    columns = _rows_to_columns(body["instances"], specs) if row_format else body["inputs"]
    if not isinstance(columns, dict):
        if len(specs) != 1:
            raise RequestError(f"Named inputs {sorted(specs)} are required.")
        columns = {next(iter(specs)): columns}
    missing = sorted(set(specs) - set(columns))
    extra = sorted(set(columns) - set(specs))
    if missing or extra:
        raise RequestError(f"Inputs must be {sorted(specs)}; missing {missing}, unexpected {extra}.")
    tensors = {k: _to_tensor(columns[k], specs[k], k) for k in specs}
    try:
        outputs = fn(**tensors)
    except tf.errors.InvalidArgumentError as e:
        # The graph's input checks (tfbert.export.input_check) and shape
        # mismatches between inputs: HTTP 400 in TF Serving.
        raise RequestError(_first_line(e.message)) from None
    plain = {k: _to_json(v.numpy()) for k, v in outputs.items()}
    if not row_format:
        return {"outputs": plain}
    count = len(next(iter(plain.values()))) if plain else 0
    return {"predictions": [{k: v[i] for k, v in plain.items()} for i in range(count)]}


def _rows_to_columns(instances, specs):
    if not isinstance(instances, list):
        raise RequestError('"instances" must be a list.')
    if all(isinstance(row, dict) for row in instances) and instances:
        keys = set(instances[0])
        if any(set(row) != keys for row in instances):
            raise RequestError("Every instance must have the same keys.")
        return {k: [row[k] for row in instances] for k in keys}
    return instances  # one unnamed input: a plain list of values


def _to_tensor(value, spec, name):
    try:
        if spec.dtype == tf.string:
            value = [_string_bytes(v) for v in value]
            tensor = tf.constant(value, tf.string) if value else tf.zeros([0], tf.string)
        else:
            tensor = tf.constant(np.array(value, dtype=spec.dtype.as_numpy_dtype), spec.dtype)
    except (TypeError, ValueError, binascii.Error) as e:
        raise RequestError(f"Input {name!r} does not fit {spec}: {e}") from None
    if not spec.shape.is_compatible_with(tensor.shape):
        raise RequestError(f"Input {name!r} has shape {tensor.shape}, the signature wants {spec.shape}.")
    return tensor


def _first_line(message):
    """The graph's own message, without TF's function-node prefix and tensor dumps."""
    check = re.search(r"\w+ must (?:be in \[-?\d+, \d+\)|hold 0 or 1)", message)
    if check:
        return check.group(0)
    # tf.debugging.Assert: "assertion failed: [<message>] [<values>]"
    check = re.search(r"assertion failed: \[(.*?)\] \[(.*?)\]", message)
    if check:
        return f"{check.group(1)} [{check.group(2)}]"
    line = next((l.strip() for l in message.splitlines() if l.strip()), "invalid argument")
    return re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", line)


def _string_bytes(value):
    # TF Serving's JSON carries binary strings as {"b64": "..."}.
    if isinstance(value, dict) and set(value) == {"b64"}:
        return base64.b64decode(value["b64"], validate=True)
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError(f"expected a string or {{'b64': ...}}, got {type(value).__name__}")


def _to_json(array):
    """A NumPy output as JSON values; strings decoded as UTF-8."""
    if array.dtype != object:
        return array.tolist()
    decode = np.vectorize(lambda b: b.decode("utf-8", "replace"), otypes=[object])
    return decode(array).tolist() if array.size else array.tolist()
