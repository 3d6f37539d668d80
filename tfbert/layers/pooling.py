"""Pooling a sequence of token vectors into one vector: the one list of
pooling modes every tfbert model takes (classifier, cross-encoder, feature
extractor, sentence encoder) and the one implementation of each.

- `cls`: the [CLS] token. A classifier feeds it through BERT's pooler (dense +
  tanh, as transformers' `BertForSequenceClassification`); the sentence encoder
  and the feature extractor take it as it is (sentence-transformers' CLS).
- `mean`: the mean over the real tokens, [CLS] and [SEP] included, padding not.
- `max`: the per-dimension max over the real tokens.

Example:
>>> import numpy as np
>>> tokens = np.array([[[1.0, 4.0], [3.0, 0.0], [9.0, 9.0]]], "float32")
>>> mask = np.array([[1, 1, 0]], "int32")
>>> [np.asarray(pool_tokens(tokens, mask, mode)).tolist() for mode in POOLING]
[[[1.0, 4.0]], [[2.0, 2.0]], [[3.0, 4.0]]]
"""

from keras import ops

POOLING = ("cls", "mean", "max")


def check_pooling(pooling):
    """`pooling` when it is one of `POOLING`; a one-line `ValueError` otherwise."""
    if pooling not in POOLING:
        raise ValueError(f"pooling must be one of {list(POOLING)}, got {pooling!r:.40}.")
    return pooling


def masked_mean(tokens, input_mask):
    """Mean of `tokens` `[batch, seq, hidden]` over the real tokens (`input_mask` 1;
    [CLS]/[SEP] included), as sentence-transformers' mean pooling."""
    mask = ops.expand_dims(ops.cast(input_mask, tokens.dtype), -1)
    count = ops.maximum(ops.sum(mask, axis=1), 1e-9)  # as sentence-transformers clamps
    return ops.sum(tokens * mask, axis=1) / count


def pool_tokens(tokens, input_mask, pooling):
    """`tokens` `[batch, seq, hidden]` pooled to `[batch, hidden]` by `pooling`."""
    if check_pooling(pooling) == "cls":
        return tokens[:, 0, :]
    if pooling == "max":
        # Padding must never win the max (sentence-transformers sets it to -1e9).
        mask = ops.expand_dims(ops.cast(input_mask, tokens.dtype), -1)
        return ops.max(tokens + (mask - 1.0) * 1e9, axis=1)
    return masked_mean(tokens, input_mask)
