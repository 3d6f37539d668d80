"""`CrossEncoder`: scores (query, passage) pairs read together; reranks search hits.

The user-facing model, shaped like sentence-transformers' `CrossEncoder`:
`predict(pairs)` gives one score per pair (the sigmoid of the logit, as
sentence-transformers does for a one-label model; `activation=None` gives
the logits), and `rank(query, passages, top_k)` gives
`[{"corpus_id": int, "score": float}, ...]` best first. Underneath it is the
one-output pair classifier that `tools/finetune.py --task=cross_encoder` trains (a
`BertClassifier` on [CLS]'s pooler, or on the mean of the token states when the
checkpoint says `pooling: mean`); texts are packed as `[CLS] query [SEP] passage
[SEP]` and each batch padded to its longest pair.

`from_pretrained(dir)` reads a tfbert checkpoint with a `classifier` head
of one output: one converted from a Hugging Face `BertForSequenceClassification`
(`tfbert.convert.from_huggingface`), one `save_pretrained` wrote, or the
`model_dir` of `tools/finetune.py --task=cross_encoder` (its `cross_encoder/`).

Example:
>>> pre = BertPreprocessor(vocab_file="tests/data/pretraining/vocab.txt", seq_length=32)
>>> model = CrossEncoder.from_encoder(BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931)), pre)
>>> model.predict([("open a file", "Open the file."), ("open a file", "Sort it.")]).shape
(2,)
>>> hits = model.rank("open a file", ["Open the file.", "Sort it.", "Join the paths."], top_k=2)
>>> [sorted(h) for h in hits]
[['corpus_id', 'score'], ['corpus_id', 'score']]
"""

import os

import numpy as np
import tensorflow as tf

from tfbert import checkpoint
from tfbert.config_loader import check_int
from tfbert.encoder import BertEncoder
from tfbert.models.classifier import BertClassifier
from tfbert.text.packer import trim_to_bucket, trim_to_longest
from tfbert.text.preprocessor import BertPreprocessor

ACTIVATIONS = ("sigmoid", None)
DEFAULT_SEQ_LENGTH = 512  # sentence-transformers' default: the tokenizer's model_max_length


class CrossEncoder:
    """A one-output pair classifier with its preprocessor (see module doc).

    Args:
        model: a `BertClassifier` with `num_classes=1`.
        preprocessor: the `BertPreprocessor` (vocabulary, `seq_length`: pairs
            longer than it are trimmed, the longer text first).
        activation: "sigmoid" (default) or None (raw logits) for `predict`/`rank`.
    """

    def __init__(self, model, preprocessor, activation="sigmoid"):
        if not isinstance(model, BertClassifier) or model.num_classes != 1:
            raise TypeError("CrossEncoder needs a BertClassifier with num_classes=1, got "
                            f"{type(model).__name__}"
                            f"{f' with {model.num_classes} outputs' if hasattr(model, 'num_classes') else ''}.")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be 'sigmoid' or None, got {activation!r}.")
        if not isinstance(preprocessor, BertPreprocessor):
            raise TypeError("CrossEncoder needs a BertPreprocessor (its vocabulary and "
                            f"seq_length), got {type(preprocessor).__name__}.")
        self.model = model
        self.preprocessor = preprocessor
        self.activation = activation
        self._score = tf.function(self._score_batch, input_signature=[
            tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string)],
            reduce_retracing=True)

    @classmethod
    def from_encoder(cls, encoder, preprocessor, dropout=0.1, pooling="cls", **kwargs):
        """A fresh (untrained) head on `encoder`, on [CLS]'s pooler or the mean of
        the token states (`pooling`: "cls" or "mean")."""
        return cls(BertClassifier(encoder, num_classes=1, dropout=dropout, pooling=pooling),
                   preprocessor, **kwargs)

    # === Scoring ===

    def _score_batch(self, queries, passages):
        inputs = trim_to_longest(self.preprocessor([queries, passages]))
        return self.model(inputs, training=False)[:, 0]

    def predict(self, pairs, batch_size=32, activation="default"):
        """NumPy float32 `[n]`: one score per `(query, passage)` pair, in input
        order (pairs are sorted by length internally so batches pad little).
        `activation`: "default" (this model's), "sigmoid" or None (logits)."""
        queries, passages = check_pairs(pairs)
        batch_size = check_int(batch_size, "batch_size", 1)
        activation = self.activation if activation == "default" else activation
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be 'sigmoid' or None, got {activation!r}.")
        lengths = np.array([len(q) + len(p) for q, p in zip(queries, passages)])
        order = np.argsort(-lengths, kind="stable")
        out = np.empty(len(queries), np.float32)
        for start in range(0, len(order), batch_size):
            index = order[start:start + batch_size]
            out[index] = self._score(tf.constant([queries[i] for i in index]),
                                     tf.constant([passages[i] for i in index])).numpy()
        if activation == "sigmoid":
            out = 1.0 / (1.0 + np.exp(-out.astype(np.float64)))
        return out.astype(np.float32)

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
        scores = self.predict([(query, p) for p in passages], batch_size=batch_size)
        order = np.argsort(-scores, kind="stable")[:top_k]
        hits = [{"corpus_id": int(i), "score": float(scores[i])} for i in order]
        if return_documents:
            for hit in hits:
                hit["text"] = passages[hit["corpus_id"]]
        return hits

    # === Checkpoints and export ===

    @classmethod
    def from_pretrained(cls, path, seq_length=None, **kwargs):
        """Loads a tfbert checkpoint with a one-output `classifier` head, or a
        `tools/finetune.py --task=cross_encoder` model_dir. `seq_length`
        (default: the checkpoint's, else 512) is capped at the position table."""
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
                             "BertForSequenceClassification model, or train one with "
                             "tools/finetune.py --task=cross_encoder.")
        kernel = head.get("kernel")
        if kernel is None or kernel.ndim != 2 or kernel.shape[1] != 1:
            raise ValueError(f"{ckpt.weights_path}: the classifier head has "
                             f"{'no kernel' if kernel is None else f'{kernel.shape[-1]} outputs'}; "
                             "a cross-encoder scores with one (num_labels=1).")
        encoder = BertEncoder(ckpt.config)
        encoder.set_named_weights(ckpt.encoder_weights(), source=ckpt.weights_path)
        settings = ckpt.cross_encoder or checkpoint.CrossEncoderSettings()
        if seq_length is None:
            seq_length = settings.seq_length or DEFAULT_SEQ_LENGTH
        seq_length = min(seq_length, ckpt.config.max_position_embeddings)
        preprocessor = BertPreprocessor.from_pretrained(path, seq_length=seq_length)
        model = BertClassifier(encoder, num_classes=1, pooling=settings.pooling)
        checkpoint.assign_weights({"kernel": model.get_layer("logits").kernel,
                                   "bias": model.get_layer("logits").bias},
                                  head, ckpt.weights_path, "cross-encoder head")
        return cls(model, preprocessor, **kwargs)

    def save_pretrained(self, out_dir):
        """Writes a tfbert checkpoint that `from_pretrained` reloads."""
        return save_cross_encoder(self.model, self.preprocessor, out_dir)

    def export(self, export_dir, jit_compile=False):
        """Strings-in SavedModel: `serving_default(query, passage)` (two
        tf.string `[batch]`) -> `logits`, `score` (sigmoid), `[batch]`."""
        if not isinstance(export_dir, (str, os.PathLike)):
            raise TypeError(f"export takes a directory path, got {type(export_dir).__name__}.")
        if not isinstance(jit_compile, bool):
            raise TypeError(f"jit_compile must be True or False, got {jit_compile!r:.40}.")
        return export_cross_encoder(self.model, self.preprocessor, export_dir,
                                    jit_compile=jit_compile)


