"""Triplet loss with a margin (sentence-transformers' TripletLoss, Euclidean distance).

`max(0, |a - p| - |a - n| + margin)`: the anchor must be closer to the
positive than to the negative by at least `margin`.

Example:
>>> from tfbert.models.sentence_encoder import SentenceEncoder
>>> model = SentenceEncoder(BertEncoder(BertConfig.from_preset("tiny", vocab_size=100)))
>>> loss = TripletLoss(model, margin=5.0)
>>> ids = np.array([[2, 7, 3], [2, 9, 3]], "int32")
>>> x = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": 0 * ids}
>>> d = loss({"anchor": x, "positive": x, "negative": x})
>>> round(float(loss.compute_loss(y_pred=d)), 4)  # equal distances: the margin is the loss
5.0
"""

from keras import ops

from tfbert.losses.base import SentenceLoss


class TripletLoss(SentenceLoss):
    """Hinge on Euclidean distances: anchor-positive + margin < anchor-negative."""

    num_columns = (3,)

    def __init__(self, model, margin=5.0, **kwargs):
        super().__init__(model, **kwargs)
        self.margin = float(margin)

    def call(self, inputs, training=False):
        if "negative" not in inputs:
            raise ValueError("TripletLoss needs a negative column (anchor, positive, negative).")
        emb = self.embed(inputs, training=training)
        pos = ops.norm(emb["anchor"] - emb["positive"], axis=-1)
        neg = ops.norm(emb["anchor"] - emb["negative"], axis=-1)
        return ops.stack([pos, neg], axis=-1)  # [B, 2] distances

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return ops.mean(ops.relu(y_pred[:, 0] - y_pred[:, 1] + self.margin))
