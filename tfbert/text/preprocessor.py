"""`BertPreprocessor`: raw strings -> BERT encoder inputs (the TF Hub preprocessor API),
by WordPiece (BERT) or byte-level BPE (RoBERTa)."""

import os

import keras
import numpy as np
import tensorflow as tf

from tfbert import checkpoint
from tfbert.convert import bpe_files
from tfbert.text.byte_level_bpe import ByteLevelBPETokenizer
from tfbert.text.packer import MAX_SEQ_LENGTH, check_packing, pack_inputs
from tfbert.text.tokenizer import BertTokenizer
from tfbert.text.vocab import BPE_SPECIAL_TOKENS, Vocab

BYTE_LEVEL_BPE = "byte_level_bpe"  # checkpoint.TOKENIZERS' name for RoBERTa's tokenizer


@keras.saving.register_keras_serializable(package="tfbert")
class BertPreprocessor(keras.layers.Layer):
    """Tokenizes and packs text into `input_word_ids`, `input_mask`, `input_type_ids`.

    The TF Hub BERT preprocessor API: `__call__(strings)` (or a list of 1..N
    string tensors for pairs), `tokenize`, `tokenize_with_offsets`,
    `bert_pack_inputs(segments, seq_length)`, `get_special_tokens_dict()`.
    Graph ops only, so it runs in `tf.data.Dataset.map`, inside a Keras model
    and in an exported SavedModel.

    Args:
        vocab_file: path of `vocab.txt` (or `vocabulary`: the token list);
            with byte-level BPE, of `vocab.json`.
        lower_case: True for uncased vocabularies (WordPiece only; byte-level
            BPE keeps case).
        seq_length: length of the packed outputs (at most 512).
        truncation: "round_robin" (WordPiece's default), "waterfall" or
            "longest_first" (byte-level BPE's default: transformers'
            `truncation=True`).
        max_segments: most segments per example (the encoder's
            `type_vocab_size`; `from_pretrained` reads it). None: no limit.
        tokenizer_kind: "wordpiece" (BERT: `[CLS] a [SEP] b [SEP]`) or
            "byte_level_bpe" (RoBERTa: transformers' fast RoBERTa tokenizer's
            ids, packed `<s> a </s></s> b </s>` with `<pad>` padding and all
            type ids 0).
        merges_file: byte-level BPE's `merges.txt` (or `merges`: the
            `(a, b)` pairs by rank).
        special_tokens: byte-level BPE's special tokens as the text may hold
            them (`<mask>`, ...; see `ByteLevelBPETokenizer`). None: RoBERTa's.

    `from_pretrained` reads the checkpoint's `tokenizer` and picks the kind.

    Inputs may be tf.string tensors, Python lists of str/bytes or NumPy
    string arrays; a list of such batches is a list of segments.

    Example:
    >>> pre = BertPreprocessor(vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]",
    ...                                    "[MASK]", "hi", "there"], seq_length=6)
    >>> pre(tf.constant(["Hi there"]))["input_word_ids"].numpy().tolist()
    [[2, 5, 6, 3, 0, 0]]
    >>> pre([tf.constant(["hi"]), tf.constant(["there"])])["input_type_ids"].numpy().tolist()
    [[0, 0, 0, 1, 1, 0]]
    >>> pre(["hi", b"there"])["input_mask"].numpy().tolist()
    [[1, 1, 1, 0, 0, 0], [1, 1, 1, 0, 0, 0]]
    >>> pre(["hi", None])
    Traceback (most recent call last):
    TypeError: BertPreprocessor: text 1 is None; expected str or bytes.
    """

    def __init__(
        self,
        vocab_file=None,
        lower_case=True,
        seq_length=128,
        truncation=None,
        vocabulary=None,
        max_seq_length=MAX_SEQ_LENGTH,
        max_segments=None,
        tokenizer_kind="wordpiece",
        merges_file=None,
        merges=None,
        special_tokens=None,
        **kwargs,
    ):
        kwargs.setdefault("trainable", False)
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        if tokenizer_kind not in checkpoint.TOKENIZERS:
            raise ValueError(f"tokenizer_kind must be one of {checkpoint.TOKENIZERS}, got "
                             f"{tokenizer_kind!r}.")
        self.tokenizer_kind = tokenizer_kind
        if truncation is None:
            truncation = "longest_first" if tokenizer_kind == BYTE_LEVEL_BPE else "round_robin"
        check_packing(seq_length, truncation, max_seq_length)
        if tokenizer_kind == BYTE_LEVEL_BPE:
            self.tokenizer = byte_level_bpe_tokenizer(vocab_file, vocabulary, merges_file, merges,
                                                      special_tokens)
            self.vocab = Vocab(self.tokenizer.tokens, source=vocab_file or "<vocabulary>",
                               special_tokens=BPE_SPECIAL_TOKENS)
            self.layout = "roberta"
            lower_case = False
        else:
            self.tokenizer = BertTokenizer(vocab_file=vocab_file, vocabulary=vocabulary,
                                           lower_case=lower_case, name="tokenizer")
            self.vocab = self.tokenizer.vocab
            self.layout = "bert"
        self.lower_case = bool(lower_case)
        self.seq_length = int(seq_length)
        self.truncation = truncation
        self.max_seq_length = int(max_seq_length)
        self.max_segments = int(max_segments) if max_segments else None

    @classmethod
    def from_pretrained(cls, checkpoint_dir, **kwargs):
        """From a tfbert checkpoint directory: its `vocab.txt` and `lower_case`
        flag, or for a byte-level BPE checkpoint (a converted RoBERTa) its
        `vocab.json`, `merges.txt` and `special_tokens.json` (when there)."""
        config_path, meta = checkpoint.read_meta(checkpoint_dir)
        kind = meta.get("tokenizer", "wordpiece")
        if kind not in checkpoint.TOKENIZERS:
            raise ValueError(f"{config_path}: tokenizer {kind!r} is not one of "
                             f"{checkpoint.TOKENIZERS}.")
        encoder = meta.get("encoder") or {}
        if encoder.get("max_position_embeddings"):
            kwargs.setdefault("max_seq_length", int(encoder["max_position_embeddings"]))
        if kind == BYTE_LEVEL_BPE:
            vocab_file, merges_file = (os.path.join(checkpoint_dir, name)
                                       for name in checkpoint.BPE_FILES)
            for path in (vocab_file, merges_file):
                if not os.path.isfile(path):
                    raise FileNotFoundError(f"Not a byte-level BPE checkpoint: {path} is missing "
                                            f"({config_path} says tokenizer {kind!r}).")
            special_file = os.path.join(checkpoint_dir, checkpoint.BPE_SPECIAL_FILE)
            if os.path.isfile(special_file):
                kwargs.setdefault("special_tokens", bpe_files.read_special_tokens(special_file))
            # A text or a pair, as transformers' RoBERTa (its type_vocab_size is 1).
            kwargs.setdefault("max_segments", 2)
            return cls(vocab_file=vocab_file, merges_file=merges_file, tokenizer_kind=kind,
                       **kwargs)
        vocab_file = os.path.join(checkpoint_dir, checkpoint.VOCAB_FILE)
        if not os.path.isfile(vocab_file):
            raise FileNotFoundError(f"Not a tfbert checkpoint: {vocab_file} is missing.")
        kwargs.setdefault("lower_case", bool(meta.get("lower_case", True)))
        kwargs.setdefault("max_segments", int(encoder.get("type_vocab_size", 2)))
        return cls(vocab_file=vocab_file, **kwargs)

    # === TF Hub preprocessor API ===

    def __call__(self, inputs, *args, **kwargs):
        # Keras accepts only tensors as positional inputs; users pass lists.
        # Checked here, not in call(): Keras wraps errors raised in call()
        # in a multi-line report.
        inputs = as_segments(inputs)
        self._check_segments(list(inputs) if isinstance(inputs, (list, tuple)) else [inputs])
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs):
        segments = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        return self.bert_pack_inputs([self.tokenizer.tokenize_flat(s) for s in segments])

    def _check_segments(self, segments):
        if self.max_segments and len(segments) > self.max_segments:
            limit = ("RoBERTa's packing takes a text or a pair" if self.layout == "roberta" else
                     f"the encoder has type_vocab_size={self.max_segments}")
            raise ValueError(f"BertPreprocessor: {len(segments)} segments, but {limit} (at "
                             f"most {self.max_segments} segments).")
        sizes = [s.shape[0] for s in segments]
        known = {n for n in sizes if n is not None}
        if len(known) > 1:
            raise ValueError(f"BertPreprocessor: segments have different batch sizes {sizes}; "
                             "each segment needs one string per example.")

    def tokenize(self, strings):
        """int32 RaggedTensor `[batch, (words), (wordpieces)]`."""
        return self.tokenizer.tokenize(strings)

    def tokenize_with_offsets(self, strings):
        """`(ids, starts, limits)`, each `[batch, (words), (wordpieces)]`; byte
        offsets of every wordpiece into the original string (byte-level BPE:
        of every token, its leading space left out, as transformers'
        `trim_offsets`)."""
        if self.tokenizer_kind == BYTE_LEVEL_BPE:
            return self.tokenizer.tokenize_with_byte_offsets(strings)
        return self.tokenizer.tokenize_with_offsets(strings)

    def bert_pack_inputs(self, segments, seq_length=None):
        """Packs tokenized segments (a list of 1..N ragged id tensors)."""
        if self.max_segments and len(segments) > self.max_segments:
            self._check_segments(segments)
        return pack_inputs(
            segments,
            self.seq_length if seq_length is None else seq_length,
            start_of_sequence_id=self.vocab.cls_id,
            end_of_segment_id=self.vocab.sep_id,
            padding_id=self.vocab.pad_id,
            truncation=self.truncation,
            max_seq_length=self.max_seq_length,
            layout=self.layout,
        )

    def get_special_tokens_dict(self):
        """`vocab_size`, `start_of_sequence_id`, `end_of_segment_id`,
        `padding_id`, `mask_id` as int32 scalar tensors (as TF Hub)."""
        return {k: tf.constant(v, tf.int32) for k, v in self.vocab.special_tokens_dict().items()}

    def checkpoint_tokenizer(self, tmp_dir):
        """`checkpoint.save_checkpoint`'s tokenizer keywords for this
        preprocessor (none for WordPiece); byte-level BPE's `vocab.json`,
        `merges.txt` and `special_tokens.json` are written into `tmp_dir`,
        which must outlive the call."""
        if self.tokenizer_kind != BYTE_LEVEL_BPE:
            return {}
        bpe_files.write_bpe_files(tmp_dir, self.vocab.tokens, self.tokenizer.merges)
        bpe_files.write_special_tokens(os.path.join(tmp_dir, checkpoint.BPE_SPECIAL_FILE),
                                       self.tokenizer.special_tokens)
        return {"tokenizer": BYTE_LEVEL_BPE, "tokenizer_files": {
            name: os.path.join(tmp_dir, name)
            for name in checkpoint.BPE_FILES + (checkpoint.BPE_SPECIAL_FILE,)}}

    # === Tokens as strings ===

    def id_to_token(self, ids):
        return self.tokenizer.id_to_token(ids)

    def token_to_id(self, tokens):
        return self.tokenizer.token_to_id(tokens)

    def wordpieces(self, strings):
        """Token strings `[batch, (words), (pieces)]` (byte-level BPE: "Ġthe")."""
        return self.tokenizer.id_to_token(self.tokenize(strings))

    def detokenize(self, ids):
        if self.tokenizer_kind == BYTE_LEVEL_BPE:
            v = self.vocab
            return self.tokenizer.detokenize(ids, drop_ids=(v.pad_id, v.cls_id, v.sep_id,
                                                            v.mask_id))
        return self.tokenizer.detokenize(ids)

    # === Keras plumbing ===

    def build(self, input_shape=None):
        self.built = True  # no weights: the tables are constants

    def compute_output_spec(self, inputs):
        first = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        shape = (first.shape[0], self.seq_length)
        return {
            name: keras.KerasTensor(shape, dtype="int32")
            for name in ("input_word_ids", "input_mask", "input_type_ids")
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                # The token list, not the path: a saved .keras model must not
                # depend on a vocab file staying where it was.
                "vocabulary": list(self.vocab.tokens),
                "lower_case": self.lower_case,
                "seq_length": self.seq_length,
                "truncation": self.truncation,
                "max_seq_length": self.max_seq_length,
                "max_segments": self.max_segments,
            }
        )
        if self.tokenizer_kind == BYTE_LEVEL_BPE:
            config.update({"tokenizer_kind": self.tokenizer_kind,
                           "merges": [list(merge) for merge in self.tokenizer.merges],
                           "special_tokens": self.tokenizer.special_tokens})
        return config


