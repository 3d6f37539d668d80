"""`fit_task`: the one training loop of the fine-tuning tasks.

The trainer owns the loop; a task (`tfbert.tasks.base.Task`) owns its data
and its model. For one task the trainer counts the steps, builds the model
and the optimizer (AdamW with warmup and decay, `tfbert.train.optimizer`)
under the strategy, adds LoRA adapters when `train.lora_rank` is set, asks
the task for its compiled training model (`task.build_trainable`) and runs
`tfbert.train.evaluation.fit_keeping_best`: after every epoch the validation
file (it chooses the epoch) and the dev data (reported) are scored, the best
epoch's weights are kept and loaded, and a run stopped by SIGTERM resumes at
the step it reached. A task changes its data or saves more files through its
two hooks, `begin_training(train, validation)` and `end_training(model,
model_dir)`, never by rewriting the loop.

This module names no task: it calls the task's methods (`num_examples`,
`dataset`, `build_model`, `build_trainable`, `evaluate`, `eval_data`,
`validation_loss`, `main_metric`), so the layers stay one-way.
"""

from tfbert.data.batching import steps_per_epoch, with_known_length
from tfbert.train.evaluation import VALIDATION, fit_keeping_best
from tfbert.train.multi_worker import with_auto_shard
from tfbert.train.optimizer import optimizer_for


def fit_task(task, encoder, train, model_dir, strategy, dev, validation=None):
    """Trains `task` on `task.config.train_file`, scoring `validation` (a
    file path: it chooses the epoch) and `dev` (`task.eval_data` of the dev
    file: reported) after every epoch; returns `(model, scores per epoch)`
    with the best epoch's weights loaded. Each epoch's scores hold the dev
    metrics and, with `validation`, `validation_<metric>` and `validation_loss`."""
    task.begin_training(train, validation)
    n = task.num_examples(task.config.train_file)
    # Replicas need equal shares: the last partial batch goes under several.
    task.drop_remainder = strategy.num_replicas_in_sync > 1
    steps = train.steps_per_epoch or steps_per_epoch(n, train.batch_size, task.drop_remainder)
    total = steps * train.epochs
    # Gradient accumulation: Keras steps are micro-batches, N per update.
    accumulate = train.gradient_accumulation_steps

    def make_dataset(skip_batches):
        # Built anew for each resume: a seeded order that restarts at batch 0.
        data = task.dataset(task.config.train_file, train.micro_batch_size, training=True,
                            seed=train.seed)
        return with_auto_shard(data.skip(skip_batches) if skip_batches else data)

    with strategy.scope():
        model = task.build_model(encoder)
        if train.lora_rank:  # frozen encoder, adapters + head train
            from tfbert.train.lora import enable_lora

            enable_lora(model, train.lora_rank, train.lora_targets)
        optimizer = optimizer_for(train, total)
        trainable = task.build_trainable(model, optimizer, train)
    evaluate = lambda: task.evaluate(model, dev)
    if validation:
        validation_data = task.eval_data(validation, train.eval_batch_size)
        validation_batches = with_known_length(
            task.dataset(validation, train.eval_batch_size))

        def evaluate():
            scores = {VALIDATION + k: v for k, v in
                      task.evaluate(model, validation_data).items()}
            scores[VALIDATION + "loss"] = task.validation_loss(trainable, validation_batches)
            return {**scores, **task.evaluate(model, dev)}

    evaluation = fit_keeping_best(
        trainable, make_dataset, evaluate, task.main_metric, model_dir,
        epochs=train.epochs, steps_per_epoch=steps * accumulate, verbose=train.verbose,
        tensorboard=train.tensorboard)
    task.end_training(model, model_dir)
    return model, evaluation.scores
