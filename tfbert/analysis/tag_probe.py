"""Token-label probes (`probe_tags`): what each layer's word vectors say about
a word's label (UPOS, XPOS, DEPREL, NER tags: any CoNLL-U column).

For every layer l (0 = the embeddings) a linear softmax classifier is trained
on frozen vectors of the training words and scored on the dev words
(accuracy). Beside them, in the same model, a classifier over a learned
scalar mix of layers 0..l for every l (Tenney, Das & Pavlick 2019: the
cumulative scores P(l) give the center of gravity; the full mix's weights
give the expected layer). Every probe is trained from `seeds` and reported
as mean, spread and worst seed, always beside two controls:

- the same probes on the vectors of a randomly initialized encoder of the
  same architecture (`random_init_per_layer`), and layer 0 itself;
- a control task (Hewitt & Liang 2019): each word type gets a label drawn
  from the training labels' distribution, fixed per type; `selectivity` is
  the task's accuracy less the control task's, per layer.

The inputs are standardized per layer and dimension with the training
words' mean and variance (BERT's layers differ in scale by orders of
magnitude). Tenney et al. probe spans with an MLP; this probe is linear on
words.
"""

import dataclasses

import keras
import numpy as np

from tfbert.analysis import scores
from tfbert.analysis.cumulative_scalar_mix import CumulativeScalarMix
from tfbert.analysis.per_layer_linear import PerLayerLinear


@dataclasses.dataclass
class TaggedWords:
    """Words with a label each: `vectors` `[words, layers, H]` (float16 or 32),
    `labels` and `words` (the forms; the control task keys on them)."""

    vectors: np.ndarray
    labels: list
    words: list


def probe_tags(train, dev, train_random, dev_random, seeds=(0, 1, 2), epochs=5,
               batch_size=256, learning_rate=3e-3):
    """Trains and scores the probes (module docstring); `train_random` and
    `dev_random` hold the random-init encoder's vectors of the same words.
    Returns a JSON-ready dict: `per_layer` (mean dev accuracy a layer) with
    `per_layer_spread` and `per_layer_worst`, `random_init_per_layer`,
    `control_task_per_layer`, `selectivity`, `cumulative_per_layer`,
    `mix_weights`, `center_of_gravity`, `expected_layer`, `mix_accuracy`,
    `majority_baseline`, `labels`."""
    label_list = sorted(set(train.labels))
    index = {label: i for i, label in enumerate(label_list)}
    y_train = np.array([index[l] for l in train.labels])
    y_dev = np.array([index.get(l, -1) for l in dev.labels])  # unseen labels count as wrong
    majority = np.bincount(y_train, minlength=len(label_list)).argmax()
    runs = {"task": [], "random": [], "control": []}
    cumulative, mix_weights, mix_accuracy = [], [], []
    for seed in seeds:
        task = _fit_and_score(train.vectors, y_train, dev.vectors, y_dev, len(label_list), seed,
                              epochs, batch_size, learning_rate)
        runs["task"].append(task["per_layer"])
        cumulative.append(task["cumulative"])
        mix_weights.append(task["mix_weights"])
        mix_accuracy.append(task["cumulative"][-1])
        runs["random"].append(_fit_and_score(train_random.vectors, y_train, dev_random.vectors,
                                             y_dev, len(label_list), seed, epochs, batch_size,
                                             learning_rate)["per_layer"])
        c_train, c_dev = control_labels(train, dev, seed)
        runs["control"].append(_fit_and_score(train.vectors, c_train, dev.vectors, c_dev,
                                              len(label_list), seed, epochs, batch_size,
                                              learning_rate)["per_layer"])
    task = scores.over_seeds(runs["task"])
    mean_cumulative = np.mean(cumulative, axis=0)
    mean_weights = np.mean(mix_weights, axis=0)
    return {
        "labels": label_list,
        "per_layer": task["mean"], "per_layer_spread": task["spread"],
        "per_layer_worst": task["worst"],
        "random_init_per_layer": scores.over_seeds(runs["random"])["mean"],
        "control_task_per_layer": scores.over_seeds(runs["control"])["mean"],
        "selectivity": (np.mean(runs["task"], 0) - np.mean(runs["control"], 0)).tolist(),
        "cumulative_per_layer": mean_cumulative.tolist(),
        "mix_weights": mean_weights.tolist(),
        "mix_accuracy": scores.over_seeds(np.array(mix_accuracy)[:, None])["mean"][0],
        "center_of_gravity": scores.center_of_gravity(mean_cumulative),
        "expected_layer": scores.expected_layer(mean_weights),
        "majority_baseline": float(np.mean(y_dev == majority)),
    }


def control_labels(train, dev, seed):
    """Hewitt & Liang's control task: `(train ids, dev ids)` where every word
    type (lower-cased form) has one label drawn, with `seed`, from the
    training labels' empirical distribution."""
    labels = sorted(set(train.labels))
    counts = np.array([train.labels.count(l) for l in labels], np.float64)
    types = sorted({w.lower() for w in train.words} | {w.lower() for w in dev.words})
    drawn = np.random.default_rng(seed).choice(len(labels), size=len(types),
                                               p=counts / counts.sum())
    of_type = dict(zip(types, drawn))
    return (np.array([of_type[w.lower()] for w in train.words]),
            np.array([of_type[w.lower()] for w in dev.words]))


def _standardizer(vectors):
    """Mean and variance `[layers, H]` of the training vectors, in chunks
    (they may be a float16 memory map)."""
    total = np.zeros(vectors.shape[1:], np.float64)
    squares = np.zeros(vectors.shape[1:], np.float64)
    for start in range(0, len(vectors), 4096):
        chunk = np.asarray(vectors[start:start + 4096], np.float64)
        total += chunk.sum(0)
        squares += (chunk * chunk).sum(0)
    mean = total / len(vectors)
    return mean, np.maximum(squares / len(vectors) - mean * mean, 1e-6)


def _fit_and_score(x_train, y_train, x_dev, y_dev, num_labels, seed, epochs, batch_size,
                   learning_rate):
    """One seed: per-layer and cumulative-mix probes trained together; their
    dev accuracies and the full mix's weights."""
    keras.utils.set_random_seed(seed)
    layers = x_train.shape[1]
    mean, variance = _standardizer(x_train)
    inputs = keras.Input(shape=x_train.shape[1:], dtype="float32")
    x = keras.layers.Normalization(axis=(-2, -1), mean=mean, variance=variance)(inputs)
    mix = CumulativeScalarMix()
    outputs = keras.layers.Concatenate(axis=1)([PerLayerLinear(num_labels)(x),
                                                PerLayerLinear(num_labels)(mix(x))])
    model = keras.Model(inputs, outputs)
    # Many steps per call: a linear probe's step is cheap next to Keras' per-step overhead.
    model.compile(optimizer=keras.optimizers.Adam(learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  steps_per_execution=32)
    targets = np.repeat(y_train[:, None], 2 * layers, axis=1)
    model.fit(np.asarray(x_train, np.float32), targets, batch_size=batch_size, epochs=epochs,
              shuffle=True, verbose=0)
    predicted = model.predict(np.asarray(x_dev, np.float32), batch_size=1024,
                              verbose=0).argmax(-1)
    accuracy = (predicted == y_dev[:, None]).mean(0)
    return {"per_layer": accuracy[:layers].tolist(), "cumulative": accuracy[layers:].tolist(),
            "mix_weights": mix.mix_weights().tolist()}
