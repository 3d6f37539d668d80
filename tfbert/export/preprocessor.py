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
"""

import os
import shutil

import tensorflow as tf

from tfbert.checkpoint import atomic_dir
from tfbert.export.op_check import check_op_rule
from tfbert.export.tf_text_ops import require_tf_text_ops

TEXT = tf.TensorSpec([None], tf.string)
IDS = tf.TensorSpec([None], tf.int32)
SEGMENT = tf.RaggedTensorSpec([None, None, None], tf.int32, ragged_rank=2, row_splits_dtype=tf.int64)


class _PreprocessorModule(tf.Module):
    def __init__(self, preprocessor, seq_length, vocab_path):
        super().__init__(name="bert_preprocessor")
        self._pre = preprocessor
        self._tokenizer = preprocessor.tokenizer  # tracks its lookup resources
        self.seq_length = seq_length
        self.lower_case = tf.Variable(preprocessor.lower_case, trainable=False, name="lower_case")
        self.vocab_file = tf.saved_model.Asset(vocab_path)
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
        # arguments=dict(seq_length=64))`, and 1..N segments (N: the
        # encoder's type_vocab_size; 3 when the preprocessor does not know it).
        for count in range(1, (preprocessor.max_segments or 3) + 1):
            pack.get_concrete_function([SEGMENT] * count)
            pack.get_concrete_function([SEGMENT] * count, tf.TensorSpec([], tf.int32))
        self.bert_pack_inputs = pack

        # === Serving signatures (dense tensors) ===
        self.serve_text = tf.function(lambda text: preprocessor(text), input_signature=[TEXT])
        self.__call__ = self.serve_text
        self.serve_pairs = tf.function(
            lambda text_a, text_b: preprocessor([text_a, text_b]), input_signature=[TEXT, TEXT]
        )

        def ragged_parts(ids):
            return {
                "token_ids": ids.flat_values,
                "word_row_splits": ids.row_splits,
                "piece_row_splits": ids.values.row_splits,
            }

        self.serve_tokenize = tf.function(
            lambda text: ragged_parts(preprocessor.tokenize(text)), input_signature=[TEXT]
        )

        def with_offsets(text):
            ids, starts, limits = preprocessor.tokenize_with_offsets(text)
            parts = ragged_parts(ids)
            parts["start_offsets"] = tf.cast(starts.flat_values, tf.int64)
            parts["limit_offsets"] = tf.cast(limits.flat_values, tf.int64)
            return parts

        self.serve_tokenize_with_offsets = tf.function(with_offsets, input_signature=[TEXT])

        def pack_pair(ids_a, row_lengths_a, ids_b, row_lengths_b):
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
        preprocessor = preprocessor.__class__(
            vocabulary=preprocessor.vocab.tokens,
            lower_case=preprocessor.lower_case,
            seq_length=seq_length,
            truncation=preprocessor.truncation,
            max_seq_length=preprocessor.max_seq_length,
        )
    with atomic_dir(output_dir) as tmp:
        # The vocab travels as an asset (for people and tools reading the
        # export); the graph itself holds the tokenizer model as a constant.
        os.makedirs(os.path.join(tmp, "vocab"))
        vocab_path = os.path.join(tmp, "vocab", "vocab.txt")
        with open(vocab_path, "w", encoding="utf-8") as f:
            f.write("\n".join(preprocessor.vocab.tokens) + "\n")
        module = _PreprocessorModule(preprocessor, seq_length, vocab_path)
        save_dir = os.path.join(tmp, "saved_model")
        tf.saved_model.save(module, save_dir, signatures=module.signatures())
        shutil.rmtree(os.path.join(tmp, "vocab"))
        for name in os.listdir(save_dir):
            shutil.move(os.path.join(save_dir, name), os.path.join(tmp, name))
        os.rmdir(save_dir)
        check_op_rule(tmp)
    return output_dir


def load_preprocessor(path):
    """Loads an exported preprocessor (registers the tf-text ops first).

    Returns the loaded object behind a thin wrapper whose `__call__`,
    `tokenize` and `tokenize_with_offsets` accept lists of str too and give
    a one-line error for non-strings or a wrong rank (the raw SavedModel
    functions raise TF's multi-page "could not find matching concrete
    function"); everything else (`bert_pack_inputs`, `signatures`, ...) is the
    loaded object's own.
    """
    require_tf_text_ops()
    if not os.path.isfile(os.path.join(path, "saved_model.pb")):
        raise FileNotFoundError(f"No exported preprocessor at {path} (saved_model.pb missing).")
    return LoadedPreprocessor(tf.saved_model.load(path))


class LoadedPreprocessor:
    """An exported preprocessor with checked string inputs (see `load_preprocessor`)."""

    def __init__(self, loaded):
        self._loaded = loaded

    def __getattr__(self, name):
        return getattr(self._loaded, name)

    def __call__(self, text):
        return self._loaded(_strings(text, "preprocessor(text)"))

    def tokenize(self, text):
        return self._loaded.tokenize(_strings(text, "tokenize(text)"))

    def tokenize_with_offsets(self, text):
        return self._loaded.tokenize_with_offsets(_strings(text, "tokenize_with_offsets(text)"))


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
