"""Task distillation: a fine-tuned teacher labels the training data, a student learns from it.

The teacher is any end-to-end SavedModel that `tools/finetune.py` exports
(strings in, `logits` out): it labels the training file with soft targets
once (`teacher_logits`), so it may even use another vocabulary. The student
(any encoder: e.g. `tfbert.train.distill.init_student` layers of the teacher,
or a preset) trains with `tfbert.train.distill.TaskDistiller`: soft-target KL
at a temperature plus the task's loss on the gold labels. Dev scoring,
prediction and export are the wrapped task's own, so the student exports like
any task model.

With `augment_copies > 0` the teacher also labels a transfer set made from
the training sentences by TinyBERT-style word substitution (`augment_texts`):
words swapped for their nearest neighbours in a checkpoint's pretrained word
embeddings. With `transfer_file` the teacher also labels unlabelled text
of the task's domain (`read_transfer_file`: one text per line in a `.txt`,
or a TSV/CSV/JSONL with the task's text columns, labels not needed): the
real lever of task distillation, text that gold-only training cannot use.
Transfer rows carry soft targets only (weight 0 on the gold loss), and
the number of training steps does not change: it is counted from the
training file (epochs x examples / batch, or `steps_per_epoch`), so a
student with a transfer set takes exactly the optimizer steps of one
trained on the gold labels alone. Supported: the classification tasks (`classification`;
`regression` matches the teacher's score with MSE); other tasks are refused
with a clear error.

`DistillationTask` is a task like the others, listed in `tfbert.tasks.TASKS`
as `distillation`: its config (`DistillationTaskConfig`, the `task:` section)
is the student task's `ClassificationConfig` plus `teacher`, `distill` (the
loss weights, `tfbert.train.distill.DistillConfig`) and the transfer set, and
the trainer's loop trains it. `tfbert.runs.distill` builds one
around a student task given by name.

Example (the checks run before any teacher or data is read):
>>> DistillationTask({"train_file": "train.tsv", "teacher": "export/1", "augment_copies": 2})
Traceback (most recent call last):
ValueError: augment_copies needs augment_checkpoint: a tfbert checkpoint whose word embeddings give the substitutes.
>>> DistillationTask({"regression": True, "teacher": "export/1"}).task.name
'regression'
"""

import dataclasses
import os

import numpy as np
import tensorflow as tf

from tfbert.data import readers
from tfbert.data.batching import epoch_batches
from tfbert.config_loader import at_least, vocab_tokens
from tfbert.export.task_model import load_task_model
from tfbert.tasks.base import Task
from tfbert.tasks.classification import ClassificationConfig, ClassificationTask, RegressionTask
from tfbert.train.distill import DistillConfig, TaskDistiller

DISTILLABLE_TASKS = ("classification", "regression")


def teacher_logits(teacher_export, texts, batch_size=64):
    """The `logits` of an end-to-end task SavedModel (any `tools/finetune.py`
    export) for the string columns `texts` (`{"text": [...], "text_b": [...]}`),
    as float32 NumPy `[n, num_outputs]`."""
    serve = load_task_model(teacher_export).signatures["serving_default"]
    wanted = set(serve.structured_input_signature[1])
    if wanted != set(texts):
        raise ValueError(f"{teacher_export}: the teacher takes inputs {sorted(wanted)}, the "
                         f"student's task gives {sorted(texts)}; distil on the same task.")
    if "logits" not in serve.structured_outputs:
        raise ValueError(f"{teacher_export}: the teacher's serving_default has no 'logits' "
                         f"output (outputs {sorted(serve.structured_outputs)}).")
    n = len(next(iter(texts.values())))
    out = []
    for i in range(0, n, batch_size):
        batch = {k: tf.constant(list(v[i:i + batch_size])) for k, v in texts.items()}
        out.append(serve(**batch)["logits"].numpy())
    return np.concatenate(out).astype(np.float32)


@dataclasses.dataclass
class DistillationTaskConfig(ClassificationConfig):
    """The student's task (every `ClassificationConfig` field: its data and
    head; `regression: true` distils a regression teacher), the teacher and
    the transfer set: the `task:` section of `--task=distillation`."""

    # The teacher: an end-to-end task SavedModel (strings in, `logits` out).
    teacher: str = ""
    distill: DistillConfig = dataclasses.field(default_factory=DistillConfig)
    # A transfer set of this many augmented copies of the training sentences
    # (words swapped for neighbours in augment_checkpoint's word embeddings).
    augment_copies: int = at_least(0, 0)
    augment_checkpoint: str = ""
    augment_seed: int = 0
    # Unlabelled in-domain text the teacher labels too (`read_transfer_file`).
    transfer_file: str = ""


def student_fields(config):
    """The `ClassificationConfig` fields of `config` (the student task's settings)."""
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(ClassificationConfig)}


def student_task(config):
    """The classification or regression task of a `DistillationTaskConfig`."""
    return (RegressionTask if config.regression else ClassificationTask).from_config(
        ClassificationConfig(**student_fields(config)))


