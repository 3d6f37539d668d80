"""Structural probes (Hewitt & Manning 2019): is a parse tree a linear map
away from each layer's word vectors?

- Distance probe: a rank-k matrix B per layer such that the squared distance
  ||B(h_i - h_j)||^2 approximates the path length between words i and j in
  the tree. Scored by UUAS (the minimum spanning tree of the predicted
  distances against the gold tree's undirected edges, punctuation words left
  out of both, as they do) and DSpr. (Spearman between predicted and gold
  distances of each word to the others, averaged per sentence length, then
  over the lengths 5..50).
- Depth probe: ||B h_i||^2 approximates the word's depth. Scored by root
  accuracy (the least deep non-punctuation word is the root) and NSpr.
  (Spearman of predicted and gold depths, averaged as DSpr.).

Both losses are their L1 losses, normalized by the number of word pairs
(words) of each sentence. All layers' probes train in one Keras model
(independent parameters), over `seeds`, beside the random-init encoder.
Punctuation is UPOS `PUNCT` here (they use PTB tags).
"""

import dataclasses

import keras
import numpy as np

from tfbert.analysis import scores
from tfbert.analysis.conllu import tree_depths, tree_distances

LENGTHS = (5, 50)  # sentence lengths whose Spearman averages are reported


@dataclasses.dataclass
class ParsedSentences:
    """`vectors[i]` `[words, layers, H]` of sentence i, its `heads` (1-based,
    0 = root, checked trees) and `punctuation` (bool per word)."""

    vectors: list
    heads: list
    punctuation: list


def probe_structure(train, dev, train_random, dev_random, seeds=(0, 1, 2), rank=64, epochs=10,
                    batch_size=16, learning_rate=3e-3):
    """Distance and depth probes per layer (module docstring). Returns a
    JSON-ready dict: `per_layer` (mean dev UUAS), `per_layer_spread`,
    `per_layer_worst`, `spearman` (DSpr.), `root_accuracy`, `depth_spearman`
    (NSpr.), `random_init_per_layer` (UUAS) and the random init's other scores
    under `random_init`."""
    task, random = [], []
    for seed in seeds:
        task.append(_fit_and_score(train, dev, seed, rank, epochs, batch_size, learning_rate))
        random.append(_fit_and_score(train_random, dev_random, seed, rank, epochs, batch_size,
                                     learning_rate))

    def mean(runs, key):
        return np.nanmean([r[key] for r in runs], axis=0).tolist()

    uuas = scores.over_seeds([r["uuas"] for r in task])
    return {
        "per_layer": uuas["mean"], "per_layer_spread": uuas["spread"],
        "per_layer_worst": uuas["worst"],
        "spearman": mean(task, "spearman"), "root_accuracy": mean(task, "root_accuracy"),
        "depth_spearman": mean(task, "depth_spearman"),
        "random_init_per_layer": mean(random, "uuas"),
        "random_init": {key: mean(random, key)
                        for key in ("spearman", "root_accuracy", "depth_spearman")},
        "rank": rank,
    }


def _padded(sentences, rows, width=None):
    """A batch: vectors `[b, W, layers, H]`, gold distances `[b, 1, W, W]` and
    depths `[b, 1, W]`, -1 at padding (W: `width`, else the longest row's)."""
    width = width or max(len(sentences.heads[i]) for i in rows)
    first = sentences.vectors[rows[0]]
    x = np.zeros((len(rows), width) + first.shape[1:], np.float32)
    distances = -np.ones((len(rows), 1, width, width), np.float32)
    depths = -np.ones((len(rows), 1, width), np.float32)
    for b, i in enumerate(rows):
        n = len(sentences.heads[i])
        x[b, :n] = sentences.vectors[i]
        distances[b, 0, :n, :n] = tree_distances(sentences.heads[i])
        depths[b, 0, :n] = tree_depths(sentences.heads[i])
    return x, distances, depths