def byte_level_bpe_tokenizer(vocab_file, vocabulary, merges_file, merges, special_tokens=None):
    """A `ByteLevelBPETokenizer` from files or lists (one of each pair)."""
    if (vocab_file is None) == (vocabulary is None):
        raise ValueError("byte_level_bpe needs exactly one of vocab_file (vocab.json) and "
                         "vocabulary.")
    if (merges_file is None) == (merges is None):
        raise ValueError("byte_level_bpe needs exactly one of merges_file (merges.txt) and "
                         "merges.")
    if vocab_file is not None:
        vocabulary = bpe_files.read_bpe_vocab(os.fspath(vocab_file))
    if merges_file is not None:
        merges = bpe_files.read_merges(os.fspath(merges_file))
    return ByteLevelBPETokenizer(vocabulary, [tuple(merge) for merge in merges],
                                 special_tokens=special_tokens,
                                 name="tokenizer")


def as_segments(inputs):
    """Tensors from what users pass: a tf.string batch stays as it is; a
    Python list of str/bytes or a NumPy string array becomes one; a list of
    batches becomes a list of segments. Anything else in a list is an error
    naming the item."""
    if isinstance(inputs, np.ndarray):
        return _string_batch(inputs.tolist())
    if isinstance(inputs, (tf.Tensor, tf.RaggedTensor)):
        # Checked before Keras sees it: the layer's int32 dtype policy would
        # cast a float batch to int32 and the error would name the wrong type.
        if inputs.dtype != tf.string:
            raise TypeError(f"BertPreprocessor takes tf.string texts, got a tensor of dtype "
                            f"{inputs.dtype.name} and shape {inputs.shape}.")
        # [batch, 1] is keras.Input(shape=(1,)); any other rank 2 is a mistake
        # (pairs are a list of two batches), caught here rather than inside
        # call(), where Keras would wrap the message in a multi-line report.
        rank = inputs.shape.rank
        if isinstance(inputs, tf.RaggedTensor) or rank not in (None, 1, 2) or (
                rank == 2 and inputs.shape[1] not in (None, 1)):
            raise ValueError(f"BertPreprocessor takes a 1-D batch of strings [batch], got "
                             f"{'a ragged tensor' if isinstance(inputs, tf.RaggedTensor) else 'shape'}"
                             f" {inputs.shape}; pass pairs as a list of batches [texts_a, texts_b].")
        return inputs
    if not isinstance(inputs, (list, tuple)):
        return inputs
    if inputs and all(_is_batch(item) for item in inputs):
        return [as_segments(item) for item in inputs]
    return _string_batch(inputs)


def _is_batch(item):
    return isinstance(item, (list, tuple, np.ndarray, tf.Tensor, tf.RaggedTensor,
                             keras.KerasTensor))


def _string_batch(items):
    for i, item in enumerate(items):
        if not isinstance(item, (str, bytes)):
            what = "None" if item is None else f"{type(item).__name__} {item!r:.40}"
            raise TypeError(f"BertPreprocessor: text {i} is {what}; expected str or bytes.")
    return tf.constant(list(items), tf.string, shape=[len(items)])
