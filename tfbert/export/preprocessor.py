"""The preprocessor as its own SavedModel (the TF Hub preprocessor format).

    export_preprocessor(BertPreprocessor.from_pretrained(ckpt), "saved_models/pre")
    pre = load_preprocessor("saved_models/pre")      # imports tensorflow_text
    pre(tf.constant(["hello world"]))                # dict of [batch, seq_length]
    pre.tokenize(...), pre.bert_pack_inputs([a, b], seq_length=128)

Signatures, for TF Serving (dense tensors only):
- `serving_default`: `text` -> `input_word_ids`, `input_mask`, `input_type_ids`
- `pairs`: `text_a`, `text_b` -> the same three
- `tokenize`: `text` -> `token_ids` (flat), `word_row_splits`, `piece_row_splits`
  (the ragged `[batch, (words), (pieces)]` components)
- `tokenize_with_offsets`: as `tokenize` plus `start_offsets`, `limit_offsets`
- `bert_pack_inputs`: `ids_a`, `row_lengths_a`, `ids_b`, `row_lengths_b`
  (flat ids and tokens per example of two segments) -> the three tensors

A signature called with a string batch of the wrong rank fails in its own
graph with an `InvalidArgumentError` whose message names the input (TF
Serving answers it as HTTP 400). A wrong dtype or input name never reaches
the graph (TF rejects it first); `load_preprocessor(...).signatures` checks
both for Python callers and raises a one-line TypeError/ValueError.
"""

import os
import tempfile

import tensorflow as tf

from tfbert.atomic import atomic_dir
from tfbert.export.disk_space import explain_full_disk, saved_model_bytes
from tfbert.export.op_check import check_op_rule
from tfbert.export.tf_text_ops import require_tf_text_ops

TEXT = tf.TensorSpec([None], tf.string)
IDS = tf.TensorSpec([None], tf.int32)
# Token segments as TF Model Garden's preprocessor export traces them:
# ragged rank 2 ([batch, words, wordpieces], what `tokenize` returns) or
# ragged rank 1 ([batch, wordpieces], e.g. after `merge_dims(-2, -1)` or from
# another tokenizer); all segments of one call have the same rank.
SEGMENT_SPECS = {
    rank: tf.RaggedTensorSpec([None] * (rank + 1), tf.int32, ragged_rank=rank,
                              row_splits_dtype=tf.int64)
    for rank in (1, 2)
}
# Without a type_vocab_size (a preprocessor built from a vocab alone).
DEFAULT_MAX_SEGMENTS = 3


