"""What attention heads attend to (Clark, Khandelwal, Levy & Manning 2019).

`attention_statistics` runs an encoder that returns its attention
probabilities over parsed sentences and reports, per layer and head, the
mean over real (non-padding) query tokens of the attention to [CLS], to
[SEP], to punctuation tokens, to the token itself, to the previous and the
next token, and the entropy of the attention distribution (nats).

For syntax, attention between words is the mean over the query word's
pieces of the summed attention to the key word's pieces (their word-level
conversion). A head predicts a word's syntactic head as the other word it
attends to most; for each dependency relation the best head's accuracy
(dependent -> head direction) is reported beside the best fixed-offset
baseline (the head is always the word k positions away, k in -5..5, the best
k for that relation).
"""

import collections

import numpy as np
import tensorflow as tf

from tfbert.encoder import BertEncoder
from tfbert.text.char_table import is_punctuation

STATISTICS = ("cls", "sep", "punctuation", "self", "previous", "next", "entropy")
OFFSETS = tuple(k for k in range(-5, 6) if k)


def attention_encoder(encoder):
    """The same weights, returning `attention_probs`."""
    with_probs = BertEncoder(encoder.config, return_attention_probs=True)
    with_probs.set_weights(encoder.get_weights())
    return with_probs


def attention_statistics(encoder, batches, sentences, punctuation_table):
    """`{"statistics": {name: [layers][heads]}, "relations": {deprel: {...}},
    "per_layer": best head's accuracy over all relations, per layer 1..L}`.
    `batches`: `(inputs, word_pieces, rows)` of `sentences` (heads and
    deprels, `tfbert.analysis.conllu.ConlluSentence`); `punctuation_table`:
    bool per vocabulary id."""
    encoder = attention_encoder(encoder)
    config = encoder.config
    layers, heads = config.num_layers, config.num_heads
    # A pruned encoder (BertConfig.heads_per_layer): its layers' heads come
    # first, the heads it no longer has are NaN.
    missing = np.arange(heads)[None, :] >= np.array(
        [config.layer_heads(i) for i in range(layers)])[:, None]

    def padded(p):  # [batch, layer's heads, seq, seq] -> [batch, heads, seq, seq]
        return np.pad(p, ((0, 0), (0, heads - p.shape[1]), (0, 0), (0, 0)),
                      constant_values=np.nan)
    sums = {name: np.zeros((layers, heads)) for name in STATISTICS}
    tokens = 0
    hits = collections.defaultdict(lambda: np.zeros((layers, heads)))
    offset_hits = collections.defaultdict(lambda: np.zeros(len(OFFSETS)))
    counts = collections.Counter()
    punctuation_table = tf.constant(punctuation_table)
    for inputs, word_pieces, rows in batches:
        probs = np.stack([padded(p.numpy()) for p in encoder(inputs)["attention_probs"]], 1)
        mask = inputs["input_mask"].numpy().astype(bool)  # [b, seq]
        ids = inputs["input_word_ids"]
        punct = tf.gather(punctuation_table, ids).numpy() & mask
        lengths = mask.sum(1)
        seq = mask.shape[1]
        positions = np.arange(seq)
        for b in range(len(rows)):
            n = lengths[b]
            p = probs[b][:, :, :n, :n]  # [layers, heads, n, n]
            tokens += n
            sums["cls"] += p[..., 0].sum(-1)
            sums["sep"] += p[..., n - 1].sum(-1)
            sums["punctuation"] += p[..., punct[b, :n]].sum((-1, -2))
            sums["self"] += np.trace(p, axis1=2, axis2=3)
            sums["previous"] += np.trace(p, offset=-1, axis1=2, axis2=3)
            sums["next"] += np.trace(p, offset=1, axis1=2, axis2=3)
            sums["entropy"] += -(p * np.log(np.maximum(p, 1e-12))).sum((-1, -2))
            # Word-level attention: queries averaged over a word's pieces, keys summed.
            pieces = word_pieces[b].row_lengths().numpy()
            word_of_piece = np.repeat(np.arange(len(pieces)), pieces)
            where = 1 + positions[:len(word_of_piece)]
            to_word = np.zeros((n, len(pieces)))
            to_word[where, word_of_piece] = 1.0
            from_word = to_word.T / np.maximum(pieces[:, None], 1)
            words = np.einsum("wq,lhqk,kv->lhwv", from_word, p, to_word)
            idx = np.arange(len(pieces))
            words[..., idx, idx] = -1.0  # a word is not its own head
            predicted = words.argmax(-1)  # [layers, heads, words]
            sentence = sentences[rows[b]]
            for w, (head, relation) in enumerate(zip(sentence.heads, sentence.column("deprel"))):
                if not head or relation == "_":
                    continue
                relation = relation.split(":")[0]
                counts[relation] += 1
                hits[relation] += predicted[:, :, w] == head - 1
                offset_hits[relation] += [w + k == head - 1 for k in OFFSETS]
    relations = {}
    total_hits = np.where(missing, np.nan, 0.0)
    for relation in sorted(counts):
        total_hits += hits[relation]
        accuracy = np.where(missing, -1.0, hits[relation] / counts[relation])
        layer, head = np.unravel_index(accuracy.argmax(), accuracy.shape)
        best_offset = int(offset_hits[relation].argmax())
        relations[relation] = {
            "count": counts[relation], "layer": int(layer) + 1, "head": int(head),
            "accuracy": float(accuracy[layer, head]), "baseline_offset": OFFSETS[best_offset],
            "baseline_accuracy": float(offset_hits[relation][best_offset] / counts[relation])}
    overall = total_hits / max(sum(counts.values()), 1)
    return {"statistics": {name: (value / max(tokens, 1)).tolist()
                           for name, value in sums.items()},
            "relations": relations, "tokens": int(tokens),
            # A layer without heads has no best head: NaN.
            "per_layer": [float(np.nanmax(row)) if not np.isnan(row).all() else float("nan")
                          for row in overall]}


def punctuation_ids(vocab_tokens):
    """bool per vocabulary id: the token is one punctuation character."""
    return np.array([len(t) == 1 and is_punctuation(t) for t in vocab_tokens])
