"""`run_probe(config)`: one analysis of a checkpoint, as `tools/probe.py` runs
it, written to `<output_dir>/results.json` (atomically) with a picture
(`probe.png`, `tfbert.visualize.draw_probe`).

Tasks (`ProbeConfig.task`):
- `tags`: token-label probes on a CoNLL-U column (`field`), `tfbert.analysis.tag_probe`;
- `structural`: distance and depth probes on CoNLL-U trees, `structural_probe`;
- `senses`: nearest-centroid word senses on sense JSONL files, `sense_probe`;
- `geometry`: self-similarity and anisotropy (CoNLL-U or sense JSONL), `geometry`;
- `heads`: attention-head statistics on a CoNLL-U file, `head_statistics`.

`results.json` always holds `task`, `metric`, `layers` (the layer numbers,
0 = embeddings), `per_layer` (the main score per layer: accuracy for tags
and senses, UUAS for structural, adjusted self-similarity for geometry, the
best head's dependency accuracy for heads, layers 1..L) and
`random_init_per_layer` (the same for a randomly initialized encoder of the
same architecture), then the task's own keys.
"""

import dataclasses
import math
import os
import tempfile
import typing

import keras
import numpy as np

from tfbert import config_loader
from tfbert.analysis import geometry, head_statistics, sense_probe, structural_probe, tag_probe
from tfbert.analysis.conllu import read_conllu, syntax_of
from tfbert.analysis.layer_features import LayerFeatures, encoder_and_preprocessor, \
    sentence_batches
from tfbert.analysis.sense_items import read_sense_items
from tfbert.atomic import write_json
from tfbert.encoder import BertEncoder

TASKS = ("tags", "structural", "senses", "geometry", "heads")
METRICS = {"tags": "accuracy", "structural": "uuas", "senses": "accuracy",
           "geometry": "adjusted_self_similarity", "heads": "best_head_dependency_accuracy"}


@dataclasses.dataclass
class ProbeConfig:
    """One analysis: what to probe, on which files, how the probes train."""

    task: str = config_loader.one_of(TASKS, "tags")
    checkpoint_dir: typing.Optional[str] = None
    train_file: typing.Optional[str] = None
    dev_file: typing.Optional[str] = None
    field: str = "upos"  # tags: the CoNLL-U column to predict
    output_dir: typing.Optional[str] = None
    layers: list = dataclasses.field(default_factory=list)  # empty: every layer
    pooling: str = config_loader.one_of(("mean", "first"), "mean")
    seeds: list = dataclasses.field(default_factory=lambda: [0, 1, 2])
    epochs: int = config_loader.at_least(1, 5)
    batch_size: int = config_loader.at_least(1, 256)  # words (structural: a quarter, sentences)
    learning_rate: float = config_loader.positive(3e-3)
    rank: int = config_loader.at_least(1, 64)  # structural: the rank of B
    features_batch_size: int = config_loader.at_least(1, 32)

    def __post_init__(self):
        config_loader.validate(self)
        if not self.seeds or not all(isinstance(s, int) for s in self.seeds):
            raise ValueError(f"ProbeConfig.seeds: expected a list of integers, got {self.seeds!r}.")
        for i, seed in enumerate(self.seeds):  # NumPy's seed range, named before NumPy sees it
            config_loader.check_int(seed, f"ProbeConfig.seeds[{i}]", 0, 2**32 - 1)
        if not all(isinstance(l, int) and not isinstance(l, bool) for l in self.layers):
            raise ValueError(f"ProbeConfig.layers: expected layer numbers, got {self.layers!r}.")


def run_probe(config, model=None):
    """Runs the analysis `config` describes on `model` (default: the
    checkpoint at `config.checkpoint_dir`) and returns the results dict."""
    for key in ("train_file", "output_dir") + (
            () if model is not None else ("checkpoint_dir",)):
        if not getattr(config, key):
            raise ValueError(f"--{key} is required.")
    if config.task in ("tags", "structural", "senses") and not config.dev_file:
        raise ValueError(f"--task={config.task} needs --dev_file (probes are scored on it).")
    for key in ("train_file", "dev_file"):  # before minutes of encoding
        if getattr(config, key):
            config_loader.check_file(getattr(config, key), f"--{key}")
    config_loader.check_dir_to_write(config.output_dir, "--output_dir")
    encoder, preprocessor = encoder_and_preprocessor(
        model if model is not None else config.checkpoint_dir)
    layers = _layers(config, encoder.config.num_layers)
    keras.utils.set_random_seed(config.seeds[0])
    random_encoder = BertEncoder(encoder.config)
    results = {"task": config.task, "metric": METRICS[config.task], "layers": layers}
    with tempfile.TemporaryDirectory() as scratch:
        run = _TASKS[config.task]
        results.update(run(config, encoder, random_encoder, preprocessor, layers, scratch))
    results["config"] = dataclasses.asdict(config)
    results = _json_ready(results)
    os.makedirs(config.output_dir, exist_ok=True)
    write_json(os.path.join(config.output_dir, "results.json"), results)
    from tfbert.visualize import draw_probe

    draw_probe(os.path.join(config.output_dir, "results.json"),
               os.path.join(config.output_dir, "probe.png"))
    return results


def _layers(config, num_layers):
    first = 1 if config.task == "heads" else 0  # attention starts at block 1
    for layer in config.layers:
        if not first <= layer <= num_layers:
            raise ValueError(f"--layers: layer {layer} is out of range; the encoder has layers "
                             f"{first}..{num_layers}" + (" (0 = the embeddings)." if not first
                                                         else " (attention layers)."))
    return sorted(set(config.layers)) or list(range(first, num_layers + 1))


