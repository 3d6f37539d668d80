"""`SentenceEncoder`: Sentence-BERT embeddings (encoder + pooling + dense + L2 norm)."""


import os

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from tfbert import checkpoint
from tfbert.checkpoint import DENSE_ACTIVATIONS, SentenceSettings
from tfbert.config_loader import check_int
from tfbert.encoder import INPUT_NAMES, BertEncoder
from tfbert.layers.pooling import check_pooling, pool_tokens
from tfbert.text.packer import trim_to_longest
from tfbert.text.preprocessor import BertPreprocessor
from tfbert.text.windows import (WINDOW_MODES, count_windows, pack_windows, pool_windows,
                                 window_batches)

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
        encoder = BertEncoder(ckpt.config)
        encoder.set_named_weights(ckpt.encoder_weights(), source=ckpt.weights_path)
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

    def save_pretrained(self, out_dir, source="tfbert.SentenceEncoder"):
        """Writes a tfbert checkpoint directory that `from_pretrained` reloads."""
        if self.preprocessor is None:
            raise ValueError("save_pretrained needs the preprocessor (its vocabulary).")
        heads = {}
        if self.dense is not None:
            heads["sentence_dense"] = {"kernel": self.dense.kernel.numpy(),
                                       "bias": self.dense.bias.numpy()}
        return checkpoint.save_checkpoint(
            out_dir, self.encoder.config, self.encoder.get_named_weights(),
            self.preprocessor.vocab.tokens, self.preprocessor.lower_case, head_weights=heads,
            source=source, sentence=self.sentence_config())

    # === Keras plumbing ===

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


def check_texts(texts):
    """`texts` as a list of str; a clear error for an empty input or a non-string item."""
    if isinstance(texts, str):
        raise TypeError("encode takes a list of strings, got one str: wrap it as [text].")
    if isinstance(texts, np.ndarray):
        texts = texts.tolist()
    try:
        texts = list(texts)
    except TypeError:
        raise TypeError(f"encode takes a list of strings, got {type(texts).__name__}.") from None
    if not texts:
        raise ValueError("encode got an empty list of texts.")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"encode: item {i} is {type(t).__name__} ({t!r:.40}), not a str.")
    return texts

