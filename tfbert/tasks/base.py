"""`Task`: the one contract every fine-tuning task implements.

A task is one class in `tfbert/tasks/<name>.py` with its own config
dataclass (the `task:` section of a finetune YAML). It reads its data, builds
a `tf.data` pipeline with tokenization in the graph, builds the model, says
how it trains, scores a dev file with the task's official metric, predicts
from raw strings and exports an end-to-end SavedModel. `tfbert.tasks.runner.
finetune` drives any task; `tools/finetune.py --task=NAME` finds it in
`tfbert.tasks.TASKS` and knows nothing else about it.

What a subclass provides (`NotImplementedError` below says which):

    name, config_class, text_inputs      class attributes
    prepare(preprocessor)                label lists etc. from the training file
    dataset(path, batch_size, training)  (inputs, targets[, weights]) batches
    num_examples(path)                   training examples (or windows) per epoch
    build_model(encoder)                 the inference model (used for eval/export)
    loss(), metrics()                    for the default `build_trainable`
    eval_data(path, batch_size)          (inputs, reference) for `score`
    score(predictions, reference)        dict of metrics; `main_metric` picks one
    predict(model, ...)                  NumPy/Python results from raw strings
    export(model, export_dir, jit_compile=False)
                                         SavedModel (`tfbert.export.task_model`); the
                                         model call through `tfbert.export.compiled_call`

The training loop is the trainer's (`tfbert.train.trainer.fit_task`: the
BERT recipe, LoRA, the best validation epoch kept, resume after SIGTERM);
a task does not rewrite it to change its data or its head. Hooks with
defaults:

    build_trainable(model, optimizer, train)
                        compile with `loss()`/`metrics()`; override when the
                        model computes its own loss (in-batch negatives,
                        distillation)
    begin_training(train, validation)
                        before the loop reads data (e.g. batch widths)
    end_training(model, model_dir)
                        after it, best weights loaded (e.g. save a checkpoint)
    evaluate(model, dev)    predict, then `score`
    write_predictions(model, dev, out_dir)
                        files next to `results.json`
    summary()           facts shown before training
    fit(encoder, train, model_dir, strategy, dev, validation)
                        calls the trainer; override only for another training
                        scheme (a head on cached features, nothing to train)

Example (a new task needs only the abstract methods; the rest say which is missing):
>>> class EchoTask(Task):
...     name = "echo"
>>> EchoTask().dataset("train.tsv", batch_size=8)
Traceback (most recent call last):
NotImplementedError: EchoTask.dataset
"""


import os

from tfbert.config_loader import check_int
from tfbert.train.evaluation import best_epoch
from tfbert.train.recipe import DEFAULT_MIN_STEPS
from tfbert.train.trainer import fit_task


