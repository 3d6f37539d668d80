"""The trainer's loop (`tfbert.train.trainer.fit_task`, through `Task.fit`): gradient accumulation."""

import os

import numpy as np

from tfbert import BertConfig
from tfbert.tasks.classification import ClassificationTask
from tfbert.tasks.runner import finetune
from tfbert.train.train_config import TrainConfig


def test_gradient_accumulation_trains_like_the_full_batch(tmp_path, data_dir):
    """`train.gradient_accumulation_steps=4` with batch_size 8: 3 updates of 4
    micro-batches of 2 reach the weights of 3 batches of 8 (dropout off, one
    width per batch: bucketing off), through `finetune`."""
    task_config = {"train_file": os.path.join(data_dir, "sentiment_train.tsv"),
                   "dev_file": os.path.join(data_dir, "sentiment_dev.tsv"),
                   "seq_length": 16, "bucketing": False, "dropout": 0.0}
    encoder = BertConfig.from_preset("tiny", vocab_size=1931, dropout_rate=0.0,
                                     attention_dropout_rate=0.0)
    runs = {}
    for n in (1, 4):
        train = TrainConfig(epochs=1, steps_per_epoch=3, batch_size=8, seed=1,
                            gradient_accumulation_steps=n, dense_gradients=True,
                            validation_fraction=0.0,
                            jit_compile=False, tensorboard=False, verbose=0)
        runs[n] = finetune(ClassificationTask(task_config), train, str(tmp_path / str(n)),
                           encoder_config=encoder, vocab_file="tests/data/pretraining/vocab.txt")
    assert runs[4].summary["micro_batch_size"] == "2 (8 per update = 4 accumulated micro-batches)"
    assert runs[4].summary["total_steps"] == runs[1].summary["total_steps"] == 3
    assert int(runs[4].model.optimizer.iterations.numpy()) == 3
    for a, b in zip(runs[1].model.get_weights(), runs[4].model.get_weights()):
        np.testing.assert_allclose(a, b, atol=2e-6)
    moved = runs[1].model.get_weights()[-1]  # the head's bias moved from zero
    assert np.abs(moved).max() > 0
