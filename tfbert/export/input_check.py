"""In-graph checks of the int32 inputs that exported signatures accept.

Token ids outside `[0, vocab_size)` or type ids outside `[0,
type_vocab_size)` would otherwise give plausible-looking outputs (a gather
on CPU clips or wraps silently). Exported `serving_ids` / encoder signatures
assert the ranges with core ops (`Assert`, allowed by the op rule): TF Serving
answers HTTP 400 with the message, `tf.saved_model.load` callers get an
`InvalidArgumentError`, and `tfbert.export.serving.predict` a `RequestError`.
Clipping was rejected: it hides a client bug behind a confident answer.

Example:
>>> ids = {"input_word_ids": tf.constant([[2, 99]]), "input_mask": tf.constant([[1, 1]]),
...        "input_type_ids": tf.constant([[0, 0]])}
>>> checked = check_ids(ids, vocab_size=50, type_vocab_size=2)
Traceback (most recent call last):
tensorflow.python.framework.errors_impl.InvalidArgumentError: ...input_word_ids must be in [0, 50)...
"""

import tensorflow as tf


def check_ids(inputs, vocab_size, type_vocab_size):
    """`inputs` unchanged, after asserting every id is in range (graph ops)."""
    checks = []
    for name, limit in (("input_word_ids", vocab_size), ("input_type_ids", type_vocab_size)):
        values = inputs[name]
        message = f"{name} must be in [0, {limit})"
        checks += [tf.debugging.assert_greater_equal(values, 0, message=message),
                   tf.debugging.assert_less(values, limit, message=message)]
    mask = inputs["input_mask"]
    checks.append(tf.debugging.assert_equal(
        tf.logical_or(mask == 0, mask == 1), True, message="input_mask must hold 0 or 1"))
    # Shapes that disagree would be broadcast inside the encoder, not refused.
    shape = tf.shape(inputs["input_word_ids"])
    for name in ("input_mask", "input_type_ids"):
        checks.append(tf.debugging.assert_equal(
            tf.shape(inputs[name]), shape,
            message=f"input_word_ids, input_mask and input_type_ids must have one shape "
                    f"[batch, seq]; {name} differs"))
    with tf.control_dependencies(checks):
        return {k: tf.identity(v) for k, v in inputs.items()}


def find_encoder_config(objects):
    """The `BertConfig` of the first `BertEncoder` inside `objects` (Keras
    models/layers), or None."""
    from tfbert.encoder import BertEncoder

    for obj in objects:
        layers = obj._flatten_layers(include_self=True, recursive=True) if hasattr(
            obj, "_flatten_layers") else [obj]
        for layer in layers:
            if isinstance(layer, BertEncoder):
                return layer.config
    return None
