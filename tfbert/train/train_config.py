"""`TrainConfig`: the `train:` section of a fine-tuning YAML (the BERT paper's recipe).

The recipe: AdamW with linear warmup over 10% of the steps and linear decay
to 0, batch 32, XLA; learning rate and epochs by model and data size unless
set (`tfbert.train.recipe`). Task-specific settings
(heads, frozen-encoder learning rates, losses) live in each task's own config.

Example:
>>> TrainConfig(epochs=2).learning_rate is None  # None: chosen by tfbert.train.recipe
True
"""

import dataclasses
from typing import Optional

from tfbert.experiment import at_least, in_range, one_of, positive, validate


@dataclasses.dataclass
class TrainConfig:
    """How a task trains; field names are the YAML keys and `--set train.<name>`."""

    batch_size: int = at_least(1, 32)
    eval_batch_size: int = at_least(1, 64)
    # None: chosen by model and data size (`tfbert.train.recipe`), printed
    # before training and stored in results.json.
    learning_rate: Optional[float] = positive(None)
    epochs: Optional[int] = at_least(1, None)
    steps_per_epoch: Optional[int] = at_least(1, None)  # default: one pass over the training file
    warmup_fraction: float = in_range(0.0, 1.0, 0.1)
    weight_decay: float = at_least(0.0, 0.01)
    optimizer_type: str = one_of(("adamw", "lamb"), "adamw")
    clipnorm: float = positive(1.0)
    seed: int = 42
    jit_compile: bool = True
    # Mixed precision: compute in half precision, keep float32 variables and
    # float32 outputs ("" = the Keras global policy, usually float32).
    dtype_policy: str = one_of(("", "float32", "mixed_bfloat16", "mixed_float16"), "")
    tensorboard: bool = True
    verbose: int = in_range(0, 2, 2)

    def __post_init__(self):
        validate(self)