class DistillationTask(Task):
    """A classification or regression student taught by a teacher export:
    training batches carry the teacher's logits, and the trainable model adds
    the soft-target loss (see the module doc). Data reading, dev scoring,
    prediction and export are the student task's (`self.task`), called by name.

    `DistillationTask(config)`: a `DistillationTaskConfig` or dict, as `TASKS`
    builds it. `DistillationTask(task, teacher_export, distill, ...)`: a
    student task already built (what `tfbert.runs.distill` does)."""

    name = "distillation"
    config_class = DistillationTaskConfig

    def __init__(self, config=None, teacher_export=None, distill=None, augment_copies=0,
                 augment_checkpoint=None, seed=0, transfer_file=None):
        if isinstance(config, Task):
            task = config
            self._check(task, augment_copies, augment_checkpoint)
            config = DistillationTaskConfig(
                **student_fields(task.config), teacher=teacher_export or "", distill=distill or DistillConfig(),
                augment_copies=int(augment_copies), augment_checkpoint=augment_checkpoint or "",
                augment_seed=seed, transfer_file=transfer_file or "")
            super().__init__(config)
        else:
            super().__init__(config)
            task = student_task(self.config)
            self._check(task, self.config.augment_copies, self.config.augment_checkpoint)
        self.task = task
        # Read now: a bad file fails before the teacher loads or training starts.
        path = self.config.transfer_file
        self.transfer_texts = read_transfer_file(task, path) if path else None
        self._soft = {}  # path -> teacher logits

    @staticmethod
    def _check(task, augment_copies, augment_checkpoint):
        if augment_copies and not augment_checkpoint:
            raise ValueError("augment_copies needs augment_checkpoint: a tfbert checkpoint "
                             "whose word embeddings give the substitutes.")
        if augment_copies and task.pairs:
            raise ValueError("augmentation supports single-sentence tasks only.")
        if task.name not in DISTILLABLE_TASKS:
            raise ValueError(f"Task distillation supports {list(DISTILLABLE_TASKS)}, "
                             f"not {task.name!r}.")
        # The soft targets are one softmax (or score) per text, from its first window.
        if getattr(task.config, "multi_label", False):
            raise ValueError("Task distillation supports single-label classification and "
                             "regression, not multi_label: true.")
        if getattr(task, "windowed", False):
            raise ValueError("Task distillation reads each text as one window: set "
                             "long_text: truncate (not windows).")

    # === The student task's, by name ===

    @property
    def preprocessor(self):
        return self.task.preprocessor

    @preprocessor.setter
    def preprocessor(self, value):
        if value is not None:  # `Task.__init__` sets None: the student's stays
            self.task.preprocessor = value

    @property
    def distill(self):
        return self.config.distill

    @property
    def main_metric(self):
        return self.task.main_metric

    @property
    def text_inputs(self):
        return self.task.text_inputs

    @property
    def min_train_steps(self):
        return self.task.min_train_steps

    @property
    def label_list(self):
        return self.task.label_list

    def prepare(self, preprocessor):
        if not self.config.teacher:
            raise ValueError("distillation needs task.teacher: the directory of the "
                             "teacher's end-to-end task SavedModel.")
        self.task.prepare(preprocessor)
        return self

    def num_examples(self, path):
        return self.task.num_examples(path)

    def split_validation(self, path, out_dir, fraction, seed):
        return self.task.split_validation(path, out_dir, fraction, seed)

    def summary(self):
        return self.task.summary()

    def build_model(self, encoder):
        return self.task.build_model(encoder)

    def loss(self):
        return self.task.loss()

    def metrics(self):
        return self.task.metrics()

    def eval_data(self, path, batch_size):
        return self.task.eval_data(path, batch_size)

    def score(self, predictions, reference):
        return self.task.score(predictions, reference)

    def evaluate(self, model, dev):
        return self.task.evaluate(model, dev)

    def write_predictions(self, model, dev, out_dir):
        return self.task.write_predictions(model, dev, out_dir)

    def predict(self, model, *texts, **kwargs):
        return self.task.predict(model, *texts, **kwargs)

    def export(self, model, export_dir, jit_compile=False):
        return self.task.export(model, export_dir, jit_compile=jit_compile)

    # === Distillation's own: the transfer set and the loss ===

    def transfer_set(self, path):
        """`(texts, gold targets, gold weights, teacher logits)` of the training
        file plus its augmented copies and the transfer file's texts (weight 0:
        no gold label)."""
        if path not in self._soft:
            examples, targets = self.task.read(path)
            texts = self.task.text_columns(examples.text, examples.text_b)
            gold = len(targets)
            c = self.config
            if c.augment_copies:
                texts["text"] += augment_texts(texts["text"], c.augment_checkpoint,
                                               copies=c.augment_copies, seed=c.augment_seed)
            if self.transfer_texts:
                for key in texts:
                    texts[key] += self.transfer_texts[key]
            # Rows after the gold ones have no label: zero targets, weight 0.
            unlabelled = len(texts["text"]) - gold
            targets = np.concatenate([targets, np.zeros((unlabelled,) + targets.shape[1:],
                                                        targets.dtype)])
            weights = np.concatenate([np.ones(gold, np.float32),
                                      np.zeros(unlabelled, np.float32)])
            soft = teacher_logits(c.teacher, texts)
            if soft.shape[1] != self.task.num_outputs:
                raise ValueError(f"{c.teacher}: the teacher has {soft.shape[1]} "
                                 f"outputs, the task {self.task.num_outputs}; distil on the "
                                 "same labels.")
            self._soft[path] = (texts, targets, weights, soft)
        return self._soft[path]

    def dataset(self, path, batch_size, training=False, seed=0):
        """`(inputs, {"labels", "label_weights", "teacher_logits"})` batches,
        shuffled like the task's."""
        texts, targets, weights, soft = self.transfer_set(path)
        if self.task.regression:
            targets = targets[:, None]
        ds = tf.data.Dataset.from_tensor_slices(
            (texts, {"labels": targets, "label_weights": weights, "teacher_logits": soft}))
        # Random batches, not the task's length-grouped ones: the distillation
        # recipe (README) is measured on random batches.
        if training:
            ds = epoch_batches(ds, len(targets), batch_size, seed, self.drop_remainder)
        else:
            ds = ds.batch(batch_size)
        ds = ds.map(lambda t, y: (self.task.encode(t), y), num_parallel_calls=tf.data.AUTOTUNE)
        return ds.prefetch(tf.data.AUTOTUNE)

    def build_trainable(self, model, optimizer, train):
        trainable = TaskDistiller(model, self.task.loss(), self.distill,
                                  regression=self.task.regression)
        trainable.compile(optimizer=optimizer, jit_compile=train.jit_compile)
        return trainable


