"""`BertConfig`: the encoder's hyper-parameters, presets and YAML loading.

One config path: this dataclass <- YAML <- absl flag overrides. Field names are
the `BertEncoder` argument names; nothing is renamed on the way.
"""

import dataclasses
import importlib.resources
import os
from typing import Optional

import yaml

from tfbert.experiment import load_yaml

PRESETS = ("tiny", "mini", "small", "medium", "base", "large")
ACTIVATIONS = ("gelu", "gelu_tanh", "relu")


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """Hyper-parameters of a BERT encoder.

    `hidden_act`: `gelu` is the exact erf GELU (what Hugging Face configs mean),
    `gelu_tanh` the tanh approximation of google-research/bert's `modeling.py`.

    ALBERT-style options (both off by default, which is BERT exactly):
    `embedding_size` factorizes the embeddings: tables of width E, then a
    learned E -> `hidden_size` projection (None, or E = `hidden_size`: no
    projection). `share_layers` builds one transformer block and applies it
    `num_layers` times (cross-layer parameter sharing).

    Example:
    >>> cfg = BertConfig.from_preset("tiny")
    >>> cfg.hidden_size, cfg.num_layers
    (128, 2)
    >>> cfg.replace(num_layers=4).num_layers
    4
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    dropout_rate: float = 0.1
    attention_dropout_rate: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    embedding_size: Optional[int] = None  # None: = hidden_size (BERT)
    share_layers: bool = False

    @property
    def factorized_embeddings(self):
        """True when the embeddings need an E -> H projection (ALBERT)."""
        return self.embedding_size is not None and self.embedding_size != self.hidden_size

    @property
    def embedding_width(self):
        """E: the width of the embedding tables (= hidden_size for BERT)."""
        return self.embedding_size if self.embedding_size is not None else self.hidden_size

    def __post_init__(self):
        _validate(self)

    # -- Construction -------------------------------------------------------
    @classmethod
    def from_dict(cls, values, source="config"):
        """Builds a config from a mapping; unknown keys are an error."""
        if not isinstance(values, dict):
            raise TypeError(
                f"{source}: expected a mapping of BertConfig fields, "
                f"got {type(values).__name__}."
            )
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"{source}: unknown BertConfig key(s) {unknown}; "
                f"valid keys are {sorted(known)}."
            )
        try:
            return cls(**values)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{source}: {e}") from None

    @classmethod
    def from_yaml(cls, path):
        """Loads a YAML (or JSON) file holding BertConfig fields."""
        if not os.path.isfile(path):
            raise FileNotFoundError(f"BertConfig file not found: {path}")
        with open(path, encoding="utf-8") as f:
            try:
                values = load_yaml(f)
            except yaml.YAMLError as e:
                raise ValueError(f"{path}: not valid YAML: {e}") from None
        return cls.from_dict(values if values is not None else {}, source=path)

    @classmethod
    def from_preset(cls, name, **overrides):
        """Loads `configs/presets/<name>.yaml` (tiny, mini, small, medium, base, large)."""
        if name not in PRESETS:
            raise ValueError(f"Unknown preset {name!r}; choose one of {list(PRESETS)}.")
        path = preset_path(name)
        config = cls.from_yaml(path)
        return config.replace(**overrides) if overrides else config

    def replace(self, **changes):
        """A copy with some fields changed (validated like the constructor)."""
        return type(self).from_dict({**self.to_dict(), **changes}, source="replace()")

    def to_dict(self):
        return dataclasses.asdict(self)

    def to_yaml(self):
        return yaml.safe_dump(self.to_dict(), sort_keys=False)


def preset_path(name):
    """Path of a preset YAML shipped with the package (`configs/presets/`)."""
    return str(importlib.resources.files("tfbert.configs") / "presets" / f"{name}.yaml")


_INT_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_layers",
    "num_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)


def _validate(cfg):
    for name in _INT_FIELDS:
        value = getattr(cfg, name)
        # bool is an int subclass; `num_layers: true` is a typo, not 1.
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"BertConfig.{name} must be an int, got {value!r}.")
        if value <= 0:
            raise ValueError(f"BertConfig.{name} must be positive, got {value}.")
    for name in ("dropout_rate", "attention_dropout_rate"):
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"BertConfig.{name} must be a number, got {value!r}.")
        if not 0.0 <= value < 1.0:
            raise ValueError(f"BertConfig.{name} must be in [0, 1), got {value}.")
    for name in ("initializer_range", "layer_norm_eps"):
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"BertConfig.{name} must be a number, got {value!r}.")
        if value <= 0:
            raise ValueError(f"BertConfig.{name} must be positive, got {value}.")
    if cfg.embedding_size is not None:
        if isinstance(cfg.embedding_size, bool) or not isinstance(cfg.embedding_size, int):
            raise TypeError(f"BertConfig.embedding_size must be an int or null, "
                            f"got {cfg.embedding_size!r}.")
        if cfg.embedding_size <= 0:
            raise ValueError(f"BertConfig.embedding_size must be positive, got {cfg.embedding_size}.")
    if not isinstance(cfg.share_layers, bool):
        raise TypeError(f"BertConfig.share_layers must be true or false, got {cfg.share_layers!r}.")
    if cfg.hidden_act not in ACTIVATIONS:
        raise ValueError(
            f"BertConfig.hidden_act must be one of {list(ACTIVATIONS)}, "
            f"got {cfg.hidden_act!r}."
        )
    if cfg.hidden_size % cfg.num_heads:
        raise ValueError(
            f"BertConfig.hidden_size ({cfg.hidden_size}) must be divisible by "
            f"BertConfig.num_heads ({cfg.num_heads})."
        )
