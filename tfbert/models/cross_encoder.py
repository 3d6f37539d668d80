"""`CrossEncoder`: scores (query, passage) pairs read together; reranks search hits.

A strings-in Keras model: a `TextClassifier` with one output that always reads
pairs, packed as `[CLS] query [SEP] passage [SEP]` (each batch padded to a
bucket of its longest pair), with the surface of sentence-transformers'
`CrossEncoder`:

- `predict(pairs)` gives one score per pair, NumPy `[n]`: the sigmoid of the
  logit, as sentence-transformers gives for a one-label model
  (`activation=None`: the logits). This is not Keras' `Model.predict` (`[n, 1]`
  logits): what a cross-encoder's callers (`rank`, `tfbert.retrieval.rerank`,
  code written for sentence-transformers) read is the score. `verbose` (default
  0) and Keras' other `predict` arguments pass through.
- `rank(query, passages, top_k)` gives `[{"corpus_id": int, "score": float}, ...]`,
  best first.
- `fit(x, y)` and `evaluate(x, y)` take the relevance of each pair as `y` (1
  relevant, 0 not, or a fraction in [0, 1]). `compile()` with no arguments is
  binary cross-entropy on the logit, accuracy at logit 0 and the fine-tuning
  recipe (`tfbert.models.strings_model`): the pointwise loss of
  `tools/finetune.py --task=cross_encoder`, which trains this same class.

`x` everywhere: a list of `(query, passage)` pairs, a tuple of two text columns
`(queries, passages)` (lists, NumPy arrays, pandas Series), a NumPy string
array `[n, 2]`, a pandas DataFrame (its `query` and `passage` columns, else
its two columns), or a `tf.data.Dataset` of `(query, passage)` (for `fit`:
`((query, passage), label)`). A tuple of two is read as two columns, a list
as a list of pairs.

The head reads [CLS]'s pooler (`pooling="cls"`, as transformers'
`BertForSequenceClassification`), or the mean or max of the token states.

Ways out: `save("m.keras")` / `keras.models.load_model` (the vocabulary travels
in the config); `save_pretrained(dir)`: a tfbert checkpoint that
`from_pretrained` reads; `export(dir)`: the strings-in SavedModel,
`serving_default(query, passage)` -> `logits`, `score` (`[batch]`).
`from_pretrained(dir)` reads a checkpoint with a one-output `classifier` head:
one converted from a Hugging Face `BertForSequenceClassification`
(`tfbert.convert.from_huggingface`), one `save_pretrained` wrote, or the
`model_dir` of `tools/finetune.py --task=cross_encoder` (its `cross_encoder/`).
Code written for the old wrapper's `.model` (the Keras model inside) uses the
`CrossEncoder` itself: it is that model now.

Example (a random tiny encoder; `from_pretrained(dir)` for real weights):
>>> model = CrossEncoder.from_preset("tiny", vocab_file="tests/data/pretraining/vocab.txt",
...                                  seq_length=32)
>>> model.compile()
>>> pairs = [("open a file", "Open the file."), ("open a file", "Sort it.")]
>>> history = model.fit(pairs, [1, 0], epochs=1, verbose=0)
>>> model.predict(pairs).shape
(2,)
>>> hits = model.rank("open a file", ["Open the file.", "Sort it.", "Join the paths."], top_k=2)
>>> [sorted(h) for h in hits]
[['corpus_id', 'score'], ['corpus_id', 'score']]
"""

import numbers
import os

import keras
import numpy as np
import tensorflow as tf

from tfbert import checkpoint
from tfbert.config_loader import check_bool, check_int
from tfbert.models.classifier import BertClassifier
from tfbert.models.text_classifier import TextClassifier
from tfbert.models.text_data import holds_ids, is_pair, text_columns
from tfbert.text.packer import trim_to_bucket
from tfbert.text.preprocessor import BertPreprocessor
from tfbert.text.raw_texts import check_text

