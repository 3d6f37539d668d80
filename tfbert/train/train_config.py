"""`TrainConfig`: the `train:` section of a fine-tuning YAML (the BERT paper's recipe).

The recipe: AdamW (bias-corrected, epsilon 1e-8) with linear warmup over 10%
of the steps and linear decay to 0, XLA; learning rate, batch size and epochs
by model and data size unless set (`tfbert.train.recipe`); the best epoch
chosen on held-out validation data. Task-specific settings
(heads, frozen-encoder learning rates, losses) live in each task's own config.

Example:
>>> TrainConfig(epochs=2).learning_rate is None  # None: chosen by tfbert.train.recipe
True
"""

import dataclasses
from typing import Optional

from tfbert.config_loader import at_least, in_range, one_of, positive, renamed, validate

# `keras.config.set_dtype_policy` names ("" = leave the global policy as it is).
DTYPE_POLICIES = ("", "float32", "mixed_bfloat16", "mixed_float16")
# `train.lora_targets` names (`tfbert.train.lora.TARGETS`): projections of each block.
LORA_TARGETS = ("query", "key", "value", "attention_output", "intermediate", "output")


@renamed(warmup_fraction="warmup_ratio")
@dataclasses.dataclass
class TrainConfig:
    """How a task trains; field names are the YAML keys and `--set train.<name>`."""

    # None: chosen by data size (`tfbert.train.recipe`): 16 on small data, 32 on large.
    # With gradient accumulation, the effective batch of one optimizer update.
    batch_size: Optional[int] = at_least(1, None)
    # N > 1: each update averages the gradients of N micro-batches of
    # batch_size / N examples (same update as one batch, less memory; Keras'
    # optimizer accumulation). steps_per_epoch, min_steps and the schedule
    # count updates.
    gradient_accumulation_steps: int = at_least(1, 1)
    # Embedding gradients made dense before Adam, as torch's Adam sees them
    # (Keras' squares a sparse gradient per occurrence of a token). Always so
    # under accumulation; off otherwise until the recipe's figures are re-measured.
    dense_gradients: bool = False
    # LoRA adapters (`tfbert.train.lora`): the encoder is frozen; rank-r
    # adapters on `lora_targets` of every block and the task's head train.
    # With learning_rate unset the recipe takes 10x the full fine-tuning rate.
    lora_rank: Optional[int] = at_least(1, None)
    lora_targets: list = dataclasses.field(
        default_factory=lambda: ["query", "value"],
        metadata={"check": (lambda v: bool(v) and set(v) <= set(LORA_TARGETS)
                            and len(set(v)) == len(v),  # a name twice: two adapters, one layer
                            f"a non-empty list of distinct names from {list(LORA_TARGETS)}")})
    eval_batch_size: int = at_least(1, 64)
    # None: chosen by model and data size (`tfbert.train.recipe`), printed
    # before training and stored in results.json.
    learning_rate: Optional[float] = positive(None)
    epochs: Optional[int] = at_least(1, None)
    steps_per_epoch: Optional[int] = at_least(1, None)  # default: one pass over the training file
    # With `epochs` unset: epochs are raised until training takes at least
    # this many optimizer steps (small data needs steps, not 2-3 epochs).
    # None: the task's floor (`Task.min_train_steps`: 300; question answering 600).
    min_steps: Optional[int] = at_least(1, None)
    warmup_ratio: float = in_range(0.0, 1.0, 0.1)  # share of the steps spent warming up
    weight_decay: float = at_least(0.0, 0.01)
    optimizer_type: str = one_of(("adamw", "lamb"), "adamw")
    clipnorm: float = positive(1.0)
    # Keras' Adam adds epsilon before its bias correction: 1e-8 here behaves
    # like torch's AdamW at 1e-8 after the first steps (BERT's 1e-6 shrank
    # early updates by ~42% at step 1 and ~12% at step 110).
    adam_epsilon: float = positive(1e-8)
    # Which data chooses the best epoch (never the dev file, which is reported):
    # `validation_file`, or else `validation_fraction` of the training file held
    # out (0: no selection, the last epoch is kept).
    validation_file: str = ""
    validation_fraction: float = in_range(0.0, 0.5, 0.1)
    seed: int = 42
    jit_compile: bool = True
    # Mixed precision: compute in half precision, keep float32 variables and
    # float32 outputs ("" = the Keras global policy, usually float32).
    dtype_policy: str = one_of(DTYPE_POLICIES, "")
    tensorboard: bool = True
    verbose: int = in_range(0, 2, 2)

    def __post_init__(self):
        validate(self)
        if self.batch_size is not None:
            self.micro_batch_size  # noqa: B018  (raises when N does not divide the batch)

    @property
    def micro_batch_size(self):
        """Examples per forward pass: `batch_size / gradient_accumulation_steps`.

        >>> TrainConfig(batch_size=32, gradient_accumulation_steps=4).micro_batch_size
        8
        >>> TrainConfig(batch_size=32, gradient_accumulation_steps=3)
        Traceback (most recent call last):
        ValueError: TrainConfig.gradient_accumulation_steps: 3 does not divide batch_size 32 (the effective batch; each micro-batch must be batch_size / gradient_accumulation_steps examples).
        """
        n = self.gradient_accumulation_steps
        if self.batch_size is None or self.batch_size % n:
            raise ValueError(
                f"TrainConfig.gradient_accumulation_steps: {n} does not divide batch_size "
                f"{self.batch_size} (the effective batch; each micro-batch must be "
                "batch_size / gradient_accumulation_steps examples).")
        return self.batch_size // n
