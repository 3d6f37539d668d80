"""`BertPreprocessor`: raw strings -> BERT encoder inputs (the TF Hub preprocessor API)."""

import json
import os

import keras
import tensorflow as tf

from tfbert.text.packer import MAX_SEQ_LENGTH, TRUNCATIONS, pack_inputs
from tfbert.text.tokenizer import BertTokenizer


@keras.saving.register_keras_serializable(package="tfbert")
class BertPreprocessor(keras.layers.Layer):
    """Tokenizes and packs text into `input_word_ids`, `input_mask`, `input_type_ids`.

    The TF Hub BERT preprocessor API: `__call__(strings)` (or a list of 1..N
    string tensors for pairs), `tokenize`, `tokenize_with_offsets`,
    `bert_pack_inputs(segments, seq_length)`, `get_special_tokens_dict()`.
    Graph ops only, so it runs in `tf.data.Dataset.map`, inside a Keras model
    and in an exported SavedModel.

    Args:
        vocab_file: path of `vocab.txt` (or `vocabulary`: the token list).
        lower_case: True for uncased vocabularies.
        seq_length: length of the packed outputs (at most 512).
        truncation: "round_robin" (default) or "waterfall".

    Example:
    >>> pre = BertPreprocessor.from_pretrained("checkpoints/minilm")  # doctest: +SKIP
    >>> pre = BertPreprocessor(vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]",
    ...                                    "[MASK]", "hi", "there"], seq_length=6)
    >>> pre(tf.constant(["Hi there"]))["input_word_ids"].numpy().tolist()
    [[2, 5, 6, 3, 0, 0]]
    >>> pre([tf.constant(["hi"]), tf.constant(["there"])])["input_type_ids"].numpy().tolist()
    [[0, 0, 0, 1, 1, 0]]
    """

    def __init__(
        self,
        vocab_file=None,
        lower_case=True,
        seq_length=128,
        truncation="round_robin",
        vocabulary=None,
        max_seq_length=MAX_SEQ_LENGTH,
        **kwargs,
    ):
        kwargs.setdefault("trainable", False)
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        if truncation not in TRUNCATIONS:
            raise ValueError(f"truncation must be one of {TRUNCATIONS}, got {truncation!r}.")
        if not 2 <= int(seq_length) <= int(max_seq_length):
            raise ValueError(
                f"seq_length={seq_length} must be in [2, {max_seq_length}] "
                f"(the encoder's max_position_embeddings)."
            )
        self.tokenizer = BertTokenizer(
            vocab_file=vocab_file, vocabulary=vocabulary, lower_case=lower_case, name="tokenizer"
        )
        self.vocab = self.tokenizer.vocab
        self.lower_case = bool(lower_case)
        self.seq_length = int(seq_length)
        self.truncation = truncation
        self.max_seq_length = int(max_seq_length)

    @classmethod
    def from_pretrained(cls, checkpoint_dir, **kwargs):
        """From a tfbert checkpoint directory: its `vocab.txt` and `lower_case` flag."""
        config_path = os.path.join(checkpoint_dir, "config.json")
        vocab_file = os.path.join(checkpoint_dir, "vocab.txt")
        for path in (config_path, vocab_file):
            if not os.path.isfile(path):
                raise FileNotFoundError(f"Not a tfbert checkpoint: {path} is missing.")
        try:
            with open(config_path, encoding="utf-8") as f:
                meta = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{config_path}: not valid JSON: {e}") from None
        if not isinstance(meta, dict) or meta.get("format") != "tfbert-checkpoint":
            # E.g. a Hugging Face directory: its lower-casing would be guessed.
            raise ValueError(
                f"{config_path}: not a tfbert checkpoint config (no format='tfbert-checkpoint'); "
                "convert it first with tools/convert_checkpoint.py."
            )
        kwargs.setdefault("lower_case", bool(meta.get("lower_case", True)))
        max_positions = (meta.get("encoder") or {}).get("max_position_embeddings")
        if max_positions:
            kwargs.setdefault("max_seq_length", int(max_positions))
        return cls(vocab_file=vocab_file, **kwargs)

    # === TF Hub preprocessor API ===

    def call(self, inputs):
        segments = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        return self.bert_pack_inputs([self.tokenize(s) for s in segments])

    def tokenize(self, strings):
        """int32 RaggedTensor `[batch, (words), (wordpieces)]`."""
        return self.tokenizer.tokenize(strings)

    def tokenize_with_offsets(self, strings):
        """`(ids, starts, limits)`, each `[batch, (words), (wordpieces)]`; byte
        offsets of every wordpiece into the original string."""
        return self.tokenizer.tokenize_with_offsets(strings)

    def bert_pack_inputs(self, segments, seq_length=None):
        """Packs tokenized segments (a list of 1..N ragged id tensors)."""
        return pack_inputs(
            segments,
            seq_length or self.seq_length,
            start_of_sequence_id=self.vocab.cls_id,
            end_of_segment_id=self.vocab.sep_id,
            padding_id=self.vocab.pad_id,
            truncation=self.truncation,
            max_seq_length=self.max_seq_length,
        )

    def get_special_tokens_dict(self):
        """`vocab_size`, `start_of_sequence_id`, `end_of_segment_id`,
        `padding_id`, `mask_id` as int32 scalar tensors (as TF Hub)."""
        return {k: tf.constant(v, tf.int32) for k, v in self.vocab.special_tokens_dict().items()}

    # === Tokens as strings ===

    def id_to_token(self, ids):
        return self.tokenizer.id_to_token(ids)

    def token_to_id(self, tokens):
        return self.tokenizer.token_to_id(tokens)

    def wordpieces(self, strings):
        return self.tokenizer.wordpieces(strings)

    def detokenize(self, ids):
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
            }
        )
        return config
