"""`Vocab`: a WordPiece vocabulary file with the BERT special tokens."""

import os

from tfbert import config_loader

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# RoBERTa's (byte-level BPE) in the same roles: pad, unk, start, separator, mask.
BPE_SPECIAL_TOKENS = ("<pad>", "<unk>", "<s>", "</s>", "<mask>")


class Vocab:
    """Tokens of a `vocab.txt` (one per line; the line number is the id).

    Attributes: `tokens` (list), `vocab_size`, and the special ids `pad_id`,
    `unk_id`, `cls_id`, `sep_id`, `mask_id` (of `special_tokens`, in that
    order: BERT's, or `BPE_SPECIAL_TOKENS` for a byte-level BPE vocabulary).

    Example:
    >>> vocab = Vocab(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello"])
    >>> vocab.cls_id, vocab.token_to_id("hello"), vocab.id_to_token(5)
    (2, 5, 'hello')
    """

    def __init__(self, tokens, source="<vocabulary>", special_tokens=SPECIAL_TOKENS):
        tokens = list(tokens)
        self.source = source
        index = {}
        for i, token in enumerate(tokens):
            if not isinstance(token, str) or not token:
                raise ValueError(f"{source}: line {i + 1}: empty or non-string token {token!r}.")
            if token in index:
                raise ValueError(
                    f"{source}: line {i + 1}: duplicate token {token!r} "
                    f"(first on line {index[token] + 1})."
                )
            index[token] = i
        missing = [t for t in special_tokens if t not in index]
        if missing:
            kind = "BERT" if tuple(special_tokens) == SPECIAL_TOKENS else "byte-level BPE"
            raise ValueError(
                f"{source}: the vocabulary lacks the {kind} special token(s) {missing}; "
                f"a {kind} vocab needs all of {list(special_tokens)}."
            )
        self.tokens = tokens
        self._index = index
        self.vocab_size = len(tokens)
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (
            index[t] for t in special_tokens)

    def token_to_id(self, token):
        """Id of `token`, or `unk_id` when it is not in the vocabulary."""
        return self._index.get(token, self.unk_id)

    def id_to_token(self, token_id):
        if not 0 <= int(token_id) < self.vocab_size:
            raise ValueError(f"Token id {token_id} is outside the vocabulary [0, {self.vocab_size}).")
        return self.tokens[int(token_id)]

    def special_tokens_dict(self):
        """The TF Hub `get_special_tokens_dict()` values, as Python ints."""
        return {
            "vocab_size": self.vocab_size,
            "start_of_sequence_id": self.cls_id,
            "end_of_segment_id": self.sep_id,
            "padding_id": self.pad_id,
            "mask_id": self.mask_id,
        }

    def __len__(self):
        return self.vocab_size


def load_vocab(path):
    """Reads a `vocab.txt` into a `Vocab`; errors name the file and line."""
    path = os.fspath(config_loader.check_path(path, "vocab_file"))
    return Vocab(config_loader.vocab_tokens(path), source=path)


def learn_vocab(texts, vocab_size, lower_case=True, max_unique_chars=1000, batch_size=1024,
                num_iterations=4, min_count=2):
    """Learns a WordPiece vocabulary (list of tokens) from an iterable of strings.

    Words come from our reference-exact `BertNormalizer`, so the vocab fits
    the tokenizer that will use it; the WordPiece learning is tf-text's
    (`wordpiece_tokenizer_learner_lib`, the engine of `bert_vocab_from_dataset`).
    The BERT special tokens come first: [PAD]=0, [UNK]=1, [CLS]=2, [SEP]=3, [MASK]=4.
    """
    import collections

    import tensorflow as tf
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    from tfbert.text.normalizer import BertNormalizer

    if vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size={vocab_size} must exceed the {len(SPECIAL_TOKENS)} special tokens.")
    normalizer = BertNormalizer(lower_case)
    split = tf.function(lambda batch: normalizer.split_words(batch).word_strings)
    counts = collections.Counter()
    batch = []

    def flush():
        if batch:
            counts.update(split(tf.constant(batch)).numpy().tolist())
            batch.clear()

    for text in texts:
        batch.append(text)
        if len(batch) == batch_size:
            flush()
    flush()
    if not counts:
        raise ValueError("learn_vocab: the input texts hold no words.")
    words = {w.decode("utf-8"): c for w, c in counts.items() if c >= min_count or len(w) <= 4}
    tokens = learner.learn(
        words,
        vocab_size,
        list(SPECIAL_TOKENS),
        lower_thresh=1,
        num_iterations=num_iterations,
        max_unique_chars=max_unique_chars,
        max_token_length=50,
    )
    return [t for t in tokens if t]
