"""Classification over `(u, v, |u - v|)` (sentence-transformers' SoftmaxLoss, SBERT's NLI objective).

A dense layer maps the concatenation of the two embeddings and their
element-wise distance to class logits (e.g. entailment / neutral /
contradiction); cross-entropy trains the encoder and that classifier. Only
the encoder is kept for inference.

Example:
>>> from tfbert.models.sentence_encoder import SentenceEncoder
>>> model = SentenceEncoder(BertEncoder(BertConfig.from_preset("tiny", vocab_size=100)))
>>> loss = SoftmaxLoss(model, num_labels=3)
>>> ids = np.array([[2, 7, 3], [2, 9, 3]], "int32")
>>> x = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": 0 * ids}
>>> loss({"anchor": x, "positive": x}).shape
TensorShape([2, 3])
"""

import keras
from keras import ops

from tfbert.losses.base import SentenceLoss


class SoftmaxLoss(SentenceLoss):
    """Cross-entropy of a linear classifier on `(u, v, |u - v|)`."""

    num_columns = (2,)
    targets = "labels"

    def __init__(self, model, num_labels, **kwargs):
        super().__init__(model, **kwargs)
        if int(num_labels) < 2:
            raise ValueError(f"SoftmaxLoss needs at least 2 labels, got {num_labels}.")
        self.num_labels = int(num_labels)
        self.classifier = keras.layers.Dense(self.num_labels, name="softmax_classifier")

    def call(self, inputs, training=False):
        emb = self.embed(inputs, training=training)
        u, v = emb["anchor"], emb["positive"]
        return self.classifier(ops.concatenate([u, v, ops.abs(u - v)], axis=-1))

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        y = ops.reshape(ops.cast(y, "int32"), (-1,))
        return ops.mean(ops.sparse_categorical_crossentropy(y, y_pred, from_logits=True))
