"""The tfbert checkpoint directory: the one hand-off format between
`convert`, `train` and `export`.

    <dir>/config.json        {"format": "tfbert-checkpoint", "version": 1,
                               "encoder": {BertConfig fields},
                               "lower_case": bool, "source": str,
                               "sentence": SentenceSettings (optional),
                               "cross_encoder": CrossEncoderSettings (optional),
                               "text_classifier": TextClassifierSettings (optional),
                               "token_classifier": TokenClassifierSettings (optional),
                               "question_answerer": QuestionAnswererSettings (optional),
                               "huggingface": HuggingFaceSettings (optional),
                               "tokenizer": "byte_level_bpe" (absent: "wordpiece")}
    <dir>/model.safetensors  weights by name: "encoder/<encoder weight name>",
                             and optional heads "mlm/...", "nsp/...",
                             "sentence_dense/..." (SentenceEncoder dense layer),
                             "classifier/..." (CrossEncoder / TextClassifier head),
                             "token_classifier/...", "question_answerer/..."
    <dir>/vocab.txt          WordPiece vocabulary, one token per line (a byte-level
                             BPE checkpoint: its tokens in id order)
    <dir>/vocab.json, merges.txt   a byte-level BPE checkpoint's tokenizer files
    <dir>/special_tokens.json      optional: its special tokens as the text holds
                                   them (`[{"content", "lstrip", "rstrip"}]`)

The optional sections are the settings of the model that wrote them, as
dataclasses checked like every tfbert config (`tfbert.config_loader`): a bad
value is one line naming config.json, the section and the key.

Written to a temporary sibling directory and renamed into place, so a killed
writer never leaves a half checkpoint behind.
"""

import dataclasses
import json
import os
import shutil
from typing import Optional

import numpy as np
import safetensors
import safetensors.numpy

from tfbert.atomic import DestinationError, atomic_dir  # noqa: F401  (DestinationError: re-exported)
from tfbert import config_loader
from tfbert.config import BertConfig
from tfbert.config_loader import at_least, in_range, one_of, renamed
from tfbert.layers.pooling import POOLING

FORMAT = "tfbert-checkpoint"
VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
VOCAB_FILE = "vocab.txt"


DENSE_ACTIVATIONS = ("tanh", "linear")


# `max_seq_length`: the key's name in checkpoints written before `seq_length`.
@renamed(max_seq_length="seq_length")
@dataclasses.dataclass
class SentenceSettings:
    """The `sentence` section: how a `SentenceEncoder` turns tokens into one
    embedding (pooling, an optional dense layer, L2 normalization) and how
    many wordpieces it reads."""

    pooling: str = one_of(POOLING, "mean")
    normalize: bool = True
    seq_length: Optional[int] = at_least(2, None)
    dense_units: Optional[int] = at_least(1, None)
    dense_activation: str = one_of(DENSE_ACTIVATIONS, "tanh")

    def __post_init__(self):
        config_loader.validate(self)


@renamed(max_seq_length="seq_length")
@dataclasses.dataclass
class CrossEncoderSettings:
    """The `cross_encoder` section: a `CrossEncoder`'s pair length and pooling."""

    seq_length: Optional[int] = at_least(2, None)
    pooling: str = one_of(POOLING, "cls")

    def __post_init__(self):
        config_loader.validate(self)


@dataclasses.dataclass
class TextClassifierSettings:
    """The `text_classifier` section: what `TextClassifier.from_pretrained`
    needs beyond the head's weights."""

    multi_label: bool = False
    label_list: Optional[list] = None
    threshold: float = in_range(0.0, 1.0, 0.5)
    pairs: Optional[bool] = None
    pooling: str = one_of(POOLING, "cls")
    seq_length: Optional[int] = at_least(2, None)
    # Long texts (`tfbert.text.windows`, the classification task's names; absent in
    # older checkpoints: truncate). Literal choices: text/ imports this module.
    long_text: str = one_of(("truncate", "windows"), "truncate")
    doc_stride: Optional[int] = at_least(1, None)
    doc_overlap: Optional[int] = at_least(0, None)
    max_windows: int = at_least(1, 64)
    window_pooling: str = one_of(("mean", "max", "first"), "mean")

    def __post_init__(self):
        config_loader.validate(self)


@dataclasses.dataclass
class TokenClassifierSettings:
    """The `token_classifier` section: what `TokenClassifier.from_pretrained`
    needs beyond the head's weights."""

    label_list: Optional[list] = None
    seq_length: Optional[int] = at_least(2, None)
    dropout: float = in_range(0.0, 1.0, 0.1, high_open=True)
    long_text: str = one_of(("truncate", "windows"), "truncate")
    doc_stride: Optional[int] = at_least(1, None)
    doc_overlap: Optional[int] = at_least(0, None)
    max_windows: int = at_least(1, 64)

    def __post_init__(self):
        config_loader.validate(self)


