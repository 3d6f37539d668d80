"""`SavedModelEncoder`: load an exported encoder as a fine-tunable Keras 3 layer."""

import keras

from tfbert.export.tf_text_ops import require_tf_text_ops


@keras.saving.register_keras_serializable(package="tfbert")
class SavedModelEncoder(keras.layers.TFSMLayer):
    """A TF Hub-format encoder SavedModel (`export_encoder`) as a Keras 3 layer.

    `hub.KerasLayer` only works under legacy Keras; this is the Keras 3
    loader. It differs from `keras.layers.TFSMLayer` in two ways:
    - it calls the SavedModel's `__call__(inputs, training=...)`, so dropout
      is on while fine-tuning and off at inference;
    - loaded variables are named `.../kernel:0`, and Keras optimizers build
      slot names from the variable name, so Adam fails with
      "'kernel:0_momentum' is not a valid scope name"; the `:0` is dropped.

    Example:
    >>> import tempfile, numpy as np, tfbert
    >>> from tfbert.export.encoder import export_encoder
    >>> enc = tfbert.BertEncoder(tfbert.BertConfig.from_preset("tiny", vocab_size=100))
    >>> layer = SavedModelEncoder(export_encoder(enc, tempfile.mkdtemp() + "/e"))
    >>> ids = np.array([[2, 5, 3]], "int32")
    >>> layer({"input_word_ids": ids, "input_mask": np.ones_like(ids),
    ...        "input_type_ids": np.zeros_like(ids)})["pooled_output"].shape
    TensorShape([1, 128])
    """

    def __init__(self, filepath, trainable=True, **kwargs):
        require_tf_text_ops()  # harmless for a bare encoder; needed for strings-in models
        kwargs.setdefault("call_endpoint", "serving_default")
        super().__init__(filepath, trainable=trainable, **kwargs)

    def _add_existing_weight(self, weight):
        variable = keras.Variable(
            initializer=weight,  # wraps the loaded tf.Variable itself, no copy
            trainable=weight.trainable,
            dtype=weight.dtype,
            shape=weight.shape,
            name=weight.name.split(":")[0].replace("/", "_"),
        )
        self._track_variable(variable)

    def call(self, inputs, training=False):
        return self._reloaded_obj(dict(inputs), training=bool(training))
