"""Head pruning of a fine-tuned run as `tools/prune.py` runs it, as one library call.

`prune_run(model_dir, fraction, export_dir, epochs)` reads a
`tools/finetune.py` run of the classification or regression task (its
`finetune_config.json` and the kept `best.weights.h5`), scores its dev file,
ranks the heads by importance on the dev file (`tfbert.analysis.
head_importance`: Michel et al. 2019), removes the least important
`fraction` of them (`heads_to_prune_by_importance`, all layers ranked
together; with `step`, iteratively: `heads_to_prune_iteratively`),
optionally fine-tunes the smaller model again for `epochs` on the run's
training file, scores the dev file again and exports the strings-in
SavedModel. Returns the summary `tools/prune.py` prints: `heads_before`,
`heads_after`, `dev_score_before`, `dev_score_after`, `export_dir`, ...

The importance is measured on the dev file the scores are reported on, as
Michel et al. do; with `epochs` the scores after pruning are then
optimistic only as the run's own dev scores are.
"""

import os

import numpy as np

from tfbert import atomic, config_loader
from tfbert.analysis.head_importance import head_importance
from tfbert.analysis.head_pruning import (check_fraction, count_heads,
                                          heads_to_prune_by_importance,
                                          heads_to_prune_iteratively)
from tfbert.runs.finetune import FinetuneConfig, random_init_config, task_config_of
from tfbert.tasks import get_task
from tfbert.train.evaluation import BEST_WEIGHTS

TASKS = ("classification", "regression")  # a [CLS] head: the gated encoder feeds it


def load_run(model_dir):
    """`(task, model, dev)` of a finished `tools/finetune.py` run: its task
    prepared, its model with the kept weights, `task.eval_data(dev_file)`."""
    from tfbert.tasks.runner import build_encoder_and_preprocessor  # tasks: imported late

    path = os.path.join(model_dir, "finetune_config.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} not found: --model_dir must be a tools/finetune.py run.")
    stored = config_loader.read_json_object(path, "--model_dir's finetune_config.json")
    task_name = stored.pop("task_name", None)
    if task_name not in TASKS:
        raise ValueError(f"{path}: task {task_name!r}; pruning takes a run of {list(TASKS)}.")
    cfg = config_loader.from_dict(FinetuneConfig, stored, source=path, warn=False)
    task = get_task(task_name).from_config(task_config_of(task_name, cfg.task, source=path))
    c = task.config
    if c.multi_label or c.long_text != "truncate":
        raise ValueError(f"{path}: multi-label and windowed runs cannot be pruned yet.")
    if not c.dev_file:
        raise ValueError(f"{path}: the run has no task.dev_file to score the pruning on.")
    weights = os.path.join(model_dir, BEST_WEIGHTS)
    if not os.path.isfile(weights):
        raise FileNotFoundError(f"{weights} not found: the run kept no weights (did it finish?).")
    encoder, preprocessor = build_encoder_and_preprocessor(
        cfg.init_checkpoint or None, random_init_config(cfg), cfg.vocab_file or None,
        cfg.lower_case, c.seq_length)
    task.prepare(preprocessor)
    model = task.build_model(encoder)
    model.load_weights(weights)
    return task, model, task.eval_data(c.dev_file, 32)


def importance_inputs(task, model, batch_size=32):
    """`(batches, loss_of)` of `head_importance` for `model` on the task's dev
    file: the gated encoder's pooled output through the model's own head and
    the task's loss (dropout off)."""
    logits_layer, loss = model.get_layer("logits"), task.loss()

    def loss_of(outputs, targets):
        return loss(targets, logits_layer(outputs["pooled_output"]))

    return task.dataset(task.config.dev_file, batch_size), loss_of


def prune_run(model_dir, fraction, export_dir, epochs=0, step=1.0, log=print):
    """Prunes the run in `model_dir` (module doc); returns the summary.
    `step` < `fraction`: iteratively, `step` of the heads at a time, the
    importance scored again after each step (`heads_to_prune_iteratively`)."""
    from tfbert.tasks.runner import export_task

    fraction = check_fraction(fraction)
    epochs = config_loader.check_int(epochs, "epochs", 0)
    step = config_loader.check_number(step, "step", 0, 1, low_open=True)
    config_loader.check_path(model_dir, "--model_dir")
    # The export's destination, before minutes of scoring and pruning.
    atomic.check_replaceable(config_loader.check_path(export_dir, "--export_dir"))
    task, model, dev = load_run(model_dir)
    metric = task.main_metric
    before = float(task.evaluate(model, dev)[metric])
    batches, loss_of = importance_inputs(task, model)
    importance = head_importance(model.encoder, batches, loss_of)
    if step < fraction:
        heads = heads_to_prune_iteratively(model.encoder, batches, loss_of, fraction, step,
                                           importance)
    else:
        heads = heads_to_prune_by_importance(importance, fraction)
    pruned = model.prune_heads(heads)
    log(f"Pruned {sum(len(h) for h in heads.values())} of {count_heads(model)} heads: "
        f"{pruned.encoder.config.heads_per_layer}")
    pruned_score = float(task.evaluate(pruned, dev)[metric])
    if epochs:  # the recipe of a user's fit (compile() with no arguments) on the run's data
        examples, targets = task.read(task.config.train_file)
        texts = (examples.text, examples.text_b) if task.pairs else examples.text
        pruned.compile()
        pruned.fit(texts, targets, epochs=epochs, verbose=0, seed=0)
    after = float(task.evaluate(pruned, dev)[metric]) if epochs else pruned_score
    out = export_task(task, pruned, export_dir)
    config = pruned.encoder.config
    return {"main_metric": metric, "fraction": fraction, "epochs": epochs,
            "heads_before": count_heads(model), "heads_after": count_heads(pruned),
            "heads_per_layer": [config.layer_heads(i) for i in range(config.num_layers)],
            "pruned_heads": {str(k): v for k, v in heads.items()},
            "step": step, "importance": np.where(np.isnan(importance), None, importance).tolist(),
            "dev_score_before": before, "dev_score_pruned": pruned_score,
            "dev_score_after": after, "export_dir": out}