def cross_encoder_outputs(logits):
    """`logits` `[batch]` and `score` = sigmoid(logits) of a one-output head's
    `[batch, 1]` logits (graph ops: prediction and the export)."""
    logits = logits[:, 0]
    return {"logits": logits, "score": tf.sigmoid(logits)}


def export_cross_encoder(model, preprocessor, export_dir, jit_compile=False, bucketing=True):
    """Strings-in SavedModel of a one-output pair classifier: `serving_default`
    (`query`, `passage`) -> `logits`, `score`; `serving_ids` on the three int
    tensors. `bucketing`: each batch is cut to a bucket of its longest pair."""
    # The export package builds on models, not the other way round: imported here.
    from tfbert.export.compiled_call import compiled_call
    from tfbert.export.task_model import export_task_model

    call = compiled_call(model, jit_compile)

    def serve_text(texts):
        inputs = preprocessor([texts["query"], texts["passage"]])
        return cross_encoder_outputs(call(trim_to_bucket(inputs) if bucketing else inputs))

    return export_task_model(export_dir, serve_text, lambda ids: cross_encoder_outputs(call(ids)),
                             ("query", "passage"), track=[model, preprocessor],
                             warmup_shapes=call.shapes(preprocessor.seq_length))


def check_pairs(pairs):
    """`(queries, passages)` lists from a list of `(query, passage)` pairs;
    one clear error for an empty list, a malformed pair or an empty text."""
    if isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__iter__"):
        raise TypeError(f"predict takes a list of (query, passage) pairs, got {type(pairs).__name__}.")
    pairs = list(pairs)
    if not pairs:
        raise ValueError("predict got an empty list of pairs.")
    queries, passages = [], []
    for i, pair in enumerate(pairs):
        if isinstance(pair, str) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise TypeError(f"pair {i} must be (query, passage), got {pair!r:.60}.")
        for what, text in zip(("query", "passage"), pair):
            if not isinstance(text, str):
                raise TypeError(f"pair {i}: the {what} is {type(text).__name__}, not a str.")
            if not text.strip():
                raise ValueError(f"pair {i}: empty {what}.")
        queries.append(pair[0])
        passages.append(pair[1])
    return queries, passages


def save_cross_encoder(model, preprocessor, out_dir, source="tfbert.CrossEncoder"):
    """Writes a one-output `BertClassifier` and its vocabulary as a tfbert
    checkpoint (head `classifier/kernel`, `classifier/bias`), atomically."""
    head = model.get_layer("logits")
    return checkpoint.save_checkpoint(
        out_dir, model.encoder.config, model.encoder.get_named_weights(),
        preprocessor.vocab.tokens, preprocessor.lower_case,
        head_weights={"classifier": {"kernel": head.kernel.numpy(), "bias": head.bias.numpy()}},
        source=source, cross_encoder=checkpoint.CrossEncoderSettings(
            seq_length=preprocessor.seq_length, pooling=model.pooling))
