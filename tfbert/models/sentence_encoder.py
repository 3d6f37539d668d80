"""`SentenceEncoder`: Sentence-BERT embeddings (encoder + pooling + dense + L2 norm)."""


import os
import tempfile

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from tfbert import checkpoint
from tfbert.atomic import check_replaceable
from tfbert.checkpoint import DENSE_ACTIVATIONS, SentenceSettings
from tfbert.config_loader import check_bool, check_file_to_write, check_int
from tfbert.data.batching import epoch_batches
from tfbert.data.batching import steps_per_epoch as steps_per_epoch_of
from tfbert.encoder import INPUT_NAMES, BertEncoder
from tfbert.layers.pooling import check_pooling, pool_tokens
from tfbert.losses import MultipleNegativesRankingLoss
from tfbert.losses.base import SentenceLoss
from tfbert.data.batching import count_batches
from tfbert.models.encoder_model import check_model_kwargs, holds_text, pruned_model
from tfbert.models.strings_model import recipe_batch_size, recipe_optimizer
from tfbert.models.text_data import check_batch_size, holds_ids
from tfbert.text.packer import trim_to_longest
from tfbert.text.preprocessor import BertPreprocessor
from tfbert.text.raw_texts import text_column
from tfbert.text.windows import (WINDOW_MODES, count_windows, pack_windows, pool_windows,
                                 window_batches)
from tfbert.train.optimizer import build_before_fit

# Inputs above this count get a progress bar in `encode` (keras Progbar).
PROGRESS_MIN = 10000