class _PreprocessorModule(tf.Module):
    def __init__(self, preprocessor, seq_length, assets):
        super().__init__(name="bert_preprocessor")
        self._pre = preprocessor
        self._tokenizer = preprocessor.tokenizer  # tracks its lookup resources
        self.seq_length = seq_length
        self.lower_case = tf.Variable(preprocessor.lower_case, trainable=False, name="lower_case")
        for name, path in assets.items():  # vocab_file (+ merges_file, special_tokens_file)
            setattr(self, name, tf.saved_model.Asset(path))
        special = preprocessor.vocab.special_tokens_dict()

        # === Python-callable functions (TF Hub preprocessor API) ===
        self.tokenize = tf.function(preprocessor.tokenize, input_signature=[TEXT])
        self.tokenize_with_offsets = tf.function(
            preprocessor.tokenize_with_offsets, input_signature=[TEXT]
        )
        self.get_special_tokens_dict = tf.function(
            lambda: {k: tf.constant(v, tf.int32) for k, v in special.items()}, input_signature=[]
        )
        pack = tf.function(
            lambda segments, seq_length=seq_length: preprocessor.bert_pack_inputs(
                segments, seq_length
            )
        )
        # As TF Hub's preprocessors: any seq_length (a scalar tensor, checked
        # in the graph), e.g. `hub.KerasLayer(pre.bert_pack_inputs,
        # arguments=dict(seq_length=64))`, 1..N segments (N: the encoder's
        # type_vocab_size, else 3) of ragged rank 1 or 2.
        max_segments = preprocessor.max_segments or DEFAULT_MAX_SEGMENTS
        # Saved (a plain int attribute is not), for load_preprocessor's checks.
        self.max_segments = tf.Variable(max_segments, trainable=False, name="max_segments")
        for spec in SEGMENT_SPECS.values():
            for count in range(1, max_segments + 1):
                pack.get_concrete_function([spec] * count)
                pack.get_concrete_function([spec] * count, tf.TensorSpec([], tf.int32))
        self.bert_pack_inputs = pack

        # === Serving signatures (dense tensors) ===
        # They call the tokenizer functions above (and this one), so each tokenizer graph
        # is traced and saved once, not once per signature (a third of the export time).
        self._tokenize_flat = tf.function(preprocessor.tokenizer.tokenize_flat,
                                          input_signature=[TEXT])
        self.serve_text = tf.function(
            lambda text: preprocessor.bert_pack_inputs(
                [self._tokenize_flat(_check_batch(text, "serving_default", "text"))]),
            input_signature=[TEXT])
        self.__call__ = self.serve_text
        self.serve_pairs = tf.function(
            lambda text_a, text_b: preprocessor.bert_pack_inputs(
                [self._tokenize_flat(_check_batch(text_a, "pairs", "text_a")),
                 self._tokenize_flat(_check_batch(text_b, "pairs", "text_b"))]),
            input_signature=[TEXT, TEXT])

        def ragged_parts(ids):
            return {
                "token_ids": ids.flat_values,
                "word_row_splits": ids.row_splits,
                "piece_row_splits": ids.values.row_splits,
            }

        self.serve_tokenize = tf.function(
            lambda text: ragged_parts(self.tokenize(_check_batch(text, "tokenize", "text"))),
            input_signature=[TEXT])

        def with_offsets(text):
            text = _check_batch(text, "tokenize_with_offsets", "text")
            ids, starts, limits = self.tokenize_with_offsets(text)
            parts = ragged_parts(ids)
            parts["start_offsets"] = tf.cast(starts.flat_values, tf.int64)
            parts["limit_offsets"] = tf.cast(limits.flat_values, tf.int64)
            return parts

        self.serve_tokenize_with_offsets = tf.function(with_offsets, input_signature=[TEXT])

        def pack_pair(ids_a, row_lengths_a, ids_b, row_lengths_b):
            ids_a, row_lengths_a, ids_b, row_lengths_b = (
                _check_batch(t, "bert_pack_inputs", name, "tf.int32")
                for t, name in ((ids_a, "ids_a"), (row_lengths_a, "row_lengths_a"),
                                (ids_b, "ids_b"), (row_lengths_b, "row_lengths_b")))
            a = tf.RaggedTensor.from_row_lengths(ids_a, tf.cast(row_lengths_a, tf.int64))
            b = tf.RaggedTensor.from_row_lengths(ids_b, tf.cast(row_lengths_b, tf.int64))
            return preprocessor.bert_pack_inputs([a, b], seq_length)

        self.serve_pack = tf.function(pack_pair, input_signature=[IDS, IDS, IDS, IDS])

    def signatures(self):
        return {
            "serving_default": self.serve_text.get_concrete_function(),
            "pairs": self.serve_pairs.get_concrete_function(),
            "tokenize": self.serve_tokenize.get_concrete_function(),
            "tokenize_with_offsets": self.serve_tokenize_with_offsets.get_concrete_function(),
            "bert_pack_inputs": self.serve_pack.get_concrete_function(),
        }


def export_preprocessor(preprocessor, output_dir, seq_length=None):
    """Writes `preprocessor` as a standalone SavedModel, atomically (temp dir
    + rename), after checking the op rule. Returns `output_dir`.

    Example:
    >>> from tfbert.text import BertPreprocessor
    >>> pre = BertPreprocessor(vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]",
    ...                                    "[MASK]", "hi"], seq_length=8)
    >>> import tempfile; out = export_preprocessor(pre, tempfile.mkdtemp() + "/pre")
    >>> load_preprocessor(out)(tf.constant(["hi"]))["input_word_ids"].numpy().tolist()
    [[2, 5, 3, 0, 0, 0, 0, 0]]
    """
    seq_length = int(seq_length or preprocessor.seq_length)
    if seq_length != preprocessor.seq_length:
        # The same tokenizer (WordPiece or byte-level BPE, its special tokens) at
        # another length (the constructor, not from_config: its errors stay one line).
        preprocessor = preprocessor.__class__(
            **{**preprocessor.get_config(), "seq_length": seq_length})
    # The vocab travels as an asset (for people and tools reading the export);
    # the graph itself holds the tokenizer model as a constant.
    with tempfile.TemporaryDirectory(prefix="tfbert-vocab-") as vocab_dir:
        module = _PreprocessorModule(preprocessor, seq_length,
                                     tokenizer_assets(preprocessor, vocab_dir))
        signatures = module.signatures()
        with explain_full_disk(output_dir, lambda: saved_model_bytes(module, signatures)):
            with atomic_dir(output_dir) as tmp:
                tf.saved_model.save(module, tmp, signatures=signatures)
                check_op_rule(tmp)
    return output_dir


