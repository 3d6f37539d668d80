"""The fine-tuning recipe when the config leaves it open: chosen by model
size and data size, printed before training and stored in `results.json`.

The BERT paper's recipe (lr 2e-5..5e-5, batch 32, 2-4 epochs) is for
BERT-base and large on thousands of examples. On a few hundred it gives a
handful of optimizer steps, and the result swings with the seed: a QA model
trained on 720 questions with the paper's SQuAD settings (44 steps) answered
"" to every question on every seed (docs/quality.md). The stability studies found
the cure is optimizer steps, not epochs: bias-corrected Adam, warmup, and
enough updates on small data (Mosbach et al. 2021, "On the Stability of
Fine-tuning BERT"; Zhang et al. 2021, "Revisiting Few-sample BERT
Fine-tuning"). So:

- learning rate by hidden size: <= 256: 1e-3; <= 512: 1e-4; <= 768: 5e-5;
  larger: 3e-5 (measured here: a `tiny` model needs ~1e-3, MiniLM 1e-4);
- batch size 16 below `LARGE_DATA` examples (twice the updates per epoch),
  32 above;
- epochs: 3, raised until training takes at least `train.min_steps`
  optimizer steps (small data gets more passes), at most `MAX_AUTO_EPOCHS`.
  Unset, the floor is the task's: `DEFAULT_MIN_STEPS` (300), and 600 for
  question answering, where a span over hundreds of positions learns slower
  than a label: at 300 steps one SQuAD seed in five ended 10 F1 under the
  others, still rising (docs/quality.md).

The epoch kept is chosen on held-out validation data (`TrainConfig`), so
more epochs than needed cost time, not quality. Values set in the config
(YAML, `--set`, Python) are always kept.

Example:
>>> from tfbert import BertConfig
>>> train, notes = resolve(TrainConfig(), 700, BertConfig.from_preset("tiny"))
>>> train.learning_rate, train.batch_size, train.epochs
(0.001, 16, 7)
>>> notes["epochs"]
'7 (auto: 700 examples, at least 300 steps)'
"""

import dataclasses
import math

from tfbert.data.batching import steps_per_epoch
from tfbert.train.train_config import TrainConfig

MAX_AUTO_EPOCHS = 20
DEFAULT_MIN_STEPS = 300  # optimizer steps, unless the task or `train.min_steps` says otherwise
# Extractive QA's floor: at 300 steps one SQuAD seed in five was still rising
# when the learning rate reached 0 (docs/quality.md).
QUESTION_ANSWERING_MIN_STEPS = 600
LARGE_DATA = 10_000  # examples (or QA windows) from which batch 32 is the default
# LoRA (`train.lora_rank`): adapters start at zero and only they and the head
# move, so they take a larger rate. The LoRA paper's RoBERTa-base GLUE runs
# used 4e-4..5e-4 (Hu et al. 2021,
# table 9, against RoBERTa's own 1e-5..3e-5: 10-50x). 10x is the low end of that range.
LORA_LEARNING_RATE_FACTOR = 10


def auto_learning_rate(hidden_size):
    for limit, rate in ((256, 1e-3), (512, 1e-4), (768, 5e-5)):
        if hidden_size <= limit:
            return rate
    return 3e-5


def resolve(train, num_examples, encoder_config, min_steps=DEFAULT_MIN_STEPS):
    """`(TrainConfig with learning_rate, batch_size and epochs set, {field: how it was chosen})`.

    `min_steps`: the task's step floor, used when `train.min_steps` is unset."""
    notes = {}
    learning_rate, batch_size, epochs = train.learning_rate, train.batch_size, train.epochs
    if learning_rate is None and train.lora_rank:
        full = auto_learning_rate(encoder_config.hidden_size)
        learning_rate = LORA_LEARNING_RATE_FACTOR * full
        notes["learning_rate"] = (f"{learning_rate:g} (auto LoRA: {LORA_LEARNING_RATE_FACTOR}x "
                                  f"the full fine-tuning rate {full:g} for hidden size "
                                  f"{encoder_config.hidden_size})")
    elif learning_rate is None:
        learning_rate = auto_learning_rate(encoder_config.hidden_size)
        notes["learning_rate"] = (f"{learning_rate:g} (auto: hidden size "
                                  f"{encoder_config.hidden_size})")
    else:
        notes["learning_rate"] = f"{learning_rate:g} (config)"
    if batch_size is None:
        batch_size = 16 if num_examples < LARGE_DATA else 32
        notes["batch_size"] = f"{batch_size} (auto: {num_examples} examples)"
    else:
        notes["batch_size"] = f"{batch_size} (config)"
    if epochs is None:
        floor = train.min_steps or min_steps
        steps = train.steps_per_epoch or steps_per_epoch(num_examples, batch_size)
        epochs = min(MAX_AUTO_EPOCHS, max(3, math.ceil(floor / steps)))
        notes["epochs"] = f"{epochs} (auto: {num_examples} examples, at least {floor} steps)"
    else:
        notes["epochs"] = f"{epochs} (config)"
    train = dataclasses.replace(train, learning_rate=learning_rate, batch_size=batch_size,
                                epochs=epochs)
    return train, notes
