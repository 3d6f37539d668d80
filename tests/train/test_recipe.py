"""tfbert.train.recipe: what the defaults choose by model and data size."""

import pytest

from tfbert import BertConfig
from tfbert.train.recipe import DEFAULT_MIN_STEPS, MAX_AUTO_EPOCHS, auto_learning_rate, resolve
from tfbert.train.train_config import TrainConfig

MINILM = BertConfig(vocab_size=30522, hidden_size=384, num_layers=6, num_heads=12,
                    intermediate_size=1536)


@pytest.mark.parametrize("hidden, rate", [(128, 1e-3), (256, 1e-3), (384, 1e-4), (768, 5e-5),
                                          (1024, 3e-5)])
def test_learning_rate_by_hidden_size(hidden, rate):
    assert auto_learning_rate(hidden) == rate


def test_small_data_gets_batch_16_and_epochs_for_the_step_floor():
    # 1041 QA windows at batch 16: 66 steps per epoch, 5 epochs reach 300 steps.
    train, notes = resolve(TrainConfig(), 1041, MINILM)
    assert (train.learning_rate, train.batch_size, train.epochs) == (1e-4, 16, 5)
    assert notes["epochs"] == "5 (auto: 1041 examples, at least 300 steps)"
    assert notes["batch_size"] == "16 (auto: 1041 examples)"


def test_min_steps_raises_the_epochs_up_to_the_cap():
    train, notes = resolve(TrainConfig(min_steps=600), 1041, MINILM)
    assert train.epochs == 10 and "at least 600 steps" in notes["epochs"]
    train, _ = resolve(TrainConfig(min_steps=100_000), 1041, MINILM)
    assert train.epochs == MAX_AUTO_EPOCHS


def test_the_task_floor_applies_unless_train_min_steps_is_set():
    # Question answering's floor is 600 (QuestionAnsweringTask.min_train_steps).
    train, notes = resolve(TrainConfig(), 1041, MINILM, min_steps=600)
    assert train.epochs == 10 and notes["epochs"] == "10 (auto: 1041 examples, at least 600 steps)"
    train, _ = resolve(TrainConfig(min_steps=300), 1041, MINILM, min_steps=600)
    assert train.epochs == 5  # the config's value wins over the task's


def test_question_answering_trains_twice_the_steps_of_other_tasks():
    from tfbert.tasks.classification import ClassificationTask
    from tfbert.tasks.question_answering import QuestionAnsweringTask
    from tfbert.tasks.tagging import TaggingTask

    assert QuestionAnsweringTask.min_train_steps == 600
    assert ClassificationTask.min_train_steps == TaggingTask.min_train_steps == DEFAULT_MIN_STEPS


def test_large_data_gets_batch_32_and_three_epochs():
    train, _ = resolve(TrainConfig(), 100_000, MINILM)
    assert (train.batch_size, train.epochs) == (32, 3)


def test_values_set_in_the_config_are_kept():
    train, notes = resolve(TrainConfig(learning_rate=2e-5, batch_size=8, epochs=2), 50, MINILM)
    assert (train.learning_rate, train.batch_size, train.epochs) == (2e-5, 8, 2)
    assert set(notes.values()) == {"2e-05 (config)", "8 (config)", "2 (config)"}


def test_steps_per_epoch_counts_the_kept_partial_batch():
    # 161 examples at batch 16: 11 steps per epoch (the last holds one example).
    train, _ = resolve(TrainConfig(min_steps=44), 161, MINILM)
    assert train.epochs == 4  # ceil(44 / 11), not ceil(44 / 10) = 5


def test_a_bad_min_steps_is_one_clear_error():
    with pytest.raises(ValueError, match="min_steps"):
        TrainConfig(min_steps=0)
