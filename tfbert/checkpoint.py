"""The tfbert checkpoint directory: the one hand-off format between
`convert`, `train` and `export`.

    <dir>/config.json        {"format": "tfbert-checkpoint", "version": 1,
                               "encoder": {BertConfig fields},
                               "lower_case": bool, "source": str,
                               "sentence": {pooling, normalize, max_seq_length,
                                            dense_units, dense_activation} (optional:
                                            SentenceEncoder settings),
                               "cross_encoder": {max_seq_length, pooling} (optional),
                               "text_classifier": {multi_label, label_list, threshold,
                                                   pairs, pooling, seq_length} (optional:
                                                   TextClassifier settings)}
    <dir>/model.safetensors  weights by name: "encoder/<encoder weight name>",
                             and optional heads "mlm/...", "nsp/...",
                             "sentence_dense/..." (SentenceEncoder dense layer),
                             "classifier/..." (CrossEncoder / TextClassifier head)
    <dir>/vocab.txt          WordPiece vocabulary, one token per line

Written to a temporary sibling directory and renamed into place, so a killed
writer never leaves a half checkpoint behind.
"""

import dataclasses
import json
import os
import shutil

import numpy as np
import safetensors
import safetensors.numpy

from tfbert.atomic import DestinationError, atomic_dir  # noqa: F401  (DestinationError: re-exported)
from tfbert.config import BertConfig

FORMAT = "tfbert-checkpoint"
VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
VOCAB_FILE = "vocab.txt"


@dataclasses.dataclass
class Checkpoint:
    """A read checkpoint directory: config, tokenizer settings, weights."""

    path: str
    config: BertConfig
    lower_case: bool
    weights: dict
    source: str = ""
    sentence: dict = None  # SentenceEncoder settings, when the checkpoint has them
    cross_encoder: dict = None  # CrossEncoder settings (max_seq_length, pooling), when it has them
    text_classifier: dict = None  # TextClassifier settings, when it has them

    @property
    def vocab_file(self):
        return os.path.join(self.path, VOCAB_FILE)

    @property
    def weights_path(self):
        return os.path.join(self.path, WEIGHTS_FILE)

    def encoder_weights(self):
        return self.prefixed_weights("encoder")

    def prefixed_weights(self, prefix):
        """`{name: array}` of the weights under `prefix/`, prefix stripped."""
        start = prefix + "/"
        return {k[len(start):]: v for k, v in self.weights.items() if k.startswith(start)}


def split_heads(weights):
    """`{"encoder/a": x, "mlm/b": y}` -> (`{"a": x}`, `{"mlm": {"b": y}}`): the
    flat names of a weights file as `save_checkpoint` takes them."""
    encoder, heads = {}, {}
    for key, value in weights.items():
        prefix, name = key.split("/", 1)
        if prefix == "encoder":
            encoder[name] = value
        else:
            heads.setdefault(prefix, {})[name] = value
    return encoder, heads


def assign_weights(variables, weights, source, what):
    """Assigns `weights[name]` to every `variables[name]`, or assigns nothing:
    a missing, unexpected or mis-shaped weight is one ValueError naming them
    all, with both shapes (never a silent partial load)."""
    missing = sorted(set(variables) - set(weights))
    extra = sorted(set(weights) - set(variables))
    problems = []
    if missing:
        problems.append(f"missing weights {missing}")
    if extra:
        problems.append(f"unexpected weights {extra}")
    for name in sorted(set(variables) & set(weights)):
        want, got = tuple(variables[name].shape), tuple(np.shape(weights[name]))
        if want != got:
            problems.append(f"{name}: shape {got} in {source}, {what} expects {want}")
    if problems:
        raise ValueError(f"{source} does not match the {what}: " + "; ".join(problems))
    for name, variable in variables.items():
        variable.assign(np.asarray(weights[name], dtype=variable.dtype))