@dataclasses.dataclass
class QuestionAnswererSettings:
    """The `question_answerer` section: what `QuestionAnswerer.from_pretrained`
    needs beyond the span head's weights (the names of the QA task's config)."""

    seq_length: Optional[int] = at_least(5, None)
    doc_stride: int = at_least(1, 128)
    doc_overlap: Optional[int] = at_least(0, None)
    max_query_length: int = at_least(1, 64)
    max_answer_length: int = at_least(1, 30)
    n_best_size: int = at_least(1, 20)
    null_score_diff_threshold: float = 0.0
    version_2: Optional[bool] = None
    max_windows: int = at_least(1, 1024)
    dropout: float = in_range(0.0, 1.0, 0.0, high_open=True)

    def __post_init__(self):
        config_loader.validate(self)


# The model families `tfbert.convert` reads from and writes to Hugging Face.
MODEL_TYPES = ("bert", "roberta", "distilbert", "albert")
# How a checkpoint's text is tokenized: WordPiece over vocab.txt (every
# preprocessor in tfbert), or byte-level BPE (vocab.json + merges.txt, as
# RoBERTa; no tfbert preprocessor reads it yet).
TOKENIZERS = ("wordpiece", "byte_level_bpe")
BPE_FILES = ("vocab.json", "merges.txt")
BPE_SPECIAL_FILE = "special_tokens.json"  # optional beside BPE_FILES


@dataclasses.dataclass
class HuggingFaceSettings:
    """The `huggingface` section: what a converted Hugging Face model needs to
    be written back (`tfbert.convert.to_huggingface`) beyond the encoder
    config: its family, its special token ids and whether its pooler was made
    fresh (the source had none)."""

    model_type: str = one_of(MODEL_TYPES, "bert")
    pad_token_id: int = at_least(0, 0)
    bos_token_id: Optional[int] = at_least(0, None)
    eos_token_id: Optional[int] = at_least(0, None)
    fresh_pooler: bool = False

    def __post_init__(self):
        config_loader.validate(self)


SECTIONS = {"sentence": SentenceSettings, "cross_encoder": CrossEncoderSettings,
            "text_classifier": TextClassifierSettings,
            "token_classifier": TokenClassifierSettings,
            "question_answerer": QuestionAnswererSettings, "huggingface": HuggingFaceSettings}


