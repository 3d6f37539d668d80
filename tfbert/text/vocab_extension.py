"""Domain words into a tfbert checkpoint's vocabulary, for continued pretraining.

`extend_vocab(checkpoint_dir, output_dir, ...)` takes words from a list, a
words file, or the most frequent words of a domain corpus that WordPiece
splits into pieces, and writes a new tfbert checkpoint directory with them as
whole tokens: in the vocabulary's `[unusedN]` slots (`mode="unused"`, the
vocab size unchanged) or appended to it (`mode="grow"`, with the tied
embeddings and the MLM output bias). A new word's embedding row (and MLM
output bias) starts as the mean of the rows of the pieces it used to be
split into, so the model's view of the word is unchanged at step 0.
`tools/extend_vocab.py` is this call.
"""

import collections
import os
import re

import numpy as np
import tensorflow as tf

from tfbert import checkpoint
from tfbert.text.corpus_files import expand_files
from tfbert.text.tokenizer import BertTokenizer

MODES = ("unused", "grow")
UNUSED = re.compile(r"\[unused\d+\]")
BATCH = 1024


def word_pieces(tokenizer, texts):
    """For each text, its words as lists of piece ids (normalized as the model sees them)."""
    out = []
    for start in range(0, len(texts), BATCH):
        out.extend(tokenizer.tokenize(tf.constant(texts[start:start + BATCH])).to_list())
    return out


def piece_text(tokens, pieces):
    """The word that the piece ids spell (`##` continuation marks dropped).

    >>> piece_text(["[PAD]", "doc", "##st", "##ring"], [1, 2, 3])
    'docstring'
    """
    return "".join(tokens[p][2:] if tokens[p].startswith("##") else tokens[p] for p in pieces)


def words_from_list(tokenizer, words):
    """`{word: old piece ids}` for the given words; errors name a bad word."""
    tokens = tokenizer.vocab.tokens
    found = {}
    for word, split in zip(words, word_pieces(tokenizer, words)):
        if len(split) != 1:
            raise ValueError(
                f"{word!r} is not one word for the tokenizer (it splits at punctuation or "
                f"spaces into {len(split)} words); add its parts separately."
            )
        pieces = split[0]
        if tokenizer.vocab.unk_id in pieces:
            raise ValueError(f"{word!r} has characters the vocabulary lacks ([UNK]).")
        if len(pieces) > 1:
            found.setdefault(piece_text(tokens, pieces), pieces)
    return found


def words_from_corpus(tokenizer, patterns, max_new_words, min_count):
    """The most frequent words of the corpus that are split into pieces."""
    tokens = tokenizer.vocab.tokens
    counts = collections.Counter()
    for path in expand_files(patterns, what="corpus file"):
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
        for words in word_pieces(tokenizer, lines):
            counts.update(tuple(p) for p in words if len(p) > 1 and tokenizer.vocab.unk_id not in p)
    chosen = [p for p, n in counts.most_common() if n >= min_count][:max_new_words]
    return {piece_text(tokens, p): list(p) for p in chosen}


def extend(ckpt, tokens, new_words, mode):
    """New (tokens, encoder weights, head weights, config) with `new_words` added."""
    tokens = list(tokens)
    encoder = dict(ckpt.encoder_weights())
    heads = {h: dict(ckpt.prefixed_weights(h)) for h in ("mlm", "nsp") if ckpt.prefixed_weights(h)}
    key = "embeddings/word_embeddings/embeddings"
    embeddings = encoder[key].copy()
    bias = heads["mlm"]["output_bias"].copy() if "mlm" in heads else None
    words = [w for w in new_words if w not in set(tokens)]
    if mode == "unused":
        slots = [i for i, t in enumerate(tokens) if UNUSED.fullmatch(t)]
        if len(slots) < len(words):
            raise ValueError(
                f"{ckpt.vocab_file} has {len(slots)} [unusedN] slots but {len(words)} new "
                "words; use --mode=grow or fewer words."
            )
        ids = slots[:len(words)]
    else:
        ids = list(range(len(tokens), len(tokens) + len(words)))
        tokens.extend([None] * len(words))
        embeddings = np.concatenate([embeddings, np.zeros((len(words), embeddings.shape[1]),
                                                          embeddings.dtype)])
        if bias is not None:
            bias = np.concatenate([bias, np.zeros(len(words), bias.dtype)])
    for word, i in zip(words, ids):
        pieces = new_words[word]
        tokens[i] = word
        embeddings[i] = embeddings[pieces].mean(axis=0)
        if bias is not None:
            bias[i] = bias[pieces].mean()
    encoder[key] = embeddings
    if bias is not None:
        heads["mlm"]["output_bias"] = bias
    config = ckpt.config.replace(vocab_size=len(tokens))
    return tokens, encoder, heads, config, dict(zip(words, ids))


def extend_vocab(checkpoint_dir, output_dir, words=(), words_file=None, corpus=None,
                 max_new_words=100, min_count=5, mode="unused"):
    """Writes `output_dir`, the checkpoint at `checkpoint_dir` with the new words
    (`words`, the lines of `words_file`, and at most `max_new_words` words met at
    least `min_count` times in the `corpus` files or globs) added in `mode`
    (`MODES`); prints one line per word and a summary, and returns `{word: id}`."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {list(MODES)}, got {mode!r}.")
    ckpt = checkpoint.read_checkpoint(checkpoint_dir)
    tokenizer = BertTokenizer(vocab_file=ckpt.vocab_file, lower_case=ckpt.lower_case)
    words = [w.strip() for w in words if w.strip()]
    if words_file:
        if not os.path.isfile(words_file):
            raise FileNotFoundError(f"Words file not found: {words_file}")
        with open(words_file, encoding="utf-8") as f:
            words += [line.strip() for line in f if line.strip()]
    new_words = words_from_list(tokenizer, words) if words else {}
    if corpus:
        mined = words_from_corpus(tokenizer, corpus, max_new_words, min_count)
        new_words.update({w: p for w, p in mined.items() if w not in new_words})
    if not new_words:
        raise ValueError("No new words: give --words, --words_file or --corpus "
                         "(words already in the vocabulary are skipped).")
    tokens, encoder, heads, config, added = extend(ckpt, tokenizer.vocab.tokens, new_words, mode)
    checkpoint.save_checkpoint(
        output_dir, config, encoder, tokens, ckpt.lower_case, head_weights=heads,
        source=f"extend_vocab({mode}, {len(added)} words) of {ckpt.source or checkpoint_dir}",
    )
    for word, i in added.items():
        old = " ".join(tokenizer.vocab.tokens[p] for p in new_words[word])
        print(f"  {i:6d} {word!r} (was {old})")
    print(f"Added {len(added)} words ({mode}); vocab size {config.vocab_size}; wrote {output_dir}")
    return added