@keras.saving.register_keras_serializable(package="tfbert")
class SentenceEncoder(keras.Model):
    """One fixed-size vector per text, compared with cosine similarity (Sentence-BERT).

    The model maps the three int32 encoder inputs to `[batch, dim]` float32
    embeddings: the encoder's `sequence_output`, pooled over the real tokens
    (`mean`, as sentence-transformers' default; `cls`; or `max`), then an
    optional dense layer (sentence-transformers' `Dense` module), then L2
    normalization when `normalize=True`.

    `encode(texts)` goes from raw strings to a NumPy `[n, dim]` array; it
    needs the `preprocessor` (given here, or set by `from_pretrained`).
    `compile(loss=...)` and `fit(rows of texts)` train it with a
    `tfbert.losses` loss (in-batch negatives by default; see `fit`), and
    `export(dir)` writes the strings-in SavedModel.

    Args:
        encoder: a `BertEncoder`.
        pooling: "mean" (over real tokens, [CLS]/[SEP] included), "cls", "max".
        dense_units: None, or the output size of a dense layer after pooling.
        dense_activation: "tanh" (sentence-transformers' default) or "linear".
        normalize: L2-normalize the embeddings (dot product = cosine).
        preprocessor: a `BertPreprocessor` for `encode` (not part of the graph).

    Example:
    >>> pre = BertPreprocessor(vocab_file="tests/data/pretraining/vocab.txt", seq_length=16)
    >>> model = SentenceEncoder(BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931)),
    ...                         pooling="mean", normalize=True, preprocessor=pre)
    >>> emb = model.encode(["The file is opened.", "Read it."])
    >>> emb.shape, np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    ((2, 128), True)
    >>> SentenceEncoder.from_config(model.get_config()).pooling
    'mean'
    """

    def __init__(self, encoder, pooling="mean", dense_units=None, dense_activation="tanh",
                 normalize=True, preprocessor=None, **kwargs):
        # === Checks ===
        if not isinstance(encoder, BertEncoder):
            raise TypeError(f"SentenceEncoder needs a BertEncoder, got {type(encoder).__name__}.")
        check_pooling(pooling)
        if dense_activation not in DENSE_ACTIVATIONS:
            raise ValueError(f"dense_activation must be one of {list(DENSE_ACTIVATIONS)}, "
                             f"got {dense_activation!r}.")
        dense_units = check_int(dense_units, "dense_units", 1, allow_none=True)
        if not isinstance(normalize, bool):
            raise TypeError(f"normalize must be True or False, got {normalize!r:.40}.")

        # === Layers ===
        # The pooler (dense+tanh on [CLS]) gets no gradient from any pooling
        # here; freezing it keeps the optimizer from warning about it. Note: this
        # sets `trainable` on the encoder passed in (as BertTokenClassifier does).
        encoder.pooler.trainable = False
        dense = None
        if dense_units is not None:
            dense = keras.layers.Dense(int(dense_units), activation=dense_activation,
                                       name="sentence_dense")

        # === Functional model ===
        inputs = {n: keras.Input(shape=(None,), dtype="int32", name=n) for n in INPUT_NAMES}
        tokens = encoder(inputs)["sequence_output"]
        pooled = pool_tokens(tokens, inputs["input_mask"], pooling)
        embedding = dense(pooled) if dense is not None else pooled
        if normalize:
            # x / max(|x|, 1e-12): torch.nn.functional.normalize, which ST's Normalize uses.
            norm = ops.sqrt(ops.sum(ops.square(embedding), axis=-1, keepdims=True))
            embedding = embedding / ops.maximum(norm, 1e-12)
        kwargs.setdefault("name", "sentence_encoder")
        check_model_kwargs("SentenceEncoder", kwargs)
        super().__init__(inputs=inputs, outputs=embedding, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.pooling = pooling
        self.dense_units = None if dense_units is None else int(dense_units)
        self.dense_activation = dense_activation
        self.normalize = bool(normalize)
        self.dense = dense
        self.preprocessor = preprocessor
        self._embed_fns = {}

    @property
    def dim(self):
        return self.dense_units or self.encoder.config.hidden_size

    # === Raw strings ===

    def embed_text(self, texts, call=None, long_text="truncate", doc_stride=None,
                   doc_overlap=None, max_windows=64):
        """Graph ops: tf.string `[batch]` -> `[batch, dim]`; each batch is padded
        to its longest text (not to `seq_length`), so short texts cost little.
        Used by `encode` and by the exported `serving_default`; `call`: how the
        model runs (`tfbert.export.compiled_call`; default the plain call).

        `long_text="windows"`: a text longer than `seq_length` is read as
        overlapping windows (`tfbert.text.windows`; `doc_stride` / `doc_overlap`,
        at most `max_windows` per text), and its embedding is the mean of its
        windows' embeddings weighted by their wordpieces (normalized again when
        the model normalizes)."""
        call = call or (lambda inputs: self(inputs, training=False))
        if long_text == "truncate":
            return call(trim_to_longest(self.preprocessor(texts)))
        pieces = self.preprocessor.tokenize(texts).merge_dims(1, 2)
        spans, inputs = pack_windows(self.preprocessor, pieces, self.preprocessor.seq_length,
                                     doc_stride=doc_stride, doc_overlap=doc_overlap,
                                     max_windows_per_text=max_windows)
        embeddings = call(trim_to_longest(inputs))
        pooled = pool_windows(embeddings, spans, "mean",
                              weights=tf.maximum(spans["window_length"], 1))
        return tf.math.l2_normalize(pooled, axis=-1, epsilon=1e-24) if self.normalize else pooled

    def predict(self, x, *args, **kwargs):
        """Keras' `predict` on the three id tensors; texts go to `encode` (Keras
        would answer them with "Unrecognized data type" from its data adapters)."""
        if x is None or holds_text(x):
            raise TypeError("SentenceEncoder.predict takes the dict of the three int32 id "
                            "tensors; embed texts with encode(texts).")
        return super().predict(x, *args, **kwargs)

    def encode(self, texts, batch_size=32, show_progress=None, long_text="truncate",
               doc_stride=None, doc_overlap=None, max_windows=64, truncate_dim=None):
        """NumPy float32 `[n, dim]` embeddings of a list of strings, in input order.
        `truncate_dim`: keep the first dims only (Matryoshka; re-normalized
        when the model normalizes).

        Texts are sorted by wordpiece count internally so each batch pads to
        a similar length, and truncated at the preprocessor's `seq_length`
        (sentence-transformers' `max_seq_length`). `show_progress`: None shows
        a bar for more than 10,000 texts.

        `long_text="windows"` reads every window of a long text (`embed_text`);
        then `batch_size` counts windows, so one call holds the windows of
        several texts (a text with more windows is a call of its own).
        """
        texts = check_texts(texts)
        if self.preprocessor is None:
            raise ValueError("SentenceEncoder.encode needs a preprocessor: pass preprocessor= "
                             "or load with SentenceEncoder.from_pretrained(dir).")
        batch_size = check_int(batch_size, "batch_size", 1)
        check_bool(show_progress, "show_progress", allow_none=True)  # "no" would read as True
        if long_text not in WINDOW_MODES:
            raise ValueError(f"long_text must be one of {list(WINDOW_MODES)}, got {long_text!r}.")
        # The window settings reach graph ops (a zero step divides by zero there): checked
        # here against the window's wordpieces, seq_length minus [CLS] and [SEP].
        budget = self.preprocessor.seq_length - 2
        doc_stride = check_int(doc_stride, "doc_stride", 1, allow_none=True)
        doc_overlap = check_int(doc_overlap, "doc_overlap", 0, budget - 1, allow_none=True)
        max_windows = check_int(max_windows, "max_windows", 1)
        if truncate_dim is not None:  # checked before the texts are encoded, not after
            truncate_dim = check_int(truncate_dim, "truncate_dim", 1, self.dim)
        options = dict(long_text=long_text, doc_stride=doc_stride, doc_overlap=doc_overlap,
                       max_windows=max_windows)
        key = ",".join(f"{k}={v}" for k, v in options.items())  # str: Keras tracks the dict
        if key not in self._embed_fns:
            # One trace for every batch: strings of any count, any length.
            self._embed_fns[key] = tf.function(
                lambda t: self.embed_text(t, **options),
                input_signature=[tf.TensorSpec([None], tf.string)], reduce_retracing=True)
        embed = self._embed_fns[key]
        seq_length = self.preprocessor.seq_length
        counts, windows = count_windows(self.preprocessor, texts, seq_length, doc_stride,
                                        doc_overlap, max_windows)
        order = np.argsort(-counts, kind="stable")
        cost = windows if long_text == "windows" else np.ones(len(texts), np.int64)
        show = len(texts) > PROGRESS_MIN if show_progress is None else show_progress
        bar = keras.utils.Progbar(len(texts), stateful_metrics=[]) if show else None
        out = np.empty((len(texts), self.dim), np.float32)
        for start, end in window_batches(cost[order], batch_size):
            index = order[start:end]
            out[index] = embed(tf.constant([texts[i] for i in index])).numpy()
            if bar is not None:
                bar.update(end)
        return truncate_embeddings(out, truncate_dim, self)

    def token_counts(self, texts, chunk=4096):
        """Wordpieces per text (graph tokenizer, in chunks)."""
        return count_windows(self.preprocessor, texts, self.preprocessor.seq_length,
                             chunk=chunk)[0]

    # === Training on texts: compile() picks the loss, fit() trains ===

    def compile(self, optimizer="auto", loss="auto", **kwargs):
        """How `fit` trains (sentence-transformers' trainer, the Keras way).
        `loss`: a `tfbert.losses` loss built on this model (default
        `MultipleNegativesRankingLoss(model)`, sentence-transformers' loss for
        pairs); `optimizer`: "auto" is the fine-tuning recipe (AdamW, the
        learning rate by model size, warmup then decay over the updates the
        first `fit` runs) or any Keras optimizer. Other keyword arguments
        (`jit_compile`, `steps_per_execution`) go to the loss's `compile`."""
        if isinstance(loss, str) and loss == "auto":
            loss = MultipleNegativesRankingLoss(self)
        if not isinstance(loss, SentenceLoss):
            raise TypeError(f"loss must be a tfbert.losses loss built on this model (e.g. "
                            f"MultipleNegativesRankingLoss(model)), got {type(loss).__name__}.")
        if loss.sentence_encoder is not self:
            raise ValueError(f"loss: this {type(loss).__name__} wraps another SentenceEncoder; "
                             "build it on the model you compile.")
        # object.__setattr__: the loss holds this model, and Keras would track
        # it as a sub-layer (a cycle in the weights) if assigned as usual.
        object.__setattr__(self, "_training", {"loss": loss, "optimizer": optimizer,
                                               "kwargs": kwargs})

    def fit(self, x=None, y=None, batch_size=None, epochs=1, validation_data=None,
            shuffle=True, seed=None, steps_per_epoch=None, **kwargs):
        """Trains on rows of texts with the compiled loss (`compile()` with no
        arguments if not compiled). `x`: a tuple of 2 or 3 text columns
        (anchor, positive[, negative]: lists of str, NumPy string arrays,
        pandas Series), a dict of them by those names, a pandas DataFrame (its
        columns in order; a `label` or `score` column is `y`, as
        sentence-transformers reads a dataset), or a `tf.data.Dataset` of
        `(columns)` or `(columns, y)`, batched or not. `y`: scores
        (`CosineSimilarityLoss`), class ids (`SoftmaxLoss`) or nothing. With
        `shuffle`, rows are reshuffled each epoch with `seed`; `batch_size`
        None is the recipe's (16 below 10,000 rows, else 32). Returns Keras'
        `History` (of the loss model, whose weights are this model's)."""
        check_int(epochs, "epochs", 1)
        check_int(steps_per_epoch, "steps_per_epoch", 1, allow_none=True)
        check_int(seed, "seed", 0, allow_none=True)
        training = getattr(self, "_training", None)
        if training is None:
            self.compile()
            training = self._training
        loss = training["loss"]
        data, batch_size, n = self._row_batches(loss, x, y, batch_size, shuffle, seed, "x")
        if n is not None and shuffle and steps_per_epoch is None:
            steps_per_epoch = steps_per_epoch_of(n, batch_size)
        if validation_data is not None:
            if isinstance(validation_data, tf.data.Dataset):
                parts = (validation_data, None)
            elif isinstance(validation_data, (tuple, list)) and len(validation_data) == 2:
                parts = tuple(validation_data)
            else:
                raise ValueError("validation_data must be (x, y) or a tf.data.Dataset, as x.")
            validation_data = self._row_batches(loss, *parts, batch_size, False, None,
                                                "validation_data")[0]
        optimizer = training["optimizer"]
        if isinstance(optimizer, str) and optimizer == "auto":
            updates = (steps_per_epoch or count_batches(data)) * epochs
            optimizer = recipe_optimizer(self, max(1, updates))
            training["optimizer"] = optimizer  # a second fit goes on with it
        if not loss.compiled or loss.optimizer is not optimizer:
            loss.compile(optimizer=optimizer, **training["kwargs"])
        build_before_fit(loss)
        # shuffle=False: the rows are shuffled above, before tokenization.
        return loss.fit(data, epochs=epochs, steps_per_epoch=steps_per_epoch,
                        validation_data=validation_data, shuffle=False, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, **kwargs):
        """The compiled loss on rows of texts (the forms `fit` takes)."""
        training = getattr(self, "_training", None)
        if training is None:
            raise ValueError("evaluate needs the loss: call compile() first.")
        loss = training["loss"]
        data = self._row_batches(loss, x, y, batch_size, False, None, "x")[0]
        if not loss.compiled:  # Keras evaluates compiled models only; no update happens
            optimizer = training["optimizer"]
            loss.compile(optimizer=keras.optimizers.AdamW() if optimizer == "auto" else optimizer,
                         **training["kwargs"])
        return loss.evaluate(data, **kwargs)

    def _row_batches(self, loss, x, y, batch_size, shuffle, seed, what):
        """`(batches, batch size, rows or None for a dataset)`: tokenized
        `({column: ids}[, y])` batches in `tf.data`, each padded to its longest text."""
        if holds_ids(x) or (isinstance(x, dict) and set(x) & set(INPUT_NAMES)):
            raise TypeError(f"{what}: this model's fit takes rows of raw texts; ids go to the "
                            "tfbert.losses model's fit.")
        if self.preprocessor is None:
            raise ValueError("fit needs the preprocessor (its vocabulary): pass "
                             "preprocessor= or use from_pretrained.")
        columns = ("anchor", "positive", "negative")
        if isinstance(x, tf.data.Dataset):
            ds, batched = _row_dataset(x, loss, what)
            if not batched:
                ds = ds.batch(check_batch_size(batch_size, 16))
            n = None
        else:
            texts, y = _row_columns(x, y, what)
            _check_row_shape(loss, len(texts), y is not None, what)
            n = len(texts[0])
            parts = {name: tf.constant(list(c), tf.string) for name, c in zip(columns, texts)}
            ds = tf.data.Dataset.from_tensor_slices(
                parts if y is None else (parts, _row_targets(loss, y, n, what)))
            batch_size = check_batch_size(batch_size, recipe_batch_size(n))
            if shuffle:
                if seed is None:
                    seed = int(np.random.randint(2**31 - 1))
                ds = epoch_batches(ds, n, batch_size, seed)
            else:
                ds = ds.batch(batch_size)

        def tokenize(texts, *targets):
            ids = {name: trim_to_longest(self.preprocessor(t)) for name, t in texts.items()}
            return (ids, *targets) if targets else ids

        ds = ds.map(tokenize, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
        return ds, batch_size, n

    # === Ways out ===

    def export(self, filepath, format="tf_saved_model", jit_compile=False, truncate_dim=None,
               long_text="truncate", doc_stride=None, doc_overlap=None, max_windows=64,
               **kwargs):
        """The strings-in SavedModel `tools/finetune.py --task=sentence_embedding`
        writes: `serving_default(text)` -> `embedding` float32 `[batch, dim]`
        (each batch padded to its longest text; `truncate_dim`: the first dims,
        re-normalized when the model normalizes; `long_text` etc. as
        `embed_text`), and `serving_ids` on the three id tensors. `jit_compile`:
        the model runs under XLA at bucketed shapes (TF Serving needs
        `--xla_cpu_compilation_enabled=true`). Other `format`s go to Keras'
        `Model.export`."""
        if format != "tf_saved_model":
            return super().export(filepath, format=format, **kwargs)
        check_replaceable(filepath, "export")
        if self.preprocessor is None:
            raise ValueError("export needs the preprocessor (its vocabulary): pass "
                             "preprocessor= or use from_pretrained.")
        # export/ builds on models: imported here.
        from tfbert.export.compiled_call import compiled_call
        from tfbert.export.task_model import export_task_model

        call = compiled_call(self, jit_compile)
        windows = {"long_text": long_text, "doc_stride": doc_stride, "doc_overlap": doc_overlap,
                   "max_windows": max_windows}
        cut = lambda e: truncate_embeddings(e, truncate_dim, self)
        return export_task_model(
            os.fspath(filepath),
            serve_text=lambda texts: {"embedding": cut(self.embed_text(texts["text"], call,
                                                                       **windows))},
            serve_ids=lambda inputs: {"embedding": cut(call(inputs))},
            text_inputs=("text",),
            track=[self, self.preprocessor],
            warmup_shapes=call.shapes(self.preprocessor.seq_length))

    # === Checkpoints ===

    @classmethod
    def from_pretrained(cls, checkpoint_dir, seq_length=None, **kwargs):
        """From a tfbert checkpoint directory. Pooling, dense, normalization and
        `seq_length` come from its `sentence` section (written by the
        converter from sentence-transformers metadata, or by `save_pretrained`);
        without one: mean pooling, normalized, `seq_length` 128. Keyword
        arguments override the checkpoint's settings."""
        if not isinstance(checkpoint_dir, (str, os.PathLike)):
            raise TypeError(f"from_pretrained takes a checkpoint directory, got "
                            f"{type(checkpoint_dir).__name__}.")
        seq_length = check_int(seq_length, "seq_length", 2, allow_none=True)
        ckpt = checkpoint.read_checkpoint(checkpoint_dir)
        sentence = ckpt.sentence or SentenceSettings()
        encoder = BertEncoder.from_checkpoint(ckpt)
        if seq_length is None:
            seq_length = sentence.seq_length or 128
        seq_length = min(seq_length, ckpt.config.max_position_embeddings)
        preprocessor = BertPreprocessor.from_pretrained(checkpoint_dir, seq_length=seq_length)
        settings = {"pooling": sentence.pooling, "dense_units": sentence.dense_units,
                    "dense_activation": sentence.dense_activation,
                    "normalize": sentence.normalize, **kwargs}
        model = cls(encoder, preprocessor=preprocessor, **settings)
        dense_weights = ckpt.prefixed_weights("sentence_dense")
        if model.dense is not None or dense_weights:
            if model.dense is None:
                raise ValueError(f"{ckpt.weights_path} has sentence_dense weights but the "
                                 "model has no dense layer (dense_units=None).")
            checkpoint.assign_weights({"kernel": model.dense.kernel, "bias": model.dense.bias},
                                      dense_weights, ckpt.weights_path, "sentence dense layer")
        return model

    def sentence_config(self):
        """The checkpoint's `sentence` section for this model."""
        return SentenceSettings(
            pooling=self.pooling, dense_units=self.dense_units,
            dense_activation=self.dense_activation, normalize=self.normalize,
            seq_length=self.preprocessor.seq_length if self.preprocessor else None)

    def save(self, filepath, *args, **kwargs):
        """Keras' `save`, its path checked first (`tfbert.load_model` reads it back)."""
        return super().save(check_file_to_write(filepath, "save", ".keras"), *args, **kwargs)

    def save_pretrained(self, out_dir, source="tfbert.SentenceEncoder"):
        """Writes a tfbert checkpoint directory that `from_pretrained` reloads."""
        check_replaceable(out_dir, "save_pretrained")
        if self.preprocessor is None:
            raise ValueError("save_pretrained needs the preprocessor (its vocabulary).")
        heads = {}
        if self.dense is not None:
            heads["sentence_dense"] = {"kernel": self.dense.kernel.numpy(),
                                       "bias": self.dense.bias.numpy()}
        with tempfile.TemporaryDirectory(prefix="tfbert-tokenizer-") as tmp:
            return checkpoint.save_checkpoint(
                out_dir, self.encoder.config, self.encoder.get_named_weights(),
                self.preprocessor.vocab.tokens, self.preprocessor.lower_case, head_weights=heads,
                source=source, sentence=self.sentence_config(),
                **self.preprocessor.checkpoint_tokenizer(tmp))

    # === Keras plumbing ===

    def prune_heads(self, heads):
        """A NEW model without the encoder's attention heads `heads` (`{layer:
        [head, ...]}`): `tfbert.models.encoder_model.pruned_model`."""
        return pruned_model(self, heads)

    def get_config(self):
        return {
            "encoder": keras.layers.serialize(self.encoder),
            "pooling": self.pooling,
            "dense_units": self.dense_units,
            "dense_activation": self.dense_activation,
            "normalize": self.normalize,
            "preprocessor": (keras.layers.serialize(self.preprocessor)
                             if self.preprocessor is not None else None),
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.layers.deserialize(config["encoder"])
        if config.get("preprocessor") is not None:
            config["preprocessor"] = keras.layers.deserialize(config["preprocessor"])
        return cls(**config)


def _row_columns(x, y, what):
    """`(text columns as NumPy arrays, y)` of `fit`'s in-memory forms (see `fit`)."""
    if hasattr(x, "columns") and hasattr(x, "iloc"):  # a pandas DataFrame
        names = [str(c) for c in x.columns]
        label = [c for c in names if c in ("label", "score")]
        if label and y is not None:
            raise ValueError(f"{what}: the DataFrame has a {label[0]!r} column and y is given "
                             "too; pass one.")
        if label:
            y = x[label[0]].to_numpy()
        x = tuple(x[c] for c in names if c not in label)
    elif isinstance(x, dict):
        unknown = sorted(set(x) - {"anchor", "positive", "negative"})
        if unknown or "anchor" not in x or "positive" not in x:
            raise ValueError(f"{what}: a dict of columns needs 'anchor' and 'positive' (and "
                             f"optionally 'negative'), got {sorted(x)}.")
        x = tuple(x[c] for c in ("anchor", "positive", "negative") if c in x)
    if not isinstance(x, (tuple, list)) or not 2 <= len(x) <= 3 or any(
            isinstance(c, (str, bytes)) for c in x):
        raise ValueError(f"{what} must be rows of texts: a tuple of 2 or 3 columns (anchor, "
                         "positive[, negative]), a dict of them or a DataFrame; got "
                         f"{type(x).__name__}{f' of {len(x)}' if isinstance(x, (tuple, list)) else ''}.")
    texts = [text_column(c, f"{what}[{i}]") for i, c in enumerate(x)]
    lengths = [len(c) for c in texts]
    if len(set(lengths)) > 1:
        raise ValueError(f"{what}: the text columns differ in length ({', '.join(map(str, lengths))}).")
    return texts, y


def _check_row_shape(loss, num_columns, has_targets, what):
    name = type(loss).__name__
    if num_columns not in loss.num_columns:
        raise ValueError(f"{what}: {name} takes {' or '.join(map(str, loss.num_columns))} text "
                         f"columns, got {num_columns}.")
    if loss.targets and not has_targets:
        raise ValueError(f"{name} needs y: one {loss.targets[:-1]} per row.")
    if not loss.targets and has_targets:
        raise ValueError(f"{name} takes no y (the rows are the targets); drop y or compile "
                         "with CosineSimilarityLoss (scores) or SoftmaxLoss (labels).")


def _row_targets(loss, y, n, what):
    """`y` as float32 scores or int32 class ids `[n]`, or one clear error."""
    y = y.to_numpy() if hasattr(y, "to_numpy") else np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"y has shape {y.shape}; expected ({n},), one per row of {what}.")
    if y.dtype.kind not in "iuf" or y.dtype == bool:
        raise TypeError(f"y must hold numbers, got {y.dtype} values (e.g. {y[0]!r:.40}).")
    if not np.isfinite(y.astype(np.float64)).all():
        raise ValueError(f"y holds NaN or inf at row {int(np.argmin(np.isfinite(y)))}.")
    if loss.targets == "labels":
        classes = loss.num_labels
        if (y != np.round(y)).any() or (y < 0).any() or (y >= classes).any():
            bad = int(np.argmax((y != np.round(y)) | (y < 0) | (y >= classes)))
            raise ValueError(f"y[{bad}] is {y[bad]}: labels must be class ids in "
                             f"[0, {classes}) for {type(loss).__name__}(num_labels={classes}).")
        return y.astype(np.int32)
    return y.astype(np.float32)


def _row_dataset(ds, loss, what):
    """`(dataset of ({column: texts}[, y]), batched)` from a dataset of
    `(columns)` or `(columns, y)`; one clear error for anything else."""
    spec = ds.element_spec
    has_targets = (isinstance(spec, tuple) and len(spec) == 2
                   and isinstance(spec[0], (tuple, dict)))
    texts = spec[0] if has_targets else spec
    if isinstance(texts, dict):
        names = list(texts)
        specs = [texts[k] for k in names]
    elif isinstance(texts, tuple):
        names = ["anchor", "positive", "negative"][:len(texts)]
        specs = list(texts)
    else:
        specs, names = [], []
    if not 2 <= len(specs) <= 3 or not all(
            isinstance(s, tf.TensorSpec) and s.dtype == tf.string for s in specs):
        raise TypeError(f"{what}: the dataset must yield a tuple of 2 or 3 string columns "
                        f"(anchor, positive[, negative]), or (columns, y); got {spec}.")
    _check_row_shape(loss, len(specs), has_targets, what)
    ranks = {s.shape.rank for s in specs}
    if len(ranks) > 1 or ranks - {0, 1}:
        raise ValueError(f"{what}: the dataset's texts must be scalars or [batch] vectors, "
                         f"got shapes {[s.shape for s in specs]}.")
    if has_targets:
        ds = ds.map(lambda t, y: (dict(zip(names, t.values() if isinstance(t, dict) else t)), y))
    else:
        ds = ds.map(lambda *t: dict(zip(names, t[0].values() if isinstance(t[0], dict) else t)))
    return ds, ranks == {1}


def truncate_embeddings(embeddings, truncate_dim, model):
    """The first `truncate_dim` dims of `[n, dim]` embeddings (NumPy or graph
    tensors), re-normalized when `model` normalizes; None: unchanged.

    >>> class Model: dim, normalize = 3, True
    >>> truncate_embeddings(np.array([[3.0, 4.0, 12.0]]), 2, Model()).tolist()
    [[0.6, 0.8]]
    """
    if truncate_dim is None:
        return embeddings
    truncate_dim = check_int(truncate_dim, "truncate_dim", 1, model.dim)  # dim: the embedding size
    cut = embeddings[:, :truncate_dim]
    if not model.normalize:
        return cut
    if isinstance(cut, np.ndarray):
        return cut / np.maximum(np.linalg.norm(cut, axis=1, keepdims=True), 1e-12)
    return cut / tf.maximum(tf.norm(cut, axis=1, keepdims=True), 1e-12)


def check_texts(texts, what="texts"):
    """`texts` as a list of str, checked as every strings-in model checks its
    texts (`tfbert.text.raw_texts.text_column`): one clear line for None, one string, an
    empty list, a set, or an item that is not text (its index named)."""
    return text_column(texts, what).tolist()

