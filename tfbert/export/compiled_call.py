"""`compiled_call`: the model call inside exported serving functions, optionally under XLA.

An exported task SavedModel runs its encoder through TensorFlow's graph
executor, whose per-op cost dominates small requests (a few hundred small
ops; the shapes change with every request). `compiled_call(model, True)`
runs small batches as one XLA program instead, at a bounded set of shapes:

- columns: padded (`[PAD]`, mask 0) up to the smallest
  `tfbert.text.packer.BUCKETS` width that holds the input width (the input
  width when none does); callers cut packed inputs to their longest text
  first, as the tasks' serving functions do;
- rows: padded with all-padding rows up to the next power of two;
- only while rows x columns <= `max_tokens` (`XLA_MAX_TOKENS`): larger
  batches run the plain graph, where TensorFlow's oneDNN kernels beat XLA's
  on CPU (measured in docs/cpu_speed.md).

So the number of programs is bounded (each compiles once per process, on
the first request of its shape; TF Serving's warmup requests can pay it).
Outputs are sliced back to the real rows and input width and equal the
plain call's: padding never changes a real token (masked attention), and
every input position is still computed.

String ops stay outside the compiled function (the op rule, docs/architecture.md): the
caller tokenizes and packs, then calls. Stock TF Serving runs the compiled
function only when started with `--xla_cpu_compilation_enabled=true`
(tensorflow/serving#1858), so task exports use it only on request
(`task.export(model, dir, jit_compile=True)`).

Example:
>>> from tfbert.models.classifier import BertClassifier
>>> model = BertClassifier(BertEncoder(BertConfig.from_preset("tiny", vocab_size=100)), 2)
>>> call = compiled_call(model, jit_compile=True)
>>> ids = tf.constant([[2, 5, 7, 3, 0, 0], [2, 9, 3, 0, 0, 0], [2, 3, 0, 0, 0, 0]])
>>> inputs = {"input_word_ids": ids, "input_mask": tf.cast(ids > 0, tf.int32),
...           "input_type_ids": tf.zeros_like(ids)}
>>> call(inputs).shape  # three rows run as four, six columns as sixteen
TensorShape([3, 2])
>>> bool(np.allclose(call(inputs), model(inputs, training=False), atol=1e-5))
True
"""

import tensorflow as tf

from tfbert.config_loader import check_bool
from tfbert.export.input_check import find_encoder_config
from tfbert.text.packer import BUCKETS

# Batch sizes run as the next of these.
ROW_BUCKETS = tuple(2 ** i for i in range(17))
# Padded rows x columns up to which XLA runs the batch. MiniLM on the AMX
# Xeon (docs/cpu_speed.md): at a bucket's own width XLA takes 0.66x the plain
# graph's time at 1 x 16 and 0.92x at 8 x 128, but real batch-8 requests
# (median width 71) pad to the 96 and 128 buckets, which ate the gain: end to
# end at batch 8, 1.12x the plain export with 1,024 here, 0.98x with 512.
XLA_MAX_TOKENS = 512
_NONE = 2 ** 31 - 1


def compiled_call(model, jit_compile, buckets=BUCKETS, max_tokens=XLA_MAX_TOKENS):
    """`fn(inputs) -> model(inputs, training=False)` for serving functions.

    Args:
        model: a Keras model over the encoder's dict of three int32
            `[batch, seq]` tensors.
        jit_compile: False: the plain call, exactly as before. True: batches
            of at most `max_tokens` (padded rows x padded columns) run as one
            `tf.function(jit_compile=True)` of the model at bucketed shapes,
            larger ones as the plain call (see the module docstring).
        buckets: the column widths to compile for.
        max_tokens: the largest padded batch that runs under XLA.

    Returns `fn`; `fn.compiled_function` is the XLA `tf.function` (None
    without `jit_compile`), e.g. for `experimental_get_tracing_count()`;
    `fn.shapes(max_width)` lists the `(rows, columns)` it compiles (empty
    without `jit_compile`), which task exports write as TF Serving warmup
    requests (`tfbert.export.warmup`).
    """
    jit_compile = check_bool(jit_compile, "jit_compile")  # "no" would read as True

    def plain(inputs):
        return model(inputs, training=False)

    if not jit_compile:
        plain.compiled_function = None
        plain.shapes = lambda max_width: []
        return plain

    config = find_encoder_config([model])
    # Columns may be padded beyond the input width up to the position table.
    limit = config.max_position_embeddings if config is not None else 0
    compiled = tf.function(plain, jit_compile=True)
    per_position = []  # filled on the first call: which outputs are [batch, seq, ...]

    def call(inputs):
        inputs = {name: tf.convert_to_tensor(value) for name, value in inputs.items()}
        if not per_position:
            per_position.append(_per_position_outputs(model, inputs))
        rows, width = tf.shape(inputs["input_mask"])[0], tf.shape(inputs["input_mask"])[1]
        target = _smallest(tf.constant(buckets, tf.int32), width, limit, default=width)
        padded_rows = _smallest(tf.constant(ROW_BUCKETS, tf.int32), rows, _NONE, default=rows)

        def xla():
            outputs = compiled({name: tf.pad(value, [[0, padded_rows - rows],
                                                     [0, target - width]])
                                for name, value in inputs.items()})

            def restore(value, sequence):
                if value.shape.rank == 0:
                    return value
                value = value[:rows]
                return value[:, :width] if sequence else value

            return tf.nest.map_structure(restore, outputs, per_position[0])

        return tf.cond(padded_rows * target <= max_tokens, xla, lambda: plain(inputs))

    def shapes(max_width):
        """The `(rows, columns)` programs this call compiles for inputs up
        to `max_width` columns wide (what TF Serving's warmup should send)."""
        widths = [w for w in buckets if w <= max_width and (not limit or w <= limit)]
        return [(r, w) for r in ROW_BUCKETS for w in widths if r * w <= max_tokens]

    call.compiled_function = compiled
    call.shapes = shapes
    return call


def _smallest(candidates, at_least, at_most, default):
    """The smallest of `candidates` in `[at_least, at_most]`, else `default` (graph ops)."""
    fits = tf.logical_and(candidates >= at_least, candidates <= at_most)
    best = tf.reduce_min(tf.where(fits, candidates, _NONE))
    return tf.where(best == _NONE, default, best)


def _per_position_outputs(model, inputs):
    """Nest of bools like the model's outputs: True where an output's axis 1
    is the sequence (unknown when the input width is unknown)."""
    spec = {name: tf.TensorSpec([None, None], value.dtype, name=name)
            for name, value in inputs.items()}
    traced = tf.function(lambda x: model(x, training=False)).get_concrete_function(spec)
    return tf.nest.map_structure(
        lambda t: t.shape.rank is not None and t.shape.rank >= 2 and t.shape[1] is None,
        traced.structured_outputs)
