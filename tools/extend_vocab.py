"""Adds domain words to a tfbert checkpoint's vocabulary for continued pretraining.

    # Put the 100 most frequent words of a domain corpus that WordPiece splits
    # into pieces into the [unusedN] slots (vocab size unchanged):
    python tools/extend_vocab.py --checkpoint_dir=ckpt/minilm --output_dir=ckpt/minilm_med \
        --corpus='med/*.txt' --max_new_words=100 --mode=unused

    # Or grow the vocab (and the tied embeddings, and the MLM output bias):
    python tools/extend_vocab.py --checkpoint_dir=ckpt/minilm --output_dir=ckpt/minilm_med \
        --words=myocarditis,troponin --mode=grow

A new word's embedding row (and MLM output bias) starts as the mean of the
rows of the pieces it used to be split into, so the model's view of the
word is unchanged at step 0. The output is a tfbert checkpoint directory;
continue pretraining it with `tools/pretrain.py --init_checkpoint=...`.
"""

import collections
import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags

flags.DEFINE_string("checkpoint_dir", None, "tfbert checkpoint directory to extend.")
flags.DEFINE_string("output_dir", None, "Where to write the extended checkpoint.")
flags.DEFINE_list("words", [], "Words to add (comma-separated).")
flags.DEFINE_string("words_file", None, "File with words to add, one per line.")
flags.DEFINE_string("corpus", None, "Domain text files (globs, comma-separated) to mine words from.")
flags.DEFINE_integer("max_new_words", 100, "With --corpus: at most this many words.")
flags.DEFINE_integer("min_count", 5, "With --corpus: a word must occur this often.")
flags.DEFINE_enum("mode", "unused", ["unused", "grow"],
                  "unused: fill [unusedN] slots (size unchanged); grow: append to the vocab.")
FLAGS = flags.FLAGS

UNUSED = re.compile(r"\[unused\d+\]")
BATCH = 1024


def word_pieces(tokenizer, texts):
    """For each text, its words as lists of piece ids (normalized as the model sees them)."""
    import tensorflow as tf

    out = []
    for start in range(0, len(texts), BATCH):
        out.extend(tokenizer.tokenize(tf.constant(texts[start:start + BATCH])).to_list())
    return out


def piece_text(tokens, pieces):
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
    from tfbert.data.pretraining import expand_files

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
    import numpy as np

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


def run(checkpoint_dir, output_dir, words=(), words_file=None, corpus=None,
        max_new_words=100, min_count=5, mode="unused"):
    import tempfile

    from tfbert import checkpoint
    from tfbert.text.tokenizer import BertTokenizer

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
    with tempfile.TemporaryDirectory() as tmp:
        vocab_file = os.path.join(tmp, "vocab.txt")
        with open(vocab_file, "w", encoding="utf-8") as f:
            f.write("\n".join(tokens) + "\n")
        checkpoint.save_checkpoint(
            output_dir, config, encoder, vocab_file, ckpt.lower_case, head_weights=heads,
            source=f"extend_vocab({mode}, {len(added)} words) of {ckpt.source or checkpoint_dir}",
        )
    for word, i in added.items():
        old = " ".join(tokenizer.vocab.tokens[p] for p in new_words[word])
        print(f"  {i:6d} {word!r} (was {old})")
    print(f"Added {len(added)} words ({mode}); vocab size {config.vocab_size}; wrote {output_dir}")
    return added


def main(argv):
    del argv
    try:
        if not FLAGS.checkpoint_dir or not FLAGS.output_dir:
            raise ValueError("--checkpoint_dir and --output_dir are required.")
        run(FLAGS.checkpoint_dir, FLAGS.output_dir, FLAGS.words, FLAGS.words_file, FLAGS.corpus,
            FLAGS.max_new_words, FLAGS.min_count, FLAGS.mode)
    except (ValueError, FileNotFoundError) as e:
        print(f"extend_vocab: error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    app.run(main)
