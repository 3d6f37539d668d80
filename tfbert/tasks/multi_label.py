"""Multi-label classification: any number of labels per text.

`--task=classification --set task.multi_label=true` (or
`ClassificationTask.from_config({"multi_label": True, ...})`) builds this task. The
label column holds a JSON list (JSONL) or labels joined by
`task.label_separator` (TSV/CSV, default ","); an empty value is an example
with no label. The label list is `task.label_list` or every label of the
training file, sorted.

The model: one sigmoid output per label on [CLS] (the classification head,
trained with binary cross-entropy). A label is predicted when its
probability is >= its threshold. The thresholds are chosen on the
validation data after every epoch (`tfbert.metrics.multi_label.
choose_thresholds`: one for all labels by micro-F1, or `threshold_mode:
per_label`), or fixed by `task.threshold`; without validation data they stay
0.5. They live in the model (a non-trainable variable `label_thresholds`):
the best epoch's weights carry the thresholds chosen with them, and
`predict` and the export use them.

Scores (`tfbert.metrics.multi_label`): `micro_f1` (the main metric),
`macro_f1`, micro precision/recall, `subset_accuracy`, and `per_label`
precision/recall/F1/support with the thresholds (in `results.json`).

Export: `serving_default(text)` returns dense tensors only, since TF
Serving's REST API (and a SavedModel signature) cannot return a ragged
tensor: `probabilities` and `label_mask` (1 = chosen) `[batch, labels]` in
label-list order, `labels` `[batch, labels]` strings with the chosen labels
first and "" after them, and `num_labels` `[batch]`. A REST client reads
`labels[i][:num_labels[i]]`. `export_tflite` writes a strings-in `.tflite`
(`tfbert.export.tflite.export_text_tflite`: tf-text's tokenizer kernels)
with `probabilities`, `label_mask` and `num_labels`; TFLite has no string
gather-and-select to build `labels`, so the client maps `label_mask` to
`label_list` (the order of the probabilities).

The behaviour is a mixin, `MultiLabelClassification`, that
`tfbert.tasks.classification.MultiLabelClassificationTask` puts before
`ClassificationTask`.

Example:
>>> from tfbert.tasks.classification import ClassificationTask
>>> task = ClassificationTask.from_config({
...     "train_file": "tests/data/finetune/topics_train.jsonl", "text_column": "text",
...     "label_column": "labels", "multi_label": True, "seq_length": 32})
>>> type(task).__name__, task.main_metric
('MultiLabelClassificationTask', 'micro_f1')
>>> from tfbert.text.preprocessor import BertPreprocessor
>>> _ = task.prepare(BertPreprocessor(vocab_file="tests/data/pretraining/vocab.txt",
...                                   seq_length=32))
>>> task.label_list
['food', 'sport', 'weather']
>>> task.read(task.config.train_file)[1][:3].tolist()
[[0.0, 1.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
"""

import csv
import io
import os

import keras
import numpy as np
import tensorflow as tf

from tfbert.atomic import write_text
from tfbert.data import readers
from tfbert.export.compiled_call import compiled_call
from tfbert.export.task_model import export_task_model
from tfbert.export.tflite import export_text_tflite
from tfbert.metrics.multi_label import choose_thresholds, multi_label_metrics, probabilities_of
from tfbert.models.text_classifier import head_loss, head_metrics, multi_label_outputs

DEFAULT_THRESHOLD = 0.5