def _features(model, sentences, scratch, name, config, names):
    return LayerFeatures.extract(model, sentences, os.path.join(scratch, name),
                                 pooling=config.pooling, batch_size=config.features_batch_size,
                                 names=names)


def _conllu(path, field=None):
    sentences = read_conllu(path, field)
    return sentences, [s.words for s in sentences], [f"{path}, line {s.line}" for s in sentences]


def _tags(config, encoder, random_encoder, preprocessor, layers, scratch):
    splits = {}
    for split in ("train", "dev"):
        sentences, words, names = _conllu(getattr(config, f"{split}_file"), config.field)
        labels = [v for s in sentences for v in s.column(config.field)]
        flat = [w for s in sentences for w in s.words]
        for which, enc in (("", encoder), ("_random", random_encoder)):
            features = _features((enc, preprocessor), words, scratch, split + which, config,
                                 names)
            splits[split + which] = tag_probe.TaggedWords(features.vectors[:, layers], labels,
                                                          flat)
    result = tag_probe.probe_tags(splits["train"], splits["dev"], splits["train_random"],
                                  splits["dev_random"], seeds=config.seeds, epochs=config.epochs,
                                  batch_size=config.batch_size,
                                  learning_rate=config.learning_rate)
    # The mix's layer numbers are positions in `layers`; name them as layers.
    for key in ("center_of_gravity", "expected_layer"):
        result[key] = _as_layer(result[key], layers)
    return {"field": config.field, **result}


def _as_layer(position, layers):
    if position != position:  # NaN
        return position
    low = int(min(max(math.floor(position), 0), len(layers) - 1))
    high = min(low + 1, len(layers) - 1)
    return layers[low] + (position - low) * (layers[high] - layers[low])


def _structural(config, encoder, random_encoder, preprocessor, layers, scratch):
    splits = {}
    for split in ("train", "dev"):
        sentences, words, names = _conllu(getattr(config, f"{split}_file"))
        heads = [syntax_of(s) for s in sentences]
        punctuation = [[u == "PUNCT" for u in s.column("upos")] for s in sentences]
        for which, enc in (("", encoder), ("_random", random_encoder)):
            features = _features((enc, preprocessor), words, scratch, split + which, config,
                                 names)
            vectors = [features.sentence(i)[:, layers] for i in range(len(sentences))]
            splits[split + which] = structural_probe.ParsedSentences(vectors, heads, punctuation)
    return structural_probe.probe_structure(
        splits["train"], splits["dev"], splits["train_random"], splits["dev_random"],
        seeds=config.seeds, rank=config.rank, epochs=config.epochs,
        batch_size=max(1, config.batch_size // 4), learning_rate=config.learning_rate)


def _sense_vectors(features, items, layers):
    rows = features.offsets[:-1] + np.array([item.target for item in items])
    return np.asarray(features.vectors[rows][:, layers], np.float32)


def _senses(config, encoder, random_encoder, preprocessor, layers, scratch):
    vectors, items = {}, {}
    for split in ("train", "dev"):
        path = getattr(config, f"{split}_file")
        items[split] = read_sense_items(path)
        words = [item.words for item in items[split]]
        names = [f"{path}, line {item.line}" for item in items[split]]
        for which, enc in (("", encoder), ("_random", random_encoder)):
            features = _features((enc, preprocessor), words, scratch, split + which, config,
                                 names)
            vectors[split + which] = _sense_vectors(features, items[split], layers)

    def accuracy(which):
        return sense_probe.sense_accuracy(
            vectors["train" + which], [i.lemma for i in items["train"]],
            [i.sense for i in items["train"]], vectors["dev" + which],
            [i.lemma for i in items["dev"]], [i.sense for i in items["dev"]])

    result = accuracy("")
    result["random_init_per_layer"] = accuracy("_random")["per_layer"]
    return result


def _geometry(config, encoder, random_encoder, preprocessor, layers, scratch):
    path = config.train_file
    if path.endswith(".jsonl"):
        items = read_sense_items(path)
        words, names = [i.words for i in items], [f"{path}, line {i.line}" for i in items]
    else:
        _, words, names = _conllu(path)
    flat = [w for s in words for w in s]
    result = {}
    for which, enc in (("", encoder), ("random_init", random_encoder)):
        features = _features((enc, preprocessor), words, scratch, which or "task", config, names)
        stats = geometry.contextuality(features.vectors[:, layers], flat, seed=config.seeds[0])
        if which:
            result["random_init"] = stats
            result["random_init_per_layer"] = stats["adjusted"]
        else:
            result.update(stats, per_layer=stats["adjusted"])
    return result


def _heads(config, encoder, random_encoder, preprocessor, layers, scratch):
    del scratch
    path = config.train_file
    sentences, words, names = _conllu(path)
    for sentence in sentences:
        syntax_of(sentence)
    table = head_statistics.punctuation_ids(preprocessor.vocab.tokens)
    seq_length = encoder.config.max_position_embeddings

    def statistics(enc):
        batches = sentence_batches(preprocessor, words, config.features_batch_size, seq_length,
                                   names)
        stats = head_statistics.attention_statistics(enc, batches, sentences, table)
        picked = [layer - 1 for layer in layers]
        stats["per_layer"] = [stats["per_layer"][i] for i in picked]
        stats["statistics"] = {k: [v[i] for i in picked] for k, v in stats["statistics"].items()}
        return stats

    result = statistics(encoder)
    result["random_init_per_layer"] = statistics(random_encoder)["per_layer"]
    return result


_TASKS = {"tags": _tags, "structural": _structural, "senses": _senses, "geometry": _geometry,
          "heads": _heads}


def _json_ready(value):
    """NaN (an undefined score) as null; NumPy scalars as Python numbers."""
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value