@dataclasses.dataclass
class Checkpoint:
    """A read checkpoint directory: config, tokenizer settings, weights."""

    path: str
    config: BertConfig
    lower_case: bool
    weights: dict
    source: str = ""
    sentence: Optional[SentenceSettings] = None
    cross_encoder: Optional[CrossEncoderSettings] = None
    text_classifier: Optional[TextClassifierSettings] = None
    token_classifier: Optional[TokenClassifierSettings] = None
    question_answerer: Optional[QuestionAnswererSettings] = None
    huggingface: Optional[HuggingFaceSettings] = None
    tokenizer: str = "wordpiece"

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
                    text_classifier=None, token_classifier=None, question_answerer=None,
                    huggingface=None, tokenizer="wordpiece", tokenizer_files=None):
    """Writes a checkpoint directory atomically.

    `vocab_file`: the path of `vocab.txt`, or the token list itself (a
    model's `preprocessor.vocab.tokens`).
    `encoder_weights`: `{name: array}` as `BertEncoder.get_named_weights()`.
    `head_weights`: optional `{"mlm": {...}, "nsp": {...}}`.
    `sentence`, `cross_encoder`, `text_classifier`, `token_classifier`,
    `question_answerer`, `huggingface`: optional settings sections, each its dataclass
    (`SentenceSettings`, ...) or a dict of its fields.
    `tokenizer`: one of `TOKENIZERS`; "byte_level_bpe" needs `tokenizer_files`,
    `{"vocab.json": path, "merges.txt": path}` (and optionally
    `"special_tokens.json"`), copied beside vocab.txt.
    """
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"save_checkpoint: tokenizer {tokenizer!r} is not one of {TOKENIZERS}.")
    tokenizer_files = dict(tokenizer_files or {})
    given = sorted(set(tokenizer_files) - {BPE_SPECIAL_FILE} if tokenizer == "byte_level_bpe"
                   else tokenizer_files)
    if given != sorted(BPE_FILES if tokenizer == "byte_level_bpe" else ()):
        raise ValueError(f"save_checkpoint: a {tokenizer} checkpoint takes tokenizer_files "
                         f"{list(BPE_FILES) if tokenizer == 'byte_level_bpe' else []}, got "
                         f"{sorted(tokenizer_files)}.")
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
    if tokenizer != "wordpiece":
        meta["tokenizer"] = tokenizer
    for name, section in (("sentence", sentence), ("cross_encoder", cross_encoder),
                          ("text_classifier", text_classifier),
                          ("token_classifier", token_classifier),
                          ("question_answerer", question_answerer),
                          ("huggingface", huggingface)):
        if section is not None:
            if not dataclasses.is_dataclass(section):
                section = config_loader.from_dict(SECTIONS[name], dict(section),
                                                  source=f"save_checkpoint {name}")
            meta[name] = dataclasses.asdict(section)
    with atomic_dir(out_dir) as tmp:
        with open(os.path.join(tmp, CONFIG_FILE), "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=2, sort_keys=True)
        safetensors.numpy.save_file(tensors, os.path.join(tmp, WEIGHTS_FILE))
        if tokens is None:
            shutil.copyfile(vocab_file, os.path.join(tmp, VOCAB_FILE))
        else:
            with open(os.path.join(tmp, VOCAB_FILE), "w", encoding="utf-8") as f:
                f.write("\n".join(tokens) + "\n")
        for name, path in tokenizer_files.items():
            shutil.copyfile(path, os.path.join(tmp, name))
    return out_dir


def read_meta(path):
    """`(config.json path, its dict)` of a checkpoint directory; errors name the file."""
    path = config_loader.check_path(path, "checkpoint directory")
    if os.path.isfile(path):
        raise ValueError(f"{path} is a file, not a tfbert checkpoint directory.")
    if not os.path.isdir(path):
        raise FileNotFoundError(f"tfbert checkpoint directory not found: {path} (no {CONFIG_FILE})")
    config_path = os.path.join(path, CONFIG_FILE)
    if not os.path.isfile(config_path):
        raise FileNotFoundError(f"Not a tfbert checkpoint: {config_path} is missing.")
    meta = config_loader.read_json(config_path, "checkpoint config")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        # E.g. a Hugging Face directory: its lower-casing would be guessed.
        raise ValueError(f"{config_path}: not a tfbert checkpoint config (no format={FORMAT!r}); "
                         "convert it first with tools/convert_checkpoint.py.")
    return config_path, meta


def read_checkpoint(path):
    """Reads and validates a checkpoint directory; errors name the bad file."""
    config_path, meta = read_meta(path)
    if not isinstance(meta.get("encoder"), dict):
        raise ValueError(f"{config_path}: no 'encoder' section (the BertConfig as a JSON object), "
                         f"got {meta.get('encoder')!r:.60}.")
    config = BertConfig.from_dict(meta.get("encoder"), source=config_path)
    for name in (WEIGHTS_FILE, VOCAB_FILE):
        if not os.path.isfile(os.path.join(path, name)):
            raise FileNotFoundError(f"tfbert checkpoint {path} has no {name}.")
    weights_path = os.path.join(path, WEIGHTS_FILE)
    try:
        weights = safetensors.numpy.load_file(weights_path)
    except Exception as e:  # safetensors raises its own error types
        raise ValueError(f"{weights_path}: cannot read safetensors file: {e}") from None
    if not any(name.startswith("encoder/") for name in weights):
        raise ValueError(f"{weights_path}: no encoder weights ('encoder/...'); it holds "
                         f"{sorted(weights)[:5]}.")
    tokenizer = meta.get("tokenizer", "wordpiece")
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"{config_path}: tokenizer {tokenizer!r} is not one of {TOKENIZERS}.")
    return Checkpoint(
        path=path,
        tokenizer=tokenizer,
        config=config,
        lower_case=bool(meta.get("lower_case", True)),
        weights=weights,
        source=meta.get("source", ""),
        **{name: read_section(meta, name, config_path) for name in SECTIONS},
    )


def read_section(meta, name, config_path):
    """The optional section `name` of a checkpoint's config as its dataclass,
    checked; None when the checkpoint has none."""
    section = meta.get(name)
    if section is None:
        return None
    if not isinstance(section, dict):
        raise ValueError(f"{config_path}: {name!r} must be a JSON object, got {section!r:.60}.")
    # warn=False: tfbert wrote the file, under the key names of its version.
    return config_loader.from_dict(SECTIONS[name], section, source=f"{config_path}:{name}",
                                   warn=False)