class MultiLabelClassification:
    """The multi-label methods of `ClassificationTask` (a mixin: `super()` is
    `ClassificationTask`; see the module docstring)."""

    def __init__(self, config=None, regression=None):
        super().__init__(config, regression)
        if self.regression:
            raise ValueError("ClassificationConfig: multi_label and regression exclude each other.")
        self.main_metric = self.config.main_metric or "micro_f1"
        self.threshold_file = None  # the validation file that chooses the thresholds
        self.thresholds = None  # the model's, as NumPy (set by `evaluate`)
        self._train_targets = None  # `train_targets()`, read once

    # === Data ===

    def _read_examples(self, path):
        c = self.config
        return readers.read_labeled_text(
            path, text_column=c.text_column, label_column=c.label_column,
            text_b_column=c.text_b_column, format=c.format, header=c.header,
            label_separator=c.label_separator)

    def read(self, path):
        """`(examples, [examples, labels] 0/1 float32 targets)`."""
        examples = self._read_examples(path)
        return examples, readers.encode_multi_labels(examples, self.label_list)

    def prepare(self, preprocessor):
        """Sets the preprocessor; without a label list, takes the training file's labels."""
        self.check_lengths(preprocessor)
        self.preprocessor = preprocessor
        if self.label_list is None:
            if not self.config.train_file:
                raise ValueError("Multi-label classification needs `label_list` or a "
                                 "`train_file` to read the labels from.")
            examples = self._read_examples(self.config.train_file)
            self.label_list = sorted({label for labels in examples.label for label in labels})
        if not self.label_list:
            raise ValueError(f"{self.config.train_file}: no labels in the label column "
                             f"{self.config.label_column!r}.")
        return self

    def train_targets(self):
        """The training file's 0/1 targets, read once (the summary and the
        head's starting bias both use them)."""
        if self._train_targets is None:
            self._train_targets = self.read(self.config.train_file)[1]
        return self._train_targets

    def summary(self):
        out = super().summary()
        targets = self.train_targets()
        counts = targets.sum(0).astype(int)
        out["labels"] = (", ".join(f"{l}: {c}" for l, c in zip(self.label_list, counts))
                         + f"; none: {int((targets.sum(1) == 0).sum())}")
        out["thresholds"] = (f"fixed {self.config.threshold}" if self.config.threshold
                             else f"{self.config.threshold_mode}, chosen on validation data")
        return out

    # === Model, loss, metrics ===

    def build_model(self, encoder):
        """The classification head with one logit per label (its bias at the
        labels' log-odds in the training file), and the thresholds as a
        non-trainable variable (saved with the weights)."""
        model = super().build_model(encoder)  # a multi_label TextClassifier
        if self.config.train_file:
            # Each logit starts at its label's log-odds in the training file: with
            # sparse labels a zero bias (p = 0.5) spends the first epochs learning
            # the priors before any text is read.
            targets = self.train_targets()
            prior = (targets.sum(0) + 1) / (len(targets) + 2)  # Laplace: no 0 or 1
            model.get_layer("logits").bias.assign(np.log(prior / (1 - prior)).astype(np.float32))
        return model

    def loss(self):
        return head_loss(len(self.label_list), multi_label=True)

    def metrics(self):
        return head_metrics(len(self.label_list), multi_label=True)

    def begin_training(self, train, validation):
        """The validation file (if any) also chooses the thresholds."""
        self.threshold_file = validation if self.config.threshold is None else None

    # === Evaluation ===

    def eval_data(self, path, batch_size):
        """`(inputs, (targets, path))`: the path tells `evaluate` whether
        this data chooses the thresholds."""
        inputs, targets = super().eval_data(path, batch_size)
        return inputs, (targets, path)

    def evaluate(self, model, dev):
        """Scores `model` on `dev`; on the threshold-choosing validation data,
        chooses the thresholds first and stores them in the model."""
        _, (targets, path) = self.check_dev(dev)
        logits = self.dev_logits(model, dev)  # windows pooled per text with long_text=windows
        if path and path == self.threshold_file:
            probabilities = probabilities_of(logits)
            model.label_thresholds.assign(choose_thresholds(
                targets, probabilities, per_label=self.config.threshold_mode == "per_label"))
        self.thresholds = model.label_thresholds.numpy()
        return self.score(logits, (targets, path))

    def score(self, logits, reference):
        """Multi-label metrics of the thresholded probabilities (thresholds:
        `self.thresholds`, else the config's or 0.5); `thresholds` per label
        is part of the result."""
        targets = reference[0] if isinstance(reference, tuple) else reference
        thresholds = self.thresholds
        if thresholds is None:
            thresholds = np.full(len(self.label_list),
                                 self.config.threshold or DEFAULT_THRESHOLD, np.float32)
        probabilities = probabilities_of(logits)
        scores = multi_label_metrics(targets, probabilities >= thresholds, self.label_list)
        scores["thresholds"] = {l: round(float(t), 4) for l, t in zip(self.label_list, thresholds)}
        return scores

    def write_predictions(self, model, dev, out_dir):
        """`dev_predictions.tsv` (line, gold and predicted labels joined by
        the separator, one probability column per label) and
        `dev_per_label.tsv` (threshold, precision, recall, F1, support per
        label); each written to a temporary file and renamed into place."""
        _, (targets, _) = dev
        probabilities = probabilities_of(self.dev_logits(model, dev))
        thresholds = model.label_thresholds.numpy()
        chosen = probabilities >= thresholds
        sep = self.config.label_separator
        join = lambda row: sep.join(l for l, on in zip(self.label_list, row) if on)
        rows = [["index", "gold", "predicted"] + [f"p_{l}" for l in self.label_list]]
        for i, (gold, pred, p) in enumerate(zip(targets, chosen, probabilities)):
            rows.append([i, join(gold > 0), join(pred)] + [f"{v:.4f}" for v in p])
        scores = multi_label_metrics(targets, chosen, self.label_list)
        per_label = [["label", "threshold", "precision", "recall", "f1", "support"]]
        for label, t in zip(self.label_list, thresholds):
            s = scores["per_label"][label]
            per_label.append([label, f"{t:.2f}", f"{s['precision']:.4f}", f"{s['recall']:.4f}",
                              f"{s['f1']:.4f}", s["support"]])
        per_label.append(["micro", "", f"{scores['micro_precision']:.4f}",
                          f"{scores['micro_recall']:.4f}", f"{scores['micro_f1']:.4f}",
                          int(targets.sum())])
        paths = []
        for name, table in (("dev_predictions.tsv", rows), ("dev_per_label.tsv", per_label)):
            text = io.StringIO()
            csv.writer(text, delimiter="\t", lineterminator="\n").writerows(table)
            paths.append(os.path.join(out_dir, name))
            write_text(paths[-1], text.getvalue())
        return paths

    # === Raw strings: prediction and export ===

    def label_outputs(self, logits, thresholds):
        """Named dense outputs from logits and thresholds (graph ops; shared
        by `predict` and the export)."""
        return multi_label_outputs(logits, thresholds, self.label_list)

    def predict(self, model, text, text_b=None, batch_size=64):
        """NumPy `probabilities` and `label_mask` `[n, labels]`, and `labels`:
        one list of chosen label strings per text."""
        logits = self.predict_logits(model, self.text_columns(text, text_b), batch_size)
        out = self.label_outputs(tf.constant(logits), model.label_thresholds)
        result = {k: v.numpy() for k, v in out.items() if k != "labels"}
        result["labels"] = [[s.decode() for s in row[:n]]
                            for row, n in zip(out["labels"].numpy(), result["num_labels"])]
        return result

    def export(self, model, export_dir, jit_compile=False):
        """SavedModel: `serving_default(text[, text_b])` -> `logits`,
        `probabilities`, `label_mask`, `labels` (padded with ""), `num_labels`,
        with the model's thresholds."""
        call = compiled_call(model, jit_compile)

        def serve_ids(inputs):
            return self.label_outputs(call(inputs), model.label_thresholds)

        def serve_text(texts):
            return self.label_outputs(self.text_logits(model, texts, call=call),
                                      model.label_thresholds)

        return export_task_model(export_dir, serve_text, serve_ids, self.text_inputs,
                                 track=[model, self.preprocessor],
                                 warmup_shapes=call.shapes(self.preprocessor.seq_length))

    def export_tflite(self, model, output_path, tokenizer="fast", padding="longest",
                      quantization=None):
        """A strings-in `.tflite` (signature `serve(text)`) with
        `probabilities`, `label_mask` and `num_labels` at the model's thresholds
        (and `input_word_ids`); returns `output_path`."""
        return export_text_tflite(self.preprocessor, _Decisions(model, name="decisions"),
                                  output_path,
                                  output_names=["probabilities", "label_mask", "num_labels"],
                                  quantization=quantization, tokenizer=tokenizer,
                                  padding=padding)


class _Decisions(keras.layers.Layer):
    """A multi-label model's logits turned into its decisions (TFLite builtins only)."""

    def __init__(self, model, **kwargs):
        super().__init__(**kwargs)
        self.model = model
        self.built = True  # its only weights are the (built) model's

    def call(self, inputs, training=False):
        probabilities = keras.ops.sigmoid(self.model(inputs, training=training))
        mask = keras.ops.where(probabilities >= self.model.label_thresholds, 1, 0)
        return {"probabilities": probabilities, "label_mask": mask,
                "num_labels": keras.ops.sum(mask, axis=-1)}
