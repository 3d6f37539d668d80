"""Fine-tuning tasks: one class per file, one contract (`tfbert.tasks.base.Task`).

`TASKS` maps each `--task` name to its class; it is built here, from the
imports below, and nowhere else (no registration by import side effect).
`tfbert.tasks.runner.finetune` trains any of them.

Example:
>>> sorted(TASKS)[:3]
['classification', 'cross_encoder', 'distillation']
>>> get_task("regression").config_class.__name__
'ClassificationConfig'
"""

from tfbert.tasks.base import Task
from tfbert.tasks.classification import ClassificationTask, RegressionTask
from tfbert.tasks.cross_encoder import CrossEncoderTask
from tfbert.tasks.distillation import DistillationTask
from tfbert.tasks.feature_extraction import FeatureExtractionTask
from tfbert.tasks.frozen_classification import FrozenClassificationTask
from tfbert.tasks.question_answering import QuestionAnsweringTask
from tfbert.tasks.sentence_embedding import SentenceEmbeddingTask
from tfbert.tasks.tagging import TaggingTask

TASKS = {task.name: task for task in (
    ClassificationTask,
    RegressionTask,
    TaggingTask,
    FrozenClassificationTask,
    FeatureExtractionTask,
    QuestionAnsweringTask,
    SentenceEmbeddingTask,
    CrossEncoderTask,
    DistillationTask,
)}


def get_task(name):
    """The task class registered as `name`; unknown names list the known ones."""
    if name not in TASKS:
        raise ValueError(f"Unknown task {name!r}; known tasks: {', '.join(sorted(TASKS))}.")
    return TASKS[name]


__all__ = ["TASKS", "Task", "get_task"]