class _Batches(keras.utils.PyDataset):
    """Shuffled batches of sentences for `fit`, all padded to the longest
    sentence (Keras fixes a PyDataset's shapes from its first batches)."""

    def __init__(self, sentences, batch_size, seed):
        super().__init__()
        self.sentences, self.batch_size = sentences, batch_size
        self.width = max(len(h) for h in sentences.heads)
        self.rng = np.random.default_rng(seed)
        self.order = self.rng.permutation(len(sentences.heads))

    def __len__(self):
        return -(-len(self.order) // self.batch_size)

    def __getitem__(self, i):
        rows = self.order[i * self.batch_size:(i + 1) * self.batch_size]
        x, distances, depths = _padded(self.sentences, rows, self.width)
        return x, {"distance": distances, "depth": depths}

    def on_epoch_end(self):
        self.order = self.rng.permutation(len(self.sentences.heads))


def _distance_loss(gold, predicted):
    """Sum over layers of the mean over sentences of sum |d - gold| / n^2."""
    mask = keras.ops.cast(gold >= 0, "float32")
    length = keras.ops.maximum(keras.ops.sum(mask[:, 0, 0, :], axis=-1), 1.0)  # words (row 0)
    error = keras.ops.sum(keras.ops.abs(predicted - gold) * mask, axis=(2, 3))  # [b, layers]
    return keras.ops.sum(keras.ops.mean(error / (length * length)[:, None], axis=0))


def _depth_loss(gold, predicted):
    mask = keras.ops.cast(gold >= 0, "float32")
    length = keras.ops.maximum(keras.ops.sum(mask[:, 0], axis=-1), 1.0)
    error = keras.ops.sum(keras.ops.abs(predicted - gold) * mask, axis=2)  # [b, layers]
    return keras.ops.sum(keras.ops.mean(error / length[:, None], axis=0))


def _model(layers, width, rank, mean, variance):
    inputs = keras.Input(shape=(None, layers, width), dtype="float32")
    x = keras.layers.Normalization(axis=(-2, -1), mean=mean, variance=variance)(inputs)
    projections = {}
    for name in ("distance", "depth"):
        kernel = keras.layers.EinsumDense("bwlh,lhk->bwlk", output_shape=(None, layers, rank),
                                          name=f"{name}_probe")
        projections[name] = kernel(x)
    # ||B(h_i - h_j)||^2 over every pair, per layer: [b, layers, W, W].
    p = keras.ops.transpose(projections["distance"], (0, 2, 1, 3))
    square = keras.ops.sum(p * p, axis=-1)
    distance = (square[:, :, :, None] + square[:, :, None, :]
                - 2 * keras.ops.einsum("blik,bljk->blij", p, p))
    depth = keras.ops.sum(keras.ops.transpose(projections["depth"], (0, 2, 1, 3)) ** 2, axis=-1)
    outputs = {"distance": keras.layers.Identity(name="distance")(distance),
               "depth": keras.layers.Identity(name="depth")(depth)}
    return keras.Model(inputs, outputs)


def _standardizer(sentences):
    stacked = np.concatenate([np.asarray(v, np.float64) for v in sentences.vectors])
    return stacked.mean(0), np.maximum(stacked.var(0), 1e-6)


def _fit_and_score(train, dev, seed, rank, epochs, batch_size, learning_rate):
    keras.utils.set_random_seed(seed)
    layers, width = train.vectors[0].shape[1:]
    mean, variance = _standardizer(train)
    model = _model(layers, width, rank, mean, variance)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate),
                  loss={"distance": _distance_loss, "depth": _depth_loss}, steps_per_execution=8)
    model.fit(_Batches(train, batch_size, seed), epochs=epochs, verbose=0)
    return score(model, dev, layers)


def score(model, dev, layers, batch_size=32):
    """The dev scores per layer of a trained structural-probe model."""
    correct, total = np.zeros(layers), 0
    roots, sentences = np.zeros(layers), 0
    by_length = {"spearman": {}, "depth_spearman": {}}
    for start in range(0, len(dev.heads), batch_size):
        rows = list(range(start, min(start + batch_size, len(dev.heads))))
        x, _, _ = _padded(dev, rows)
        predicted = model.predict_on_batch(x)
        for b, i in enumerate(rows):
            heads, n = dev.heads[i], len(dev.heads[i])
            gold = np.array(tree_distances(heads))
            depth = np.array(tree_depths(heads))
            keep = [j for j in range(n) if not dev.punctuation[i][j]]
            gold_edges = scores.spanning_tree_edges(gold, keep)
            total += len(gold_edges)
            sentences += 1
            for layer in range(layers):
                distance = predicted["distance"][b, layer, :n, :n]
                correct[layer] += len(scores.spanning_tree_edges(distance, keep) & gold_edges)
                depths = predicted["depth"][b, layer, :n]
                if keep:
                    roots[layer] += heads[keep[int(np.argmin(depths[keep]))]] == 0
            if LENGTHS[0] <= n <= LENGTHS[1]:
                for layer in range(layers):
                    distance = predicted["distance"][b, layer, :n, :n]
                    rows_rho = [scores.spearman(distance[j], gold[j]) for j in range(n)]
                    by_length["spearman"].setdefault(n, []).append((layer, rows_rho))
                    by_length["depth_spearman"].setdefault(n, []).append(
                        (layer, [scores.spearman(predicted["depth"][b, layer, :n], depth)]))
    return {"uuas": (correct / max(total, 1)).tolist(),
            "root_accuracy": (roots / max(sentences, 1)).tolist(),
            "spearman": _length_average(by_length["spearman"], layers),
            "depth_spearman": _length_average(by_length["depth_spearman"], layers)}


def _length_average(by_length, layers):
    """Mean over sentence lengths of the mean Spearman within each length."""
    per_length = []
    for n, entries in sorted(by_length.items()):
        values = np.full(layers, np.nan)
        for layer in range(layers):
            rhos = [r for l, rs in entries if l == layer for r in rs]
            values[layer] = np.nanmean(rhos) if np.any(np.isfinite(rhos)) else np.nan
        per_length.append(values)
    if not per_length:
        return [float("nan")] * layers
    return np.nanmean(per_length, axis=0).tolist()
