"""Cross-encoder losses over a query's candidate group (positive first, then its negatives).

`ListwiseLoss` wraps a one-output `BertClassifier` (`tfbert.CrossEncoder` is one): the
inputs are the encoder inputs of `batch * group_size` (query, candidate)
pairs, query-major, candidate 0 the positive; `call` returns the logits as
`[batch, group_size]`. `compute_loss`:

- `softmax` (default): cross-entropy of the softmax over each group with the
  positive as the answer (sentence-transformers' cross-encoder
  MultipleNegativesRankingLoss with the given negatives, `scale` 1: the
  logits are the scores);
- `bce`: binary cross-entropy of every pair, 1 for the positive and 0 for
  each negative (sentence-transformers' BinaryCrossEntropyLoss over the same
  pairs).

Example:
>>> from tfbert.models.classifier import BertClassifier
>>> model = BertClassifier(BertEncoder(BertConfig.from_preset("tiny", vocab_size=100)), 1)
>>> loss = ListwiseLoss(model, group_size=3)
>>> ids = np.array([[2, 7, 3], [2, 8, 3], [2, 9, 3]] * 2, "int32")
>>> x = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": 0 * ids}
>>> logits = loss(x)
>>> logits.shape, float(loss.compute_loss(y_pred=logits)) > 0
(TensorShape([2, 3]), True)
"""

import keras
from keras import ops

LISTWISE_LOSSES = ("softmax", "bce")


class ListwiseLoss(keras.Model):
    """Softmax (or BCE) over `group_size` candidates per query (see module doc)."""

    def __init__(self, model, group_size, loss="softmax", **kwargs):
        super().__init__(**kwargs)
        if loss not in LISTWISE_LOSSES:
            raise ValueError(f"loss must be one of {list(LISTWISE_LOSSES)}, got {loss!r}.")
        if int(group_size) < 2:
            raise ValueError(f"group_size must be >= 2 (a positive and a negative), "
                             f"got {group_size}.")
        self.cross_encoder = model
        self.group_size = int(group_size)
        self.loss_name = loss

    def call(self, inputs, training=False):
        logits = self.cross_encoder(inputs, training=training)  # [batch * group, 1]
        return ops.reshape(logits, (-1, self.group_size))

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if self.loss_name == "softmax":
            labels = ops.zeros((ops.shape(y_pred)[0],), "int32")  # the positive is column 0
            return ops.mean(ops.sparse_categorical_crossentropy(labels, y_pred, from_logits=True))
        labels = ops.cast(ops.arange(self.group_size) == 0, y_pred.dtype)[None, :]
        labels = ops.broadcast_to(labels, ops.shape(y_pred))
        return ops.mean(ops.binary_crossentropy(labels, y_pred, from_logits=True))
