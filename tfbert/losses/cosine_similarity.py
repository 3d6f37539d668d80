"""Cosine-similarity regression on scored pairs (sentence-transformers' CosineSimilarityLoss).

Mean squared error between `cosine(u, v)` and the gold score (STS scores
scaled to [0, 1], e.g. by `tfbert.data.pairs.read_scored_pairs`).

Example:
>>> from tfbert.models.sentence_encoder import SentenceEncoder
>>> model = SentenceEncoder(BertEncoder(BertConfig.from_preset("tiny", vocab_size=100)))
>>> loss = CosineSimilarityLoss(model)
>>> ids = np.array([[2, 7, 3], [2, 9, 3]], "int32")
>>> x = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": 0 * ids}
>>> cos = loss({"anchor": x, "positive": x})
>>> np.round(cos.numpy(), 4).tolist(), round(float(loss.compute_loss(y=np.ones(2), y_pred=cos)), 6)
([1.0, 1.0], 0.0)
"""

from keras import ops

from tfbert.losses.base import SentenceLoss, cosine_similarity


class CosineSimilarityLoss(SentenceLoss):
    """MSE of cosine(anchor, positive) against a score per pair."""

    num_columns = (2,)
    targets = "scores"

    def call(self, inputs, training=False):
        emb = self.embed(inputs, training=training)
        return cosine_similarity(emb["anchor"], emb["positive"])

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        y = ops.reshape(ops.cast(y, y_pred.dtype), ops.shape(y_pred))
        return ops.mean(ops.square(y_pred - y))
