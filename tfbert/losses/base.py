"""`SentenceLoss`: what every sentence-embedding loss shares (see `tfbert.losses`)."""

import keras
from keras import ops

COLUMNS = ("anchor", "positive", "negative")


class SentenceLoss(keras.Model):
    """A trainable wrapper around a `SentenceEncoder`: `call` embeds each
    column with the shared encoder, `compute_loss` turns them into a loss.

    `num_columns`: how many text columns a row has (anchor, positive[,
    negative]); `targets`: what `fit` takes as `y` ("scores", "labels" or
    None), as `SentenceEncoder.fit` checks them."""

    num_columns = (2, 3)
    targets = None

    def __init__(self, model, **kwargs):
        super().__init__(**kwargs)
        self.sentence_encoder = model

    def embed(self, inputs, training=False):
        """`{column: [batch, dim]}` for the columns present in `inputs`."""
        missing = [c for c in inputs if c not in COLUMNS]
        if missing:
            raise ValueError(f"{type(self).__name__}: unknown input columns {missing}; "
                             f"expected {list(COLUMNS)}.")
        return {c: self.sentence_encoder(inputs[c], training=training)
                for c in COLUMNS if c in inputs}


def cosine_similarity(a, b):
    """Row-wise cosine of `[batch, dim]` tensors (eps as torch's cosine_similarity)."""
    a = a / ops.maximum(ops.norm(a, axis=-1, keepdims=True), 1e-8)
    b = b / ops.maximum(ops.norm(b, axis=-1, keepdims=True), 1e-8)
    return ops.sum(a * b, axis=-1)


def cosine_matrix(a, b):
    """`[len(a), len(b)]` cosine similarities."""
    a = a / ops.maximum(ops.norm(a, axis=-1, keepdims=True), 1e-8)
    b = b / ops.maximum(ops.norm(b, axis=-1, keepdims=True), 1e-8)
    return ops.matmul(a, ops.transpose(b))
