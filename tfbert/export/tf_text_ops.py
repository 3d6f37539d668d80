"""Registering the tf-text tokenizer ops before loading an exported graph."""


def require_tf_text_ops():
    """Imports tensorflow_text, which registers `FastBertNormalize` and
    `FastWordpieceTokenizeWithOffsets`; SavedModels that take strings fail to
    load without them ("Op type not registered")."""
    try:
        import tensorflow_text  # noqa: F401
    except ImportError as e:
        raise ImportError(
            "Loading a tfbert SavedModel that takes strings needs the tf-text "
            "tokenizer ops: `pip install tensorflow-text==2.21.*` and "
            "`import tensorflow_text` before `tf.saved_model.load`."
        ) from e
