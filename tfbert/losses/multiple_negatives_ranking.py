"""In-batch negatives ranking loss (sentence-transformers' MultipleNegativesRankingLoss).

For a batch of (anchor, positive[, hard negative]) rows, anchor i should be
closer to positive i than to every other positive in the batch (and every
hard negative): cross-entropy over `scale * cosine(anchor_i, candidates)`
with the right answer at column i. Larger batches give more negatives.

Example:
>>> from tfbert.models.sentence_encoder import SentenceEncoder
>>> model = SentenceEncoder(BertEncoder(BertConfig.from_preset("tiny", vocab_size=100)))
>>> loss = MultipleNegativesRankingLoss(model, scale=20.0)
>>> ids = np.array([[2, 7, 3], [2, 9, 3]], "int32")
>>> x = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": 0 * ids}
>>> scores = loss({"anchor": x, "positive": x})
>>> scores.shape, float(loss.compute_loss(y_pred=scores)) > 0
(TensorShape([2, 2]), True)
"""

from keras import ops

from tfbert.losses.base import SentenceLoss, cosine_matrix


class MultipleNegativesRankingLoss(SentenceLoss):
    """Scaled-cosine cross-entropy with in-batch negatives; `negative` column optional."""

    def __init__(self, model, scale=20.0, **kwargs):
        super().__init__(model, **kwargs)
        self.scale = float(scale)

    def call(self, inputs, training=False):
        return self.scores(self.embed(inputs, training=training))

    def scores(self, emb):
        """`[B, B or 2B]` scaled cosines from `{column: embeddings}` (what
        `MatryoshkaLoss` calls on truncated embeddings)."""
        candidates = emb["positive"]
        if "negative" in emb:  # hard negatives: more columns to beat
            candidates = ops.concatenate([candidates, emb["negative"]], axis=0)
        return self.scale * cosine_matrix(emb["anchor"], candidates)  # [B, B or 2B]

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        labels = ops.arange(ops.shape(y_pred)[0])  # anchor i's positive is column i
        losses = ops.sparse_categorical_crossentropy(labels, y_pred, from_logits=True)
        return ops.mean(losses)