ACTIVATIONS = ("sigmoid", None)
DEFAULT_SEQ_LENGTH = 512  # sentence-transformers' default: the tokenizer's model_max_length
LABELS_HINT = "labels are relevances in [0, 1] (1 relevant, 0 not)"


def pointwise_loss():
    """Binary cross-entropy on the logit: `compile()`'s loss and the task's pointwise one."""
    return keras.losses.BinaryCrossentropy(from_logits=True)


def pointwise_metrics():
    return [keras.metrics.BinaryAccuracy(name="accuracy", threshold=0.0)]


def cross_encoder_outputs(logits):
    """`logits` `[batch]` and `score` = sigmoid(logits) of a one-output head's
    `[batch, 1]` logits (graph ops: the export and the task's predict)."""
    logits = logits[:, 0]
    return {"logits": logits, "score": tf.sigmoid(logits)}


@keras.saving.register_keras_serializable(package="tfbert")
class CrossEncoder(TextClassifier):
    """One score per (query, passage) pair, from raw strings (see module doc).

    Args:
        encoder: a `BertEncoder` (pretrained or fresh).
        preprocessor: the `BertPreprocessor` (vocabulary; `seq_length`: longer
            pairs are trimmed, the longer text first).
        dropout: as `BertClassifier`.
        pooling: as `BertClassifier`.
        initializer_range: as `BertClassifier`.
        activation: what `predict` and `rank` give: "sigmoid" (default) or
            None (the logits).
    """

    settings_section = "cross_encoder"  # save_pretrained: config.json section

    def __init__(self, encoder, preprocessor, dropout=0.1, pooling="cls",
                 initializer_range=None, activation="sigmoid", **kwargs):
        # === Checks ===
        if isinstance(encoder, BertClassifier):  # the old CrossEncoder(model, preprocessor)
            raise TypeError("CrossEncoder takes a BertEncoder, not a BertClassifier: "
                            "CrossEncoder(encoder, preprocessor, pooling=...), or "
                            "CrossEncoder.from_pretrained(dir) for a trained head.")
        check_activation(activation)
        if kwargs.get("long_text", "truncate") != "truncate":
            raise ValueError("CrossEncoder reads a pair as one window (the passage cut at "
                             "seq_length); long_text='windows' is TextClassifier's.")
        kwargs.setdefault("name", "cross_encoder")
        super().__init__(encoder, preprocessor, num_classes=1, pairs=True, dropout=dropout,
                         pooling=pooling, initializer_range=initializer_range, **kwargs)
        # === Config ===
        self.activation = activation

    # === Constructors ===

    @classmethod
    def from_encoder(cls, encoder, preprocessor, dropout=0.1, pooling="cls", **kwargs):
        """A fresh (untrained) head on `encoder`: the constructor, by the name
        sentence-transformers users look for."""
        return cls(encoder, preprocessor, dropout=dropout, pooling=pooling, **kwargs)

    @classmethod
    def from_pretrained(cls, path, seq_length=None, **kwargs):
        """Loads a tfbert checkpoint with a one-output `classifier` head, or a
        `tools/finetune.py --task=cross_encoder` model_dir. `seq_length`
        (default: the checkpoint's, else 512) is capped at the position table.
        `kwargs` go to the constructor (its `pooling` defaults to the checkpoint's)."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"from_pretrained takes a checkpoint directory, got "
                            f"{type(path).__name__}.")
        seq_length = check_int(seq_length, "seq_length", 2, allow_none=True)
        path = os.fspath(path)
        trained = os.path.join(path, "cross_encoder")
        if not os.path.isfile(os.path.join(path, checkpoint.CONFIG_FILE)) and os.path.isdir(trained):
            path = trained
        ckpt = checkpoint.read_checkpoint(path)
        head = ckpt.prefixed_weights("classifier")
        if not head:
            raise ValueError(f"{ckpt.weights_path} has no classifier head (classifier/kernel, "
                             "classifier/bias): it is not a cross-encoder. Convert a "
                             "BertForSequenceClassification model, train one with "
                             "tools/finetune.py --task=cross_encoder, or start a fresh head "
                             "with CrossEncoder(BertEncoder.from_pretrained(dir), preprocessor).")
        kernel = head.get("kernel")
        if kernel is None or kernel.ndim != 2 or kernel.shape[1] != 1:
            raise ValueError(f"{ckpt.weights_path}: the classifier head has "
                             f"{'no kernel' if kernel is None else f'{kernel.shape[-1]} outputs'}; "
                             "a cross-encoder scores with one (num_labels=1).")
        settings = ckpt.cross_encoder or checkpoint.CrossEncoderSettings()
        if seq_length is None:
            seq_length = settings.seq_length or DEFAULT_SEQ_LENGTH
        seq_length = min(seq_length, ckpt.config.max_position_embeddings)
        preprocessor = BertPreprocessor.from_pretrained(path, seq_length=seq_length)
        kwargs.setdefault("pooling", settings.pooling)
        model = cls(cls.pretrained_encoder(ckpt), preprocessor, **kwargs)
        model.assign_head(head, ckpt.weights_path, "cross-encoder head")
        return model

    # === Strings in ===

    @property
    def text_inputs(self):
        """The exported signature's string inputs."""
        return ("query", "passage")

    def pair_columns(self, x):
        """`x` (see module doc) as a tuple of two checked text columns (NumPy
        arrays of str); a dataset or the dict of ids unchanged."""
        if isinstance(x, tf.data.Dataset) or holds_ids(x):
            return x
        if hasattr(x, "columns") and hasattr(x, "iloc"):  # a pandas DataFrame
            names = [str(name) for name in x.columns]
            if "query" in names and "passage" in names:
                x = (x["query"], x["passage"])
            elif len(names) == 2:
                x = (x.iloc[:, 0], x.iloc[:, 1])
            else:
                raise ValueError(f"x is a DataFrame of {len(names)} columns {names[:4]}: a "
                                 "cross-encoder reads two, named query and passage.")
        elif isinstance(x, (np.ndarray, tf.Tensor)):
            array = np.asarray(x)
            if array.ndim == 2 and array.shape[1] == 2 and array.dtype.kind in "USO":
                x = (array[:, 0], array[:, 1])
            elif array.dtype.kind in "USO" and array.ndim != 1:
                raise ValueError(f"x: an array of pairs has shape (n, 2), got {array.shape}.")
        if isinstance(x, tuple) and is_pair(x):
            columns = text_columns(x)
        elif isinstance(x, (np.ndarray, tf.Tensor)) or hasattr(x, "to_numpy"):
            text_columns(x)  # ids and other non-texts: its one-line error
            raise ValueError("x is one column of texts: a cross-encoder reads pairs, "
                             "(queries, passages) or a list of (query, passage).")
        else:
            columns = pair_list_columns(x)
        for i, (query, passage) in enumerate(zip(*columns)):
            for what, text in (("query", query), ("passage", passage)):
                if not text.strip():
                    raise ValueError(f"pair {i}: empty {what}.")
        return columns

    def text_batches(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False,
                     with_targets=True, seed=0, drop_remainder=False):
        return super().text_batches(self.pair_columns(x), y, sample_weight, batch_size,
                                    shuffle, with_targets, seed, drop_remainder)

    def num_texts(self, x):
        return len(self.pair_columns(x)[0])

    def targets(self, y, n):
        """`y` as float32 `[n, 1]`: one relevance in [0, 1] per pair, checked."""
        if y is None:
            raise ValueError(f"fit and evaluate need y: one label per pair; {LABELS_HINT}.")
        if hasattr(y, "to_numpy"):
            y = y.to_numpy()
        elif hasattr(y, "numpy"):
            y = y.numpy()
        if not isinstance(y, np.ndarray) or y.dtype.kind not in "biuf":
            # Before NumPy: it would turn [1, "yes"] into strings, [1, [0]] into an error.
            values = y if isinstance(y, (list, tuple, np.ndarray)) else [y]
            for i, value in enumerate(values):
                for item in value if isinstance(value, (list, tuple, np.ndarray)) else [value]:
                    item = item.item() if isinstance(item, np.generic) else item
                    if isinstance(item, (str, bytes)) or not isinstance(item, numbers.Real):
                        raise ValueError(f"y[{i}] is {item!r:.40}: {LABELS_HINT}.")
            try:
                y = np.asarray(values, np.float64)
            except ValueError:  # ragged
                raise ValueError(f"y must be one label per pair, shape ({n},); "
                                 f"{LABELS_HINT}.") from None
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1:
            raise ValueError(f"y must be one label per pair, shape ({n},), got {y.shape}.")
        if y.shape[0] != n:
            raise ValueError(f"y has {y.shape[0]} labels for {n} pairs.")
        bad = np.flatnonzero(~np.isfinite(y) | (y < 0) | (y > 1))
        if len(bad):
            raise ValueError(f"y[{bad[0]}] is {y[bad[0]]:g}: {LABELS_HINT}.")
        return y.astype(np.float32).reshape(n, 1)

    # === Training: compile() is the recipe (StringsModel) ===

    def default_loss(self):
        return pointwise_loss()

    def default_metrics(self):
        return pointwise_metrics()

    def best_epoch_monitor(self):
        return "val_accuracy", "max"  # pointwise_metrics (not the regression head's mae)

    def compile(self, *args, **kwargs):
        # predict's traced function goes, as Keras' own predict function does: the
        # model may have changed since (LoRA adapters).
        self.__dict__.pop("_score_pairs", None)
        super().compile(*args, **kwargs)

    # === Scoring ===

    def predict(self, x, batch_size=32, activation="default", verbose=0, **kwargs):
        """NumPy float32 `[n]`: one score per pair, in input order (see module
        doc: sentence-transformers' meaning, not Keras' `[n, 1]` logits).
        `activation`: "default" (this model's), "sigmoid" or None (logits).
        Pairs in memory are scored longest first (batches pad little) by one
        traced function, so each call costs the model's time only; a dataset
        goes through Keras' `predict` (`verbose` and `kwargs` apply to it)."""
        batch_size = check_int(batch_size, "batch_size", 1)
        activation = self.activation if activation == "default" else activation
        check_activation(activation)
        x = self.pair_columns(x)
        if isinstance(x, tuple):
            queries, passages = x
            order = np.argsort([-(len(q) + len(p)) for q, p in zip(queries, passages)],
                               kind="stable")
            logits = np.empty(len(queries), np.float32)
            for start in range(0, len(order), batch_size):
                index = order[start:start + batch_size]
                logits[index] = self._pair_logits(tf.constant(list(queries[index])),
                                                  tf.constant(list(passages[index]))).numpy()
        else:
            logits = np.asarray(super().predict(x, batch_size=batch_size, verbose=verbose,
                                                **kwargs))[:, 0]
        if activation == "sigmoid":
            logits = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
        return logits.astype(np.float32)

    def _pair_logits(self, queries, passages):
        """Logits `[batch]` of string tensors `[batch]`, traced once per model
        and kept behind a plain function (a `tf.function` attribute would be
        saved into every export)."""
        if "_score_pairs" not in self.__dict__:
            score = tf.function(lambda q, p: self(self.preprocess((q, p)), training=False)[:, 0],
                                input_signature=[tf.TensorSpec([None], tf.string)] * 2)
            self._score_pairs = lambda q, p: score(q, p)
        return self._score_pairs(queries, passages)

    def rank(self, query, passages, top_k=None, return_documents=False, batch_size=32):
        """`[{"corpus_id": int, "score": float[, "text": str]}]` of `passages`
        for `query`, best first (the `top_k` best; None: all)."""
        if not isinstance(query, str):
            raise TypeError(f"rank takes one query string, got {type(query).__name__}.")
        if isinstance(passages, str):
            raise TypeError("rank takes a list of passages, got one str: wrap it as [passage].")
        if passages is None or not hasattr(passages, "__iter__"):
            raise TypeError(f"rank takes a list of passages, got {type(passages).__name__}.")
        passages = list(passages)
        top_k = check_int(top_k, "top_k", 1, allow_none=True)
        check_bool(return_documents, "return_documents")
        scores = self.predict([(query, p) for p in passages], batch_size=batch_size)
        order = np.argsort(-scores, kind="stable")[:top_k]
        hits = [{"corpus_id": int(i), "score": float(scores[i])} for i in order]
        if return_documents:
            for hit in hits:
                hit["text"] = passages[hit["corpus_id"]]
        return hits

    # === Ways out ===

    def outputs_of(self, logits):
        """The exported signature's named outputs from logits (graph ops)."""
        return cross_encoder_outputs(logits)

    def export(self, export_dir, format="tf_saved_model", jit_compile=False, bucketing=True,
               **kwargs):
        """Strings-in SavedModel: `serving_default(query, passage)` (two
        tf.string `[batch]`) -> `logits`, `score` (sigmoid), `[batch]`;
        `serving_ids` on the three int tensors. `bucketing`: each batch is cut
        to a bucket of its longest pair. Other `format`s go to Keras' own."""
        if format != "tf_saved_model":
            return super().export(export_dir, format=format, **kwargs)
        if not isinstance(export_dir, (str, os.PathLike)):
            raise TypeError(f"export takes a directory path, got {type(export_dir).__name__}.")
        if not isinstance(jit_compile, bool):
            raise TypeError(f"jit_compile must be True or False, got {jit_compile!r:.40}.")
        # export/ builds on models: imported here.
        from tfbert.export.compiled_call import compiled_call
        from tfbert.export.task_model import export_task_model

        call = compiled_call(self, jit_compile)

        def serve_text(texts):
            inputs = self.preprocessor([texts["query"], texts["passage"]])
            return self.outputs_of(call(trim_to_bucket(inputs) if bucketing else inputs))

        return export_task_model(os.fspath(export_dir), serve_text,
                                 lambda ids: self.outputs_of(call(ids)), self.text_inputs,
                                 track=[self, self.preprocessor],
                                 warmup_shapes=call.shapes(self.preprocessor.seq_length))

    def settings(self):
        """The checkpoint's `cross_encoder` section."""
        return checkpoint.CrossEncoderSettings(seq_length=self.preprocessor.seq_length,
                                               pooling=self.pooling)

    # === Keras plumbing ===

    def head_config(self):
        return {"dropout": self.dropout, "initializer_range": self.initializer_range,
                "pooling": self.pooling, "activation": self.activation}


def check_activation(activation):
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be 'sigmoid' or None, got {activation!r}.")


def pair_list_columns(pairs):
    """`(queries, passages)` NumPy columns of a list of `(query, passage)`
    pairs; one clear error for anything else."""
    if isinstance(pairs, (str, bytes, dict)) or not hasattr(pairs, "__iter__"):
        raise TypeError("x must be a list of (query, passage) pairs or a tuple of two text "
                        f"columns, got {type(pairs).__name__}.")
    pairs = list(pairs)
    if not pairs:
        raise ValueError("x is an empty list of pairs.")
    columns = np.empty((2, len(pairs)), object)
    for i, pair in enumerate(pairs):
        if isinstance(pair, str) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise TypeError(f"pair {i} must be (query, passage), got {pair!r:.60}.")
        for column, what, text in zip(columns, ("query", "passage"), pair):
            column[i] = check_text(text, f"pair {i}: the {what}")
    return columns[0], columns[1]
