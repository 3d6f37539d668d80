"""Training losses for `tfbert.SentenceEncoder` (sentence-transformers' losses, one per file).

Each loss is a Keras model that wraps the `SentenceEncoder` (shared weights:
every text column goes through the same encoder), computes its own loss in
`compute_loss`, and is trained with `compile(optimizer)` + `fit`. Its weights
include the encoder's, so saving or restoring the wrapper moves them too.

Inputs are a dict of encoder-input dicts, one per column: `anchor`,
`positive` (and optionally `negative`); the targets are scores (cosine) or
class ids (softmax), or nothing (ranking, triplet).

`ListwiseLoss` trains a cross-encoder (`tfbert.CrossEncoder`): a softmax or
binary cross-entropy over each query's positive and negatives. `MatryoshkaLoss`
wraps the ranking loss at nested dimensions.
"""

from tfbert.losses.cosine_similarity import CosineSimilarityLoss
from tfbert.losses.listwise import ListwiseLoss
from tfbert.losses.matryoshka import MatryoshkaLoss
from tfbert.losses.multiple_negatives_ranking import MultipleNegativesRankingLoss
from tfbert.losses.softmax import SoftmaxLoss
from tfbert.losses.triplet import TripletLoss

__all__ = ["CosineSimilarityLoss", "ListwiseLoss", "MatryoshkaLoss", "MultipleNegativesRankingLoss",
           "SoftmaxLoss", "TripletLoss"]
