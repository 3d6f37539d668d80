"""Training losses for `tfbert.SentenceEncoder` (sentence-transformers' losses, one per file).

Each loss is a Keras model that wraps the `SentenceEncoder` (shared weights:
every text column goes through the same encoder), computes its own loss in
`compute_loss`, and is trained with `compile(optimizer)` + `fit`. Its weights
include the encoder's, so saving or restoring the wrapper moves them too.

Inputs are a dict of encoder-input dicts, one per column: `anchor`,
`positive` (and optionally `negative`); the targets are scores (cosine) or
class ids (softmax), or nothing (ranking, triplet).
"""

from tfbert.losses.cosine_similarity import CosineSimilarityLoss
from tfbert.losses.multiple_negatives_ranking import MultipleNegativesRankingLoss
from tfbert.losses.softmax import SoftmaxLoss
from tfbert.losses.triplet import TripletLoss

__all__ = ["CosineSimilarityLoss", "MultipleNegativesRankingLoss", "SoftmaxLoss", "TripletLoss"]
