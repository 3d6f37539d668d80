"""Matryoshka training (sentence-transformers' MatryoshkaLoss): the ranking loss at nested dims.

Wraps a ranking loss (`MultipleNegativesRankingLoss`): each batch's
embeddings are computed once, then the loss is taken on their first `d`
dimensions for every `d` in `dims` (re-normalized by the cosine) and summed
with `weights` (default 1 each). The first dimensions then carry the most,
so `SentenceEncoder.encode(..., truncate_dim=d)` loses little.

Example:
>>> from tfbert.models.sentence_encoder import SentenceEncoder
>>> from tfbert.losses import MultipleNegativesRankingLoss
>>> model = SentenceEncoder(BertEncoder(BertConfig.from_preset("tiny", vocab_size=100)))
>>> loss = MatryoshkaLoss(MultipleNegativesRankingLoss(model), dims=[128, 32], weights=[1, 0.5])
>>> ids = np.array([[2, 7, 3], [2, 9, 3]], "int32")
>>> x = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": 0 * ids}
>>> scores = loss({"anchor": x, "positive": x})
>>> scores.shape, float(loss.compute_loss(y_pred=scores)) > 0
(TensorShape([2, 2, 2]), True)
"""

from keras import ops

from tfbert.losses.base import SentenceLoss


class MatryoshkaLoss(SentenceLoss):
    """`sum_i weights[i] * loss(embeddings[:, :dims[i]])` (see module doc)."""

    def __init__(self, loss, dims, weights=None, **kwargs):
        super().__init__(loss.sentence_encoder, **kwargs)
        if not hasattr(loss, "scores"):
            raise TypeError(f"MatryoshkaLoss wraps a ranking loss with scores(); "
                            f"{type(loss).__name__} has none.")
        dim = loss.sentence_encoder.dim
        dims = [int(d) for d in dims or []]
        if not dims or any(not 1 <= d <= dim for d in dims):
            raise ValueError(f"matryoshka dims must be a non-empty list in [1, {dim}] (the "
                             f"embedding size), got {dims}.")
        weights = [1.0] * len(dims) if weights is None else [float(w) for w in weights]
        if len(weights) != len(dims) or any(w < 0 for w in weights):
            raise ValueError(f"matryoshka weights must be {len(dims)} numbers >= 0 (one per "
                             f"dim), got {weights}.")
        # Its methods only (the wrapped loss has no weights of its own; holding
        # the Keras model would track it as an unbuilt sub-layer).
        self._scores, self._loss_at = loss.scores, loss.compute_loss
        self.dims = dims
        self.weights_per_dim = weights

    def call(self, inputs, training=False):
        emb = self.embed(inputs, training=training)
        return ops.stack([self._scores({c: e[:, :d] for c, e in emb.items()})
                          for d in self.dims])  # [dims, B, candidates]

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return sum(w * self._loss_at(y=y, y_pred=y_pred[i])
                   for i, w in enumerate(self.weights_per_dim))
