"""Word senses by nearest centroid (Coenen et al. 2019; Wiedemann et al. 2019):
does a layer's vector of a word in context tell its sense?

For every layer, each sense of a lemma seen in training gets the centroid of
its training items' unit-length target vectors; a dev item is given the
sense among its lemma's training senses whose centroid is most
cosine-similar. Dev items whose lemma has no training item are not scored
(`unscored`); a dev item whose gold sense never occurs in training counts as
wrong. The baseline is the lemma's most frequent training sense (ties: the
first in sorted order), with the random-init encoder's vectors as the
control. No training, so no seeds.

Example: two senses, one dimension apart.
>>> train = np.array([[[1.0, 0.0]], [[0.9, 0.1]], [[0.0, 1.0]]])
>>> dev = np.array([[[0.1, 0.9]]])
>>> sense_accuracy(train, ["bank"] * 3, ["money", "money", "river"],
...                dev, ["bank"], ["river"])["per_layer"]
[1.0]
"""

import collections

import numpy as np


def sense_accuracy(train_vectors, train_lemmas, train_senses, dev_vectors, dev_lemmas,
                   dev_senses):
    """Nearest-centroid dev accuracy per layer (`per_layer`), the
    most-frequent-sense `baseline`, and the counts `scored` and `unscored`.
    Vectors: `[items, layers, H]`, the target word's vector of each item."""
    train_vectors = _unit(train_vectors)
    dev_vectors = _unit(dev_vectors)
    by_lemma = collections.defaultdict(list)
    for i, lemma in enumerate(train_lemmas):
        by_lemma[lemma].append(i)
    layers = train_vectors.shape[1]
    correct, baseline_correct, scored = np.zeros(layers), 0, 0
    centroids = {}
    for lemma, rows in by_lemma.items():
        senses = sorted({train_senses[i] for i in rows})
        centroids[lemma] = (senses, np.stack([
            train_vectors[[i for i in rows if train_senses[i] == s]].mean(0) for s in senses]))
    for i, lemma in enumerate(dev_lemmas):
        if lemma not in centroids:
            continue
        scored += 1
        senses, centres = centroids[lemma]  # [senses, layers, H]
        similarity = np.einsum("slh,lh->ls", centres, dev_vectors[i]) / np.maximum(
            np.linalg.norm(centres, axis=-1).T, 1e-12)
        predicted = [senses[j] for j in similarity.argmax(-1)]
        correct += [p == dev_senses[i] for p in predicted]
        counts = collections.Counter(train_senses[j] for j in by_lemma[lemma])
        most_frequent = sorted(counts, key=lambda s: (-counts[s], s))[0]
        baseline_correct += most_frequent == dev_senses[i]
    return {"per_layer": (correct / max(scored, 1)).tolist(),
            "baseline": baseline_correct / max(scored, 1),
            "scored": scored, "unscored": len(dev_lemmas) - scored}


def _unit(vectors):
    vectors = np.asarray(vectors, np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)