class Task:
    """Base class of the fine-tuning tasks (see the module docstring)."""

    name = ""  # the --task name
    config_class = None  # dataclass of the task's settings
    text_inputs = ("text",)  # string inputs of the exported `serving_default`
    main_metric = None  # the metric that picks the best epoch (on validation data)
    # The recipe's step floor when `train.min_steps` is unset (`tfbert.train.recipe`).
    min_train_steps = DEFAULT_MIN_STEPS
    # Training batches: the last partial batch of an epoch is kept, except
    # under a multi-replica strategy (the trainer sets this), where replicas need equal shares.
    drop_remainder = False

    @classmethod
    def from_config(cls, config=None):
        """The task for `config` (a dict or `config_class`): this class, unless
        the config names a variant of it (`ClassificationTask`: multi-label)."""
        return cls(config)

    def __init__(self, config=None):
        if self.config_class is not None:
            if config is None:
                config = self.config_class()
            elif isinstance(config, dict):
                from tfbert.config_loader import from_dict

                config = from_dict(self.config_class, config, source=f"task {self.name}")
            elif not isinstance(config, self.config_class):
                raise TypeError(f"{type(self).__name__} takes a {self.config_class.__name__} "
                                f"or a dict, got {type(config).__name__}.")
        self.config = config
        self.preprocessor = None

    # === Data ===

    def prepare(self, preprocessor):
        """Sets the preprocessor (and reads what the task needs from the training file)."""
        self.preprocessor = preprocessor
        return self

    def dataset(self, path, batch_size, training=False, seed=0):
        raise NotImplementedError(f"{type(self).__name__}.dataset")

    def num_examples(self, path):
        raise NotImplementedError(f"{type(self).__name__}.num_examples")

    def split_validation(self, path, out_dir, fraction, seed):
        """Writes a held-out slice of the training file `path` and the rest as
        two files in `out_dir` (`tfbert.data.validation_split`); returns their
        paths `(train, validation)`. None: this task cannot hold data out."""
        return None

    def summary(self):
        """Facts printed before training (`tools/finetune.py`); extend in subclasses."""
        return {"task": self.name}

    # === Model and training ===

    def build_model(self, encoder):
        raise NotImplementedError(f"{type(self).__name__}.build_model")

    def loss(self):
        raise NotImplementedError(f"{type(self).__name__}.loss")

    def metrics(self):
        return []

    def build_trainable(self, model, optimizer, train):
        """The compiled Keras model that `fit` trains. Default: `model` itself,
        compiled with `loss()` and `metrics()`. Override when training needs
        a wrapper that computes its own loss (its weights must include
        `model`'s, so the best weights and the export follow)."""
        model.compile(optimizer=optimizer, loss=self.loss(), weighted_metrics=self.metrics(),
                      jit_compile=train.jit_compile)
        return model

    def begin_training(self, train, validation):
        """Called by the trainer before it reads any data: set what training
        changes in `dataset` (e.g. batch widths). `train`: the `TrainConfig`;
        `validation`: the file that chooses the epoch, or None."""

    def end_training(self, model, model_dir):
        """Called by the trainer after the last epoch, the best weights
        loaded: undo `begin_training`, or write more files to `model_dir`."""

    def fit(self, encoder, train, model_dir, strategy, dev, validation=None):
        """`(model, scores per epoch)`: the loop of `tfbert.train.trainer.fit_task`.
        Override only for another training scheme (a head on cached
        features, nothing to train); to change data or save files, use the
        hooks `begin_training` / `end_training`."""
        return fit_task(self, encoder, train, model_dir, strategy, dev, validation)

    def validation_loss(self, trainable, batches):
        """The training loss on validation batches (it breaks ties between
        epochs of equal validation score)."""
        return float(trainable.evaluate(batches, verbose=0, return_dict=True)["loss"])

    # === Evaluation ===

    def eval_data(self, path, batch_size):
        raise NotImplementedError(f"{type(self).__name__}.eval_data")

    def require_dev_file(self, path):
        """`path`, or one line naming the unset key (each epoch is scored on it)."""
        if not path:
            raise ValueError(f"{self.name or type(self).__name__}: task.dev_file is not set; "
                             "each epoch is scored on it (dev_file: in the YAML's task "
                             "section, or --set task.dev_file=PATH).")
        return path

    def score(self, predictions, reference):
        raise NotImplementedError(f"{type(self).__name__}.score")

    def check_dev(self, dev):
        """`dev`, or one line when it is not what `eval_data` returns: a path
        (or None) given to `evaluate` would otherwise be unpacked as a tuple."""
        if dev is None or isinstance(dev, (str, bytes, os.PathLike)):
            raise TypeError(f"{type(self).__name__}.evaluate takes dev = "
                            f"task.eval_data(path, batch_size), not {dev!r:.60}; read the "
                            "file with eval_data first.")
        return dev

    @staticmethod
    def check_batch_size(batch_size):
        """`batch_size` as an int >= 1 (a zero would reach `tf.data` or `range`)."""
        return check_int(batch_size, "batch_size", 1)

    def evaluate(self, model, dev):
        """Scores `model` on `dev = eval_data(...)`: predict, then `score`."""
        inputs, reference = self.check_dev(dev)
        return self.score(model.predict(inputs, verbose=0), reference)

    def best_epoch(self, scores):
        """Index of the best epoch in `scores` (0 for a task without a metric)."""
        return best_epoch(scores, self.main_metric) if self.main_metric else 0

    def write_predictions(self, model, dev, out_dir):
        """Writes dev predictions next to `results.json` (e.g. SQuAD's
        `predictions.json`); returns the paths written. Default: none."""
        return []

    # === Raw strings: prediction and export ===

    def predict(self, model, *texts, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.predict")

    def export(self, model, export_dir, jit_compile=False):
        """Writes the end-to-end SavedModel (`serving_default` from strings,
        `serving_ids` from the three int32 tensors); returns `export_dir`.
        `jit_compile=True` (opt-in): both signatures run the model through
        `tfbert.export.compiled_call(model, True)`, one XLA program per
        bucketed shape (lower latency at small batches; the first request of
        each shape compiles; stock TF Serving runs it only with
        `--xla_cpu_compilation_enabled=true`). Default: the plain graph."""
        raise NotImplementedError(f"{type(self).__name__}.export")