def save_checkpoint(out_dir, config, encoder_weights, vocab_file, lower_case,
                    head_weights=None, source="", sentence=None, cross_encoder=None,
                    text_classifier=None):
    """Writes a checkpoint directory atomically.

    `vocab_file`: the path of `vocab.txt`, or the token list itself (a
    model's `preprocessor.vocab.tokens`).
    `encoder_weights`: `{name: array}` as `BertEncoder.get_named_weights()`.
    `head_weights`: optional `{"mlm": {...}, "nsp": {...}}`.
    `sentence`: optional `SentenceEncoder` settings (pooling, normalize, ...).
    `cross_encoder`: optional `CrossEncoder` settings (max_seq_length, pooling).
    `text_classifier`: optional `TextClassifier` settings.
    """
    tokens = None if isinstance(vocab_file, (str, os.PathLike)) else list(vocab_file)
    if tokens is None and not os.path.isfile(vocab_file):
        raise FileNotFoundError(f"Vocabulary file not found: {vocab_file}")
    tensors = {f"encoder/{k}": np.ascontiguousarray(v) for k, v in encoder_weights.items()}
    for head, weights in (head_weights or {}).items():
        tensors.update({f"{head}/{k}": np.ascontiguousarray(v) for k, v in weights.items()})
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "encoder": config.to_dict(),
        "lower_case": bool(lower_case),
        "source": source,
    }
    if sentence is not None:
        meta["sentence"] = dict(sentence)
    if cross_encoder is not None:
        meta["cross_encoder"] = dict(cross_encoder)
    if text_classifier is not None:
        meta["text_classifier"] = dict(text_classifier)
    with atomic_dir(out_dir) as tmp:
        with open(os.path.join(tmp, CONFIG_FILE), "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=2, sort_keys=True)
        safetensors.numpy.save_file(tensors, os.path.join(tmp, WEIGHTS_FILE))
        if tokens is None:
            shutil.copyfile(vocab_file, os.path.join(tmp, VOCAB_FILE))
        else:
            with open(os.path.join(tmp, VOCAB_FILE), "w", encoding="utf-8") as f:
                f.write("\n".join(tokens) + "\n")
    return out_dir


def read_meta(path):
    """`(config.json path, its dict)` of a checkpoint directory; errors name the file."""
    if not os.path.isdir(path):
        raise FileNotFoundError(f"tfbert checkpoint directory not found: {path} (no {CONFIG_FILE})")
    config_path = os.path.join(path, CONFIG_FILE)
    if not os.path.isfile(config_path):
        raise FileNotFoundError(f"Not a tfbert checkpoint: {config_path} is missing.")
    try:
        with open(config_path, encoding="utf-8") as f:
            meta = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{config_path}: not valid JSON: {e}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        # E.g. a Hugging Face directory: its lower-casing would be guessed.
        raise ValueError(f"{config_path}: not a tfbert checkpoint config (no format={FORMAT!r}); "
                         "convert it first with tools/convert_checkpoint.py.")
    return config_path, meta


def read_checkpoint(path):
    """Reads and validates a checkpoint directory; errors name the bad file."""
    config_path, meta = read_meta(path)
    config = BertConfig.from_dict(meta.get("encoder"), source=config_path)
    for name in (WEIGHTS_FILE, VOCAB_FILE):
        if not os.path.isfile(os.path.join(path, name)):
            raise FileNotFoundError(f"tfbert checkpoint {path} has no {name}.")
    weights_path = os.path.join(path, WEIGHTS_FILE)
    try:
        weights = safetensors.numpy.load_file(weights_path)
    except Exception as e:  # safetensors raises its own error types
        raise ValueError(f"{weights_path}: cannot read safetensors file: {e}") from None
    return Checkpoint(
        path=path,
        config=config,
        lower_case=bool(meta.get("lower_case", True)),
        weights=weights,
        source=meta.get("source", ""),
        sentence=_sentence_section(meta.get("sentence"), config_path),
        cross_encoder=_sentence_section(meta.get("cross_encoder"), config_path, "cross_encoder"),
        text_classifier=_sentence_section(meta.get("text_classifier"), config_path,
                                          "text_classifier"),
    )


def _sentence_section(section, config_path, name="sentence"):
    """The optional `sentence` (or `cross_encoder`) section, checked to be a JSON object."""
    if section is not None and not isinstance(section, dict):
        raise ValueError(f"{config_path}: {name!r} must be a JSON object, got {section!r}.")
    return section
