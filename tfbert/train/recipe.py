"""The fine-tuning recipe when the config leaves it open: chosen by model
size and data size, printed before training and stored in `results.json`.

The BERT paper's recipe (lr 2e-5..5e-5, 2-4 epochs) is for BERT-base and
large on thousands of examples. Measured on this project (issues 15 and 19):
a `tiny` model needs a rate near 1e-3 (0.33 -> 0.64 dev accuracy on a held-out
5-class task), a MiniLM-sized one 1e-4, and ~700 examples undertrain in 3
epochs (0.63; 0.74 with 6 epochs at 1e-4, 0.77 with 10). So:

- learning rate by hidden size: <= 256: 1e-3; <= 512: 1e-4; <= 768: 5e-5;
  larger: 3e-5;
- epochs: 3, raised until training takes at least `MIN_TRAIN_STEPS` steps
  (small data gets more passes), at most 20.

Values set in the config (YAML, `--set`, Python) are always kept.

Example:
>>> from tfbert import BertConfig
>>> train, notes = resolve(TrainConfig(batch_size=32), 700, BertConfig.from_preset("tiny"))
>>> train.learning_rate, train.epochs
(0.001, 15)
>>> notes["epochs"]
'15 (auto: 700 examples, at least 300 steps)'
"""

import dataclasses
import math

from tfbert.train.train_config import TrainConfig

MIN_TRAIN_STEPS = 300
MAX_AUTO_EPOCHS = 20


def auto_learning_rate(hidden_size):
    for limit, rate in ((256, 1e-3), (512, 1e-4), (768, 5e-5)):
        if hidden_size <= limit:
            return rate
    return 3e-5


def resolve(train, num_examples, encoder_config):
    """`(TrainConfig with learning_rate and epochs set, {field: how it was chosen})`."""
    notes = {}
    learning_rate, epochs = train.learning_rate, train.epochs
    if learning_rate is None:
        learning_rate = auto_learning_rate(encoder_config.hidden_size)
        notes["learning_rate"] = (f"{learning_rate:g} (auto: hidden size "
                                  f"{encoder_config.hidden_size})")
    else:
        notes["learning_rate"] = f"{learning_rate:g} (config)"
    if epochs is None:
        steps = train.steps_per_epoch or max(1, num_examples // train.batch_size)
        epochs = min(MAX_AUTO_EPOCHS, max(3, math.ceil(MIN_TRAIN_STEPS / steps)))
        notes["epochs"] = (f"{epochs} (auto: {num_examples} examples, at least "
                           f"{MIN_TRAIN_STEPS} steps)")
    else:
        notes["epochs"] = f"{epochs} (config)"
    return dataclasses.replace(train, learning_rate=learning_rate, epochs=epochs), notes