def tokenizer_assets(preprocessor, directory):
    """`{attribute: path}` of the tokenizer files written into `directory`:
    `vocab_file` (WordPiece's `vocab.txt`), or for byte-level BPE `vocab_file`
    (`vocab.json`), `merges_file` (`merges.txt`) and `special_tokens_file`."""
    files = preprocessor.checkpoint_tokenizer(directory).get("tokenizer_files")
    if files:
        return {"vocab_file": files["vocab.json"], "merges_file": files["merges.txt"],
                "special_tokens_file": files["special_tokens.json"]}
    path = os.path.join(directory, "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(preprocessor.vocab.tokens) + "\n")
    return {"vocab_file": path}


def _check_batch(tensor, signature, name, dtype="tf.string"):
    """`tensor` after an in-graph check that it is 1-D: a signature's `[None]`
    spec is not enforced when it is called (TF Serving, or
    `tf.saved_model.load(...).signatures[...]`), and a `[2, 2]` batch would
    otherwise fail deep inside the tokenizer with an unrelated message.
    (The rank is read from the shape's values: a rank test is folded away
    by Grappler, which trusts the static `[None]`.)"""
    shape = tf.shape(tensor)
    dims = tf.concat([shape, [-1, -1]], axis=0)  # [n, -1, ...] exactly for rank 1
    one_d = tf.logical_and(dims[0] >= 0, tf.equal(dims[1], -1))
    check = tf.debugging.Assert(one_d, [
        f"{signature}: input {name} must be a 1-D {dtype} batch, shape (batch,); got shape",
        shape])
    with tf.control_dependencies([check]):
        return tf.identity(tensor)


def load_preprocessor(path):
    """Loads an exported preprocessor (registers the tf-text ops first).

    Returns the loaded object behind a thin wrapper whose `__call__`,
    `tokenize`, `tokenize_with_offsets`, `bert_pack_inputs` and `signatures`
    accept lists of str too and give a one-line TypeError/ValueError for a
    wrong dtype, rank, input name or segment count (the raw SavedModel
    functions raise TF's multi-page "could not find matching concrete
    function"); everything else is the loaded object's own.
    """
    require_tf_text_ops()
    if not os.path.isfile(os.path.join(path, "saved_model.pb")):
        raise FileNotFoundError(f"No exported preprocessor at {path} (saved_model.pb missing).")
    return LoadedPreprocessor(tf.saved_model.load(path))


class LoadedPreprocessor:
    """An exported preprocessor with checked inputs (see `load_preprocessor`)."""

    def __init__(self, loaded):
        self._loaded = loaded
        self.signatures = {name: CheckedSignature(name, fn)
                           for name, fn in loaded.signatures.items()}

    def __getattr__(self, name):
        return getattr(self._loaded, name)

    def __call__(self, text):
        return self._loaded(_strings(text, "preprocessor(text)"))

    def tokenize(self, text):
        return self._loaded.tokenize(_strings(text, "tokenize(text)"))

    def tokenize_with_offsets(self, text):
        return self._loaded.tokenize_with_offsets(_strings(text, "tokenize_with_offsets(text)"))

    def bert_pack_inputs(self, segments, seq_length=None):
        """As the exported `bert_pack_inputs`; int64 ids are cast to int32 and
        segments of mixed ragged rank are flattened to rank 1 (the export
        traces one rank per call, as TF Model Garden's)."""
        limit = getattr(self._loaded, "max_segments", None)  # absent in older exports
        segments = _segments(segments, int(limit.numpy()) if limit is not None else
                             DEFAULT_MAX_SEGMENTS)
        if seq_length is None:
            return self._loaded.bert_pack_inputs(segments)
        return self._loaded.bert_pack_inputs(segments, seq_length=tf.cast(seq_length, tf.int32))


class CheckedSignature:
    """A served signature that checks its keyword inputs before calling it:
    unknown or missing names, dtype and rank give one line naming the input."""

    def __init__(self, name, fn):
        self.name, self._fn = name, fn
        self._specs = fn.structured_input_signature[1]

    def __getattr__(self, name):
        return getattr(self._fn, name)

    def __call__(self, **inputs):
        wanted = ", ".join(f"{k} ({_describe(spec)})" for k, spec in sorted(self._specs.items()))
        unknown = sorted(set(inputs) - set(self._specs))
        missing = sorted(set(self._specs) - set(inputs))
        if unknown or missing:
            got = f"unknown input {unknown[0]!r}" if unknown else f"no input {missing[0]!r}"
            raise TypeError(f"{self.name} takes {wanted}; got {got}.")
        return self._fn(**{k: self._tensor(k, v) for k, v in inputs.items()})

    def _tensor(self, key, value):
        spec = self._specs[key]
        if isinstance(value, (list, tuple)) and spec.dtype == tf.string:
            value = _strings(value, f"{self.name} input {key!r}")
        try:
            tensor = tf.convert_to_tensor(value)
        except (TypeError, ValueError):
            raise TypeError(f"{self.name}: input {key!r} must be {_describe(spec)}; got "
                            f"{type(value).__name__}.") from None
        if tensor.dtype != spec.dtype:
            raise TypeError(f"{self.name}: input {key!r} must be {_describe(spec)}; got "
                            f"{tensor.dtype.name} {tensor.shape}.")
        if not spec.shape.is_compatible_with(tensor.shape):
            raise ValueError(f"{self.name}: input {key!r} must be {_describe(spec)}; got "
                             f"shape {tensor.shape}.")
        return tensor


def _describe(spec):
    return f"tf.{spec.dtype.name} {list(spec.shape)}".replace("None", "batch")


def _segments(segments, max_segments):
    if isinstance(segments, (tf.Tensor, tf.RaggedTensor)):
        segments = [segments]
    if not isinstance(segments, (list, tuple)) or not 1 <= len(segments) <= max_segments:
        count = len(segments) if isinstance(segments, (list, tuple)) else type(segments).__name__
        raise ValueError(f"bert_pack_inputs takes a list of 1 to {max_segments} segments; "
                         f"got {count}.")
    out = []
    for i, segment in enumerate(segments):
        if not isinstance(segment, tf.RaggedTensor) or segment.ragged_rank not in (1, 2):
            what = (f"ragged rank {segment.ragged_rank}" if isinstance(segment, tf.RaggedTensor)
                    else type(segment).__name__)
            raise TypeError(f"bert_pack_inputs: segment {i} must be an int RaggedTensor "
                            f"[batch, (wordpieces)] or [batch, (words), (wordpieces)]; got {what}.")
        if not segment.dtype.is_integer:
            raise TypeError(f"bert_pack_inputs: segment {i} must hold integer token ids; got "
                            f"{segment.dtype.name}.")
        out.append(tf.cast(segment.with_row_splits_dtype(tf.int64), tf.int32))
    if len({s.ragged_rank for s in out}) > 1:
        out = [s.merge_dims(1, -1) if s.ragged_rank == 2 else s for s in out]
    return out


def _strings(text, what):
    if isinstance(text, (list, tuple)):
        bad = [i for i, t in enumerate(text) if not isinstance(t, (str, bytes))]
        if bad:
            raise TypeError(f"{what}: item {bad[0]} is {type(text[bad[0]]).__name__}; "
                            "expected str or bytes.")
        return tf.constant(list(text), tf.string, shape=[len(text)])
    text = tf.convert_to_tensor(text)
    if text.dtype != tf.string:
        raise TypeError(f"{what} takes a 1-D tf.string batch, got dtype {text.dtype.name}.")
    if text.shape.rank != 1:
        raise ValueError(f"{what} takes a 1-D tf.string batch [batch], got shape {text.shape}.")
    return text
