"""`BertConfig`: the encoder's hyper-parameters, presets and YAML loading.

One config path: this dataclass <- YAML <- absl flag overrides. Field names are
the `BertEncoder` argument names; nothing is renamed on the way.
"""

import dataclasses
import importlib.resources
import os
from typing import Optional

import yaml

from tfbert import config_loader
from tfbert.config_loader import in_range, one_of, positive

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

    `norm_first` (off by default, which is BERT exactly): pre-LayerNorm blocks
    (each sub-layer normalizes its input) and a final layer norm after the last
    block, as in Keras' `TransformerEncoder(norm_first=True)`; reported to
    train from scratch more stably at high learning rates. Released BERT
    weights are post-LN, so the converters refuse it.

    `heads_per_layer` (None by default: every layer has `num_heads`): the
    attention heads each layer keeps after head pruning
    (`BertEncoder.prune_heads`), one count per layer, each in `[0,
    num_heads]`; a head keeps its size, `hidden_size // num_heads`. A layer
    with 0 heads keeps its feed-forward part; its attention adds only the
    output projection's bias. Left out of `to_dict()` when None, so configs
    written before it read and write unchanged.

    Example:
    >>> cfg = BertConfig.from_preset("tiny")
    >>> cfg.hidden_size, cfg.num_layers
    (128, 2)
    >>> cfg.replace(num_layers=4).num_layers
    4
    """

    vocab_size: int = positive(30522)
    hidden_size: int = positive(768)
    num_layers: int = positive(12)
    num_heads: int = positive(12)
    intermediate_size: int = positive(3072)
    hidden_act: str = one_of(ACTIVATIONS, "gelu")
    dropout_rate: float = in_range(0.0, 1.0, 0.1, high_open=True)
    attention_dropout_rate: float = in_range(0.0, 1.0, 0.1, high_open=True)
    max_position_embeddings: int = positive(512)
    type_vocab_size: int = positive(2)
    initializer_range: float = positive(0.02)
    layer_norm_eps: float = positive(1e-12)
    embedding_size: Optional[int] = positive(None)  # None: = hidden_size (BERT)
    share_layers: bool = False
    norm_first: bool = False  # pre-LayerNorm blocks + a final layer norm
    heads_per_layer: Optional[tuple] = None  # None: num_heads in every layer

    @property
    def factorized_embeddings(self):
        """True when the embeddings need an E -> H projection (ALBERT)."""
        return self.embedding_size is not None and self.embedding_size != self.hidden_size

    @property
    def embedding_width(self):
        """E: the width of the embedding tables (= hidden_size for BERT)."""
        return self.embedding_size if self.embedding_size is not None else self.hidden_size

    def __post_init__(self):
        config_loader.validate(self)
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"BertConfig.hidden_size ({self.hidden_size}) must be divisible by "
                f"BertConfig.num_heads ({self.num_heads})."
            )
        if self.heads_per_layer is not None:
            self._check_heads_per_layer()

    def _check_heads_per_layer(self):
        heads = self.heads_per_layer
        if self.share_layers:  # one block for every layer: no layer can differ
            raise ValueError("BertConfig.heads_per_layer cannot be set with share_layers "
                             "(one block is shared by every layer).")
        if len(heads) != self.num_layers:
            raise ValueError(f"BertConfig.heads_per_layer has {len(heads)} counts for "
                             f"num_layers={self.num_layers}.")
        for layer, count in enumerate(heads):
            if isinstance(count, bool) or not isinstance(count, int) or not (
                    0 <= count <= self.num_heads):
                raise ValueError(f"BertConfig.heads_per_layer[{layer}] must be an integer in "
                                 f"[0, num_heads={self.num_heads}], got {count!r}.")

    def layer_heads(self, layer):
        """The attention heads of layer `layer` (`num_heads` unless pruned)."""
        return self.num_heads if self.heads_per_layer is None else self.heads_per_layer[layer]

    @property
    def head_size(self):
        """The width of one attention head (pruning keeps it)."""
        return self.hidden_size // self.num_heads

    # -- Construction -------------------------------------------------------
    @classmethod
    def from_dict(cls, values, source="config"):
        """Builds a config from a mapping; unknown keys are an error."""
        if not isinstance(values, dict):  # e.g. a config.json without its "encoder"
            raise TypeError(f"{source}: expected a mapping of BertConfig fields, "
                            f"got {type(values).__name__}.")
        return config_loader.from_dict(cls, values, source=source)

    @classmethod
    def from_yaml(cls, path):
        """Loads a YAML (or JSON) file holding BertConfig fields."""
        if not os.path.isfile(path):
            raise FileNotFoundError(f"BertConfig file not found: {path}")
        with open(path, encoding="utf-8") as f:
            values = config_loader.load_yaml(f, source=path)
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
        return type(self).from_dict({**self.to_dict(), **changes}, source="BertConfig.replace()")

    def to_dict(self):
        values = dataclasses.asdict(self)
        if values["heads_per_layer"] is None:  # configs from before it stay as they were
            del values["heads_per_layer"]
        else:
            values["heads_per_layer"] = list(values["heads_per_layer"])  # YAML/JSON lists
        return values

    def to_yaml(self):
        return yaml.safe_dump(self.to_dict(), sort_keys=False)


def preset_path(name):
    """Path of a preset YAML shipped with the package (`configs/presets/`)."""
    return str(importlib.resources.files("tfbert.configs") / "presets" / f"{name}.yaml")