def read_transfer_file(task, path):
    """The texts of an unlabelled transfer file, `{"text": [...]}` (+ `text_b`
    for sentence pairs): a `.txt` holds one text per line (`text<TAB>text_b`
    for pairs); any other file is read like the task's training file (its
    format, header and text columns), and a label column, if any, is ignored.
    Errors name the file (and line) in one line."""
    c = task.config
    try:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"file not found: {path}")
        if os.path.splitext(path)[1].lower() == ".txt" and not task.pairs:
            return {"text": _nonblank_lines(path)}  # a tab is part of the text here
        if os.path.splitext(path)[1].lower() == ".txt":
            examples = readers.read_labeled_text(path, 0, text_b_column=1, format="tsv",
                                                 header=False)
        else:
            examples = readers.read_labeled_text(path, c.text_column,
                                                 text_b_column=c.text_b_column, format=c.format,
                                                 header=c.header)
    except (ValueError, FileNotFoundError) as e:
        raise type(e)(f"transfer_file: {e}") from None
    return task.text_columns(examples.text, examples.text_b)


def _nonblank_lines(path):
    try:
        with open(path, encoding="utf-8-sig") as f:
            lines = [line.strip() for line in f]
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e.reason}).") from None
    if not lines:
        raise ValueError(f"{path}: the file is empty.")
    texts = [line for line in lines if line]
    if not texts:
        raise ValueError(f"{path}: no examples (only blank lines).")
    return texts


def augment_texts(texts, checkpoint_dir, copies=4, rate=0.4, top_k=8, seed=0):
    """`copies` variants of each text with words (whitespace-separated, found
    whole in the vocabulary) replaced, each with probability `rate`, by one of
    their `top_k` nearest neighbours (cosine) in the checkpoint's word
    embeddings: TinyBERT's augmentation, with embedding neighbours instead of
    GloVe. Deterministic for a seed."""
    from tfbert import checkpoint

    ckpt = checkpoint.read_checkpoint(checkpoint_dir)
    table = ckpt.encoder_weights()["embeddings/word_embeddings/embeddings"]
    vocab = vocab_tokens(ckpt.vocab_file)
    index = {t: i for i, t in enumerate(vocab)}
    # Candidate substitutes: whole alphabetic words, not pieces or [SPECIAL] tokens.
    candidates = np.array([i for i, t in enumerate(vocab) if t.isalpha() and len(t) > 2])
    unit = table[candidates] / np.linalg.norm(table[candidates], axis=1, keepdims=True)

    def key(word):
        return word.lower() if ckpt.lower_case else word

    words = sorted({key(w) for t in texts for w in t.split() if key(w) in index
                    and key(w).isalpha() and len(key(w)) > 2})
    neighbours = {}
    if words:
        query = table[[index[w] for w in words]]
        query = query / np.linalg.norm(query, axis=1, keepdims=True)
        best = np.argsort(-(query @ unit.T), axis=1)[:, 1:top_k + 1]  # [0] is the word itself
        neighbours = {w: [vocab[candidates[j]] for j in row] for w, row in zip(words, best)}
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(copies):
        for text in texts:
            out.append(" ".join(
                neighbours[key(w)][rng.integers(len(neighbours[key(w)]))]
                if key(w) in neighbours and rng.random() < rate else w
                for w in text.split()))
    return out
