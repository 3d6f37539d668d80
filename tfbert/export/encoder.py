"""Export a `BertEncoder` as a reusable TF Hub-format SavedModel.

One directory serves three loaders:
- TF Hub: `hub.KerasLayer(path, trainable=True)` under legacy Keras
  (`TF_USE_LEGACY_KERAS=1` + `tf-keras`), because the root object has
  `__call__(inputs, training=...)`, `variables`, `trainable_variables` and
  `regularization_losses`, plus the `vocab_file` asset and `do_lower_case`;
- Keras 3: `tfbert.export.SavedModelEncoder(path)` (see saved_model_layer.py);
- `tf.saved_model.load(path)` and TF Serving through `serving_default`
  (the three int32 inputs -> `sequence_output`, `pooled_output`, `default`
  and `encoder_output_<i>`).

With a `BertPretrainer`, the root also gets the TF Hub `mlm` sub-object:
`mlm(inputs)` with `masked_lm_positions` added returns `mlm_logits` too.
"""

import os

import tensorflow as tf

from tfbert.atomic import atomic_dir
from tfbert.export.disk_space import explain_full_disk, saved_model_bytes
from tfbert.export.input_check import check_ids
from tfbert.encoder import INPUT_NAMES
from tfbert.export.op_check import check_op_rule


def _input_spec(extra=()):
    return {
        name: tf.TensorSpec([None, None], tf.int32, name=name)
        for name in INPUT_NAMES + tuple(extra)
    }


def _flat_outputs(outputs):
    """Signature outputs must be a flat dict of tensors."""
    flat = {k: outputs[k] for k in ("sequence_output", "pooled_output", "default")}
    for i, t in enumerate(outputs["encoder_outputs"]):
        flat[f"encoder_output_{i}"] = t
    return flat


def _trace_both_modes(fn, spec):
    """Concrete functions for training=False and True, so loaders that pass
    a Python bool (hub.KerasLayer) find a trace for each."""
    for training in (False, True):
        fn.get_concrete_function(spec, training=training)


def export_encoder(encoder, output_dir, vocab_file=None, lower_case=True, pretrainer=None,
                   merges_file=None):
    """Writes `encoder` (and optionally `pretrainer`'s MLM head) to
    `output_dir` atomically; returns `output_dir`.

    `vocab_file` is copied in as the `vocab_file` asset (TF Hub API); a
    byte-level BPE encoder (a converted RoBERTa) gives its `vocab.json` there
    and `merges.txt` as `merges_file` (the `merges_file` asset).

    Example:
    >>> import tempfile, tfbert
    >>> enc = tfbert.BertEncoder(tfbert.BertConfig.from_preset("tiny", vocab_size=100))
    >>> path = export_encoder(enc, tempfile.mkdtemp() + "/encoder")
    >>> sorted(tf.saved_model.load(path).signatures)
    ['serving_default']
    """
    for what, path in (("Vocabulary", vocab_file), ("Merges", merges_file)):
        if path is not None and not os.path.isfile(path):
            raise FileNotFoundError(f"{what} file not found: {path}")
    root = tf.__internal__.tracking.AutoTrackable()
    root.encoder = encoder
    # Explicit lists: tf.Module exposes these as properties, which SavedModel
    # does not save; TF Hub's reusable-SavedModel API needs them as attributes.
    root.variables = [v.value for v in encoder.variables]  # incl. dropout seed state
    root.trainable_variables = [v.value for v in encoder.trainable_weights]
    root.regularization_losses = []
    root.do_lower_case = tf.Variable(bool(lower_case), trainable=False, name="do_lower_case")
    if vocab_file is not None:
        root.vocab_file = tf.saved_model.Asset(vocab_file)
    if merges_file is not None:
        root.merges_file = tf.saved_model.Asset(merges_file)

    @tf.function
    def call(inputs, training=False):
        return encoder(dict(inputs), training=training)

    _trace_both_modes(call, _input_spec())
    root.__call__ = call

    @tf.function(input_signature=[_input_spec()])
    def serve(inputs):
        inputs = check_ids(dict(inputs), encoder.config.vocab_size, encoder.config.type_vocab_size)
        return _flat_outputs(encoder(inputs, training=False))

    signatures = {"serving_default": serve}
    # `keras.layers.TFSMLayer(path)` calls the attribute `serve` by default,
    # with one dict argument (a signature takes keywords only).
    root.serve = serve

    if pretrainer is not None:
        if pretrainer.encoder is not encoder:
            raise ValueError("export_encoder: `pretrainer` must wrap the exported `encoder`.")
        mlm = tf.__internal__.tracking.AutoTrackable()
        mlm.pretrainer = pretrainer
        seen = {id(v) for v in root.variables}  # the tied embedding is in both
        mlm.variables = root.variables + [
            v.value for v in pretrainer.mlm_head.variables if id(v.value) not in seen
        ]
        mlm.trainable_variables = [v.value for v in pretrainer.trainable_weights]
        mlm.regularization_losses = []

        @tf.function
        def call_mlm(inputs, training=False):
            inputs = dict(inputs)
            outputs = dict(encoder({k: inputs[k] for k in INPUT_NAMES}, training=training))
            outputs["mlm_logits"] = pretrainer.mlm_head(
                outputs["sequence_output"], inputs["masked_lm_positions"]
            )
            return outputs

        _trace_both_modes(call_mlm, _input_spec(["masked_lm_positions"]))
        mlm.__call__ = call_mlm
        root.mlm = mlm

    with explain_full_disk(output_dir, lambda: saved_model_bytes(root, signatures)):
        with atomic_dir(output_dir) as tmp:
            tf.saved_model.save(root, tmp, signatures=signatures)
            check_op_rule(tmp)
    return output_dir
