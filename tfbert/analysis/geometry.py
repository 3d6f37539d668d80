"""How contextual is each layer (Ethayarajh 2019)?

- self-similarity of a word type at layer l: the mean cosine similarity of
  its vectors in its different occurrences (different contexts), averaged
  over the word types (lower-cased forms) that occur at least `min_count`
  times;
- anisotropy at layer l: the mean cosine similarity of `pairs` random pairs
  of word vectors of different types: what two unrelated words share;
- adjusted self-similarity: self-similarity less anisotropy (his
  correction, so layers compare fairly).

Example: one word in two nearly equal contexts, another apart.
>>> v = np.array([[[1.0, 0.0]], [[0.99, 0.1]], [[0.0, 1.0]]])
>>> g = contextuality(v, ["bank", "Bank", "river"])
>>> round(g["self_similarity"][0], 3), g["types"]
(0.995, 1)
"""

import collections

import numpy as np


def contextuality(vectors, words, min_count=2, pairs=1000, seed=0):
    """`{"self_similarity", "anisotropy", "adjusted"}` per layer and the
    number of word `types` averaged, from `vectors` `[words, layers, H]`."""
    unit = np.asarray(vectors, np.float32)
    unit = unit / np.maximum(np.linalg.norm(unit, axis=-1, keepdims=True), 1e-12)
    occurrences = collections.defaultdict(list)
    for i, word in enumerate(words):
        occurrences[word.lower()].append(i)
    repeated = [rows for rows in occurrences.values() if len(rows) >= min_count]
    layers = unit.shape[1]
    self_similarity = np.zeros(layers)
    for rows in repeated:
        v = unit[rows]  # [n, layers, H]
        gram = np.einsum("ilh,jlh->lij", v, v)
        n = len(rows)
        self_similarity += (gram.sum((1, 2)) - np.trace(gram, axis1=1, axis2=2)) / (n * (n - 1))
    self_similarity /= max(len(repeated), 1)
    rng = np.random.default_rng(seed)
    types = np.array([w.lower() for w in words])
    a, b = rng.integers(len(words), size=(2, pairs * 2))
    different = types[a] != types[b]
    a, b = a[different][:pairs], b[different][:pairs]
    anisotropy = (np.einsum("ilh,ilh->il", unit[a], unit[b]).mean(0) if len(a)
                  else np.full(layers, np.nan))
    return {"self_similarity": self_similarity.tolist(), "anisotropy": anisotropy.tolist(),
            "adjusted": (self_similarity - anisotropy).tolist(), "types": len(repeated)}
