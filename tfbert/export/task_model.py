"""The end-to-end task SavedModel: raw strings in, task outputs out.

    serving_default(text [, text_b])   tf.string [batch] -> named outputs
    serving_ids(input_word_ids, input_mask, input_type_ids)
                                       int32 [batch, seq] -> the same outputs
                                       minus the ones that need strings

Tokenization and packing are inside the graph, so a caller needs no tfbert
code: `tf.saved_model.load(path).signatures["serving_default"](text=...)`
(after `import tensorflow_text`, which registers the tokenizer ops). Written
with `keras.export.ExportArchive` into a temporary directory and renamed into
place, so a killed export never leaves a half model behind. An XLA export
(`jit_compile=True`) also carries TF Serving warmup requests for its
compiled shapes (`assets.extra/tf_serving_warmup_requests`).
"""

import keras
import tensorflow as tf

from tfbert.atomic import atomic_dir
from tfbert.encoder import INPUT_NAMES
from tfbert.export.input_check import check_ids, find_encoder_config
from tfbert.export.op_check import check_op_rule
from tfbert.export.text_settings import write_text_settings
from tfbert.export.tf_text_ops import require_tf_text_ops
from tfbert.export.warmup import write_warmup_requests

IDS_SIGNATURE = "serving_ids"


def export_task_model(export_dir, serve_text, serve_ids, text_inputs=("text",), track=(),
                      warmup_shapes=()):
    """Writes a task SavedModel with the two signatures.

    Args:
        export_dir: destination (replaced atomically if it exists).
        serve_text: `fn(dict of tf.string [batch]) -> dict of outputs`.
        serve_ids: `fn(dict of the three int32 [batch, seq]) -> dict of outputs`.
        text_inputs: names of the string inputs, e.g. `("text", "text_b")`.
        track: Keras models/layers whose variables and resources the
            functions use (the model and the preprocessor).
        warmup_shapes: `(rows, columns)` of `serving_ids` requests to write
            as TF Serving warmup requests (`tfbert.export.warmup`): an XLA
            export's compiled shapes, `call.shapes(seq_length)`.

    Returns the export directory.

    Example:
    >>> export_task_model("/tmp/sst2/export/1", serve_text, serve_ids,
    ...                   track=[model, preprocessor])  # doctest: +SKIP
    """
    text_spec = {n: tf.TensorSpec([None], tf.string, name=n) for n in text_inputs}
    ids_spec = {n: tf.TensorSpec([None, None], tf.int32, name=n) for n in INPUT_NAMES}
    archive = keras.export.ExportArchive()
    for obj in track:
        if not obj.built:  # e.g. a preprocessor used only through tokenize/pack
            obj.build(None)
        archive.track(obj)
    text_fn = archive.add_endpoint("serving_default", lambda inputs: serve_text(inputs),
                                   [text_spec])
    # "serve": the endpoint `keras.layers.TFSMLayer(path)` calls by default. The
    # same traced function (a second would trace the whole model again).
    text_fn.get_concrete_function()
    archive.add_endpoint("serve", text_fn)
    config = find_encoder_config(track)
    if config is not None:  # out-of-range ids: a clear error, not plausible garbage
        checked_serve_ids = serve_ids

        def serve_ids(inputs):
            return checked_serve_ids(check_ids(inputs, config.vocab_size, config.type_vocab_size))
    archive.add_endpoint(IDS_SIGNATURE, lambda inputs: serve_ids(inputs), [ids_spec])
    with atomic_dir(export_dir) as tmp:
        archive.write_out(tmp, verbose=False)
        # The op rule (docs/architecture.md): core TF ops plus the two tokenizer ops only;
        # a violation fails here, before anything replaces `export_dir`.
        check_op_rule(tmp)
        write_warmup_requests(tmp, warmup_shapes, IDS_SIGNATURE)
        # The vocabulary and packing settings, for runtimes that rebuild the
        # tokenizer (tfbert.export.openvino): the graph does not expose them.
        write_text_settings(tmp, track, text_inputs)
    return export_dir


def load_task_model(export_dir):
    """Loads a task SavedModel (registering the tf-text tokenizer ops first)."""
    require_tf_text_ops()
    return tf.saved_model.load(export_dir)
