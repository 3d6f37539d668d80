"""Head pruning (Michel, Levy & Neubig 2019, "Are Sixteen Heads Really
Better than One?"): remove the attention heads a fine-tuned model needs
least, and get a model that is really smaller.

`heads_to_prune_by_importance` picks the globally least important fraction
of the heads from `head_importance`'s scores (their Section 4: heads of all
layers ranked together); `heads_to_prune_iteratively` does it in steps,
scoring the heads again after each step, as their Section 4.1 does;
`prune_heads` removes them from an encoder or a strings-in model (a new
model whose layers keep their own number of heads, `BertConfig.
heads_per_layer`, which checkpoints, `.keras` files and exports carry). A
head list is `{layer: [head index, ...]}`, as transformers' `prune_heads`
takes; a layer may lose every head (it keeps its feed-forward part, and its
attention adds only its output bias).

Example:
>>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=100))
>>> importance = np.array([[0.9, 0.1], [0.5, 0.7]])
>>> heads = heads_to_prune_by_importance(importance, 0.5)
>>> heads
{0: [1], 1: [0]}
>>> count_heads(encoder), count_heads(prune_heads(encoder, heads))
(4, 2)
"""

import math

import numpy as np

from tfbert.analysis.head_importance import head_importance
from tfbert.config import BertConfig
from tfbert.encoder import BertEncoder


def prune_heads(model_or_encoder, heads):
    """A new `BertEncoder`, or strings-in model, without `heads` (`{layer:
    [head, ...]}`); the argument is left as it was."""
    prune = getattr(model_or_encoder, "prune_heads", None)
    if prune is None:
        raise TypeError(f"prune_heads takes a BertEncoder or a strings-in model (TextClassifier, "
                        f"TokenClassifier, ...), got {type(model_or_encoder).__name__}.")
    return prune(heads)


def count_heads(model_or_config):
    """The attention heads of an encoder, a model over one, or a `BertConfig`."""
    config = model_or_config
    if not isinstance(config, BertConfig):
        encoder = getattr(model_or_config, "encoder", model_or_config)
        config = getattr(encoder, "config", None)
        if not isinstance(config, BertConfig):
            raise TypeError(f"count_heads takes a BertEncoder, a model with one or a BertConfig, "
                            f"got {type(model_or_config).__name__}.")
    layers = 1 if config.share_layers else config.num_layers
    return sum(config.layer_heads(i) for i in range(layers))


def check_fraction(fraction):
    """`fraction` as a float in [0, 1), or one ValueError (1 would remove every head)."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float, np.floating)) or not (
            0 <= fraction < 1):
        raise ValueError(f"The pruning fraction must be a number in [0, 1), got {fraction!r}.")
    return float(fraction)


def heads_to_prune_by_importance(importance, fraction):
    """`{layer: [head, ...]}`: the `fraction` of the heads with the lowest
    `importance` (`[layers, heads]`, NaN for heads already gone, as
    `head_importance` gives for a pruned encoder), ranked over all layers
    together; ties go to the lower layer and head. The count is rounded to
    the nearest head."""
    fraction = check_fraction(fraction)
    importance = np.asarray(importance, np.float64)
    if importance.ndim != 2:
        raise ValueError(f"importance must be [layers, heads], got shape {importance.shape}.")
    present = np.argwhere(~np.isnan(importance))  # (layer, head) rows, in order
    count = int(round(fraction * len(present)))
    # A stable sort: equal scores keep the lower layer, then head, first.
    order = np.argsort(importance[tuple(present.T)], kind="stable")[:count]
    heads = {}
    for layer, head in sorted(map(tuple, present[order])):
        heads.setdefault(int(layer), []).append(int(head))
    return heads


def heads_to_prune_iteratively(encoder, batches, loss_of, fraction, step=0.1, importance=None):
    """`{layer: [head, ...]}` in `encoder`'s own numbering: heads removed in
    steps of `step` of its heads (the last step smaller), each step the least
    important by `head_importance(pruned encoder, batches, loss_of)` scored
    again, until `fraction` of them is gone (Michel et al.'s Section 4.1).
    `importance`: `head_importance(encoder, batches, loss_of)` when the caller
    has it already (the first step's scores). `prune_heads(encoder, result)`
    is the last step's encoder."""
    fraction = check_fraction(fraction)
    if not 0 < step <= 1:
        raise ValueError(f"step must be in (0, 1], got {step!r}.")
    total = count_heads(encoder)
    target = int(round(fraction * total))
    per_step = max(1, int(math.ceil(step * total)))
    # Per layer: the original index of each head it still has, in its current order.
    kept = {i: list(range(encoder.config.layer_heads(i)))
            for i in range(encoder.config.num_layers)}
    originally = {i: set(heads) for i, heads in kept.items()}
    removed = 0
    while removed < target:
        now = min(per_step, target - removed)
        if importance is None:  # the given scores serve the first step only
            importance = head_importance(encoder, batches, loss_of)
        # Heads already gone (NaN) rank last: only present heads are chosen.
        order = np.argsort(np.nan_to_num(importance, nan=np.inf), axis=None, kind="stable")
        heads = {}
        for flat in order[:now]:
            layer, head = divmod(int(flat), importance.shape[1])
            heads.setdefault(layer, []).append(head)
        encoder = encoder.prune_heads(heads)
        for layer, indices in heads.items():
            kept[layer] = [h for i, h in enumerate(kept[layer]) if i not in indices]
        removed += now
        importance = None
    return {layer: sorted(originally[layer] - set(kept[layer]))
            for layer in kept if originally[layer] - set(kept[layer])}
