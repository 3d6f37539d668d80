"""Fine-tuning tasks, one file each, with the same small interface.

A task object (e.g. `ClassificationTask(config)`) knows how to:

- `prepare(preprocessor)`: read the training file, fix the label list;
- `dataset(path, batch_size, training)`: a `tf.data` pipeline of
  `(inputs, targets[, sample_weights])` with tokenization in the graph;
- `build_model(encoder)`: the Keras model (encoder + head);
- `loss()`, `metrics()`: what `model.compile` takes;
- `eval_data(path, batch_size)` and `score(predictions, reference)`: the
  task metric on a dev file (GLUE scores, seqeval F1), `main_metric` names
  the one used to keep the best checkpoint;
- `predict(model, texts, ...)`: Python results from raw strings;
- `export(model, export_dir)`: the end-to-end SavedModel
  (`tfbert.export.task_model`).

`tfbert.tasks.runner.finetune` trains any of them; `tools/finetune.py` picks
one from a plain dict.
"""
