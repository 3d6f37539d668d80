"""`MaskedLMMasker`: BERT's masked-LM input corruption as core TF graph ops.

Used inside `tf.data` (dynamic masking: new masks each time a batch is made)
and by `tools/create_pretraining_data.py` (static masking), so both follow
one rule:

- choose about `mask_rate` (15%) of the maskable tokens, at most
  `max_predictions`; [CLS], [SEP], [PAD] and the other special ids are never
  chosen;
- of the chosen tokens, 80% become [MASK], 10% a random token, 10% stay;
- `strategy`: `token` (each WordPiece alone), `whole_word` (a word's pieces
  are chosen together; a piece starting with `##` continues a word) or
  `span` (SpanBERT: span lengths in words from a geometric distribution
  clipped at `max_span_length`, whole spans chosen until the budget is used).

Why not tf-text's `mask_language_model`: its selectors draw from stateful
RNG ops (no per-step seed, so a resumed run would not see the masks it would
have seen) and it has no span mode. This file is one dense implementation
of the three strategies, seeded per batch with stateless RNG, core ops only.
"""

import numpy as np
import tensorflow as tf

STRATEGIES = ("token", "whole_word", "span")


class MaskedLMMasker:
    """Masks a batch of packed token ids for the masked-LM objective.

    Call with int `[batch, seq]` ids (padding included) and a `[2]` int seed;
    returns a dict of `input_word_ids` (corrupted ids), and `[batch,
    max_predictions]` `masked_lm_positions`, `masked_lm_ids` (original ids)
    and `masked_lm_weights` (1.0 for a real prediction, 0.0 for padding).
    The same seed gives the same masks. With `strategy="span"` it also
    returns `masked_lm_span_left`, `masked_lm_span_right` (positions of the
    unmasked tokens around each prediction's span) and
    `masked_lm_span_offset` (the prediction's index inside its span), the
    inputs of the span boundary objective.

    Example:
    >>> masker = MaskedLMMasker(vocab_size=100, mask_id=4, special_ids=[0, 2, 3, 4],
    ...                         max_predictions=4)
    >>> ids = tf.constant([[2] + list(range(10, 30)) + [3, 0, 0]])
    >>> out = masker(ids, seed=[1, 2])
    >>> int(tf.reduce_sum(out["masked_lm_weights"]))  # 15% of 20 tokens
    3
    """

    def __init__(
        self,
        vocab_size,
        mask_id,
        special_ids,
        max_predictions=20,
        mask_rate=0.15,
        mask_token_rate=0.8,
        random_token_rate=0.1,
        strategy="token",
        continuation_ids=(),
        span_geometric_p=0.2,
        max_span_length=10,
    ):
        if strategy not in STRATEGIES:
            raise ValueError(f"Unknown masking strategy {strategy!r}; use one of {list(STRATEGIES)}.")
        if not 0.0 < mask_rate <= 1.0:
            raise ValueError(f"mask_rate must be in (0, 1], got {mask_rate}.")
        if mask_token_rate < 0 or random_token_rate < 0 or mask_token_rate + random_token_rate > 1:
            raise ValueError(
                "mask_token_rate and random_token_rate must be >= 0 and sum to at most 1, "
                f"got {mask_token_rate} and {random_token_rate}."
            )
        if max_predictions < 1:
            raise ValueError(f"max_predictions must be >= 1, got {max_predictions}.")
        if not 0.0 < span_geometric_p <= 1.0 or max_span_length < 1:
            raise ValueError("span_geometric_p must be in (0, 1] and max_span_length >= 1.")
        if not 0 <= mask_id < vocab_size:
            raise ValueError(f"mask_id {mask_id} is outside the vocabulary (size {vocab_size}).")
        self.vocab_size = int(vocab_size)
        self.mask_id = int(mask_id)
        self.special_ids = sorted({int(i) for i in special_ids} | {self.mask_id})
        self.max_predictions = int(max_predictions)
        self.mask_rate = float(mask_rate)
        self.mask_token_rate = float(mask_token_rate)
        self.random_token_rate = float(random_token_rate)
        self.strategy = strategy
        self.span_geometric_p = float(span_geometric_p)
        self.max_span_length = int(max_span_length)
        is_continuation = np.zeros([self.vocab_size], bool)
        is_continuation[np.asarray(list(continuation_ids), dtype=np.int64)] = True
        self._is_continuation = is_continuation

    @classmethod
    def from_vocab(cls, vocab, **kwargs):
        """Builds a masker from a vocab file path or a `tfbert.text.vocab.Vocab`.

        Special ids are [PAD], [CLS], [SEP], [MASK] (a vocab without them is
        an error naming the file); pieces starting with `##` continue a word.
        """
        from tfbert.text.vocab import load_vocab

        if not hasattr(vocab, "tokens"):
            vocab = load_vocab(vocab)
        return cls(
            vocab_size=vocab.vocab_size,
            mask_id=vocab.mask_id,
            special_ids=[vocab.pad_id, vocab.cls_id, vocab.sep_id, vocab.mask_id],
            continuation_ids=[i for i, t in enumerate(vocab.tokens) if t.startswith("##")],
            **kwargs,
        )

    def __call__(self, input_ids, seed):
        ids = tf.convert_to_tensor(input_ids)
        if ids.shape.rank != 2:
            raise ValueError(f"MaskedLMMasker expects [batch, seq] ids, got shape {ids.shape}.")
        ids = tf.cast(ids, tf.int32)
        seed = tf.cast(tf.convert_to_tensor(seed), tf.int64)
        seeds = tf.random.experimental.stateless_split(seed, 5)
        batch, seq = tf.shape(ids)[0], tf.shape(ids)[1]
        k = self.max_predictions

        # === Maskable tokens and their units (token, word or span element) ===
        specials = tf.constant(self.special_ids, tf.int32)
        maskable = ~tf.reduce_any(ids[:, :, None] == specials, axis=-1)
        if self.strategy == "token":
            unit_start = maskable
        else:
            continuation = tf.gather(tf.constant(self._is_continuation), ids)
            after_special = tf.pad(~maskable[:, :-1], [[0, 0], [1, 0]], constant_values=True)
            unit_start = maskable & (~continuation | after_special)
        unit = tf.where(maskable, tf.cumsum(tf.cast(unit_start, tf.int32), axis=1) - 1, -1)
        num_units = tf.reduce_max(unit, axis=1) + 1
        num_tokens = tf.reduce_sum(tf.cast(maskable, tf.int32), axis=1)
        budget = tf.cast(tf.round(tf.cast(num_tokens, tf.float32) * self.mask_rate), tf.int32)
        budget = tf.minimum(tf.maximum(budget, tf.minimum(num_tokens, 1)), k)

        # === k candidate spans per row: [batch, k] first unit and length ===
        if self.strategy == "span":
            u = tf.random.stateless_uniform([batch, k], seeds[0])
            first = tf.cast(u * tf.cast(num_units[:, None], tf.float32), tf.int32)
            g = tf.random.stateless_uniform([batch, k], seeds[1], minval=1e-7, maxval=1.0)
            length = 1 + tf.cast(tf.math.log(g) / np.log(1.0 - min(self.span_geometric_p, 1 - 1e-7)), tf.int32)
            length = tf.minimum(length, self.max_span_length)
            valid = first < num_units[:, None]
        else:
            # A random order of the units: the top-k random scores.
            scores = tf.random.stateless_uniform([batch, seq], seeds[0])
            scores = tf.where(unit_start, scores, -1.0)
            scores = tf.pad(scores, [[0, 0], [0, k]], constant_values=-1.0)
            top, where = tf.math.top_k(scores, k=k)
            first = tf.gather(tf.pad(unit, [[0, 0], [0, k]], constant_values=-1), where, batch_dims=1)
            length = tf.ones_like(first)
            valid = top >= 0.0

        # === Greedy: take each candidate whose tokens still fit the budget ===
        def take(chosen, candidate):
            first_unit, span_length, ok = candidate
            span = (unit >= first_unit[:, None]) & (unit < (first_unit + span_length)[:, None])
            grown = chosen | (span & ok[:, None])
            fits = tf.reduce_sum(tf.cast(grown, tf.int32), axis=1) <= budget
            return tf.where(fits[:, None], grown, chosen)

        chosen = tf.foldl(
            take,
            (tf.transpose(first), tf.transpose(length), tf.transpose(valid)),
            initializer=tf.zeros_like(maskable),
        )

        # === 80% [MASK], 10% random token, 10% unchanged ===
        r = tf.random.stateless_uniform([batch, seq], seeds[2])
        to_mask = chosen & (r < self.mask_token_rate)
        to_random = chosen & (r >= self.mask_token_rate) & (r < self.mask_token_rate + self.random_token_rate)
        random_ids = tf.random.stateless_uniform(
            [batch, seq], seeds[3], minval=0, maxval=self.vocab_size, dtype=tf.int32
        )
        corrupted = tf.where(to_mask, self.mask_id, tf.where(to_random, random_ids, ids))

        # === Predicted positions, padded to max_predictions ===
        positions = tf.broadcast_to(tf.range(seq)[None, :], [batch, seq])
        positions = tf.ragged.boolean_mask(positions, chosen).to_tensor(0, shape=[None, k])
        count = tf.reduce_sum(tf.cast(chosen, tf.int32), axis=1)
        weights = tf.cast(tf.range(k)[None, :] < count[:, None], tf.float32)
        labels = tf.gather(ids, positions, batch_dims=1) * tf.cast(weights, tf.int32)
        result = {
            "input_word_ids": corrupted,
            "masked_lm_positions": positions,
            "masked_lm_ids": labels,
            "masked_lm_weights": weights,
        }
        if self.strategy == "span":
            result.update(self._span_boundaries(chosen, positions, weights))
        return result

    @staticmethod
    def _span_boundaries(chosen, positions, weights):
        """For SpanBERT's span boundary objective: for each prediction, the
        positions of the unmasked tokens just left and right of its span
        (adjacent spans merge), and its offset inside the span."""
        seq = tf.shape(chosen)[1]
        index = tf.broadcast_to(tf.range(seq)[None, :], tf.shape(chosen))
        # Last unchosen position <= t, first unchosen position >= t.
        left = tf.scan(tf.maximum, tf.transpose(tf.where(chosen, -1, index)))
        right = tf.reverse(
            tf.scan(tf.minimum, tf.reverse(tf.transpose(tf.where(chosen, seq, index)), [0])), [0]
        )
        left, right = tf.transpose(left), tf.transpose(right)
        valid = tf.cast(weights, tf.int32)
        span_left = tf.gather(left, positions, batch_dims=1) * valid
        span_right = tf.minimum(tf.gather(right, positions, batch_dims=1), seq - 1) * valid
        return {
            "masked_lm_span_left": span_left,
            "masked_lm_span_right": span_right,
            "masked_lm_span_offset": (positions - span_left - 1) * valid,
        }

    def get_config(self):
        return {
            "vocab_size": self.vocab_size,
            "mask_id": self.mask_id,
            "special_ids": self.special_ids,
            "max_predictions": self.max_predictions,
            "mask_rate": self.mask_rate,
            "mask_token_rate": self.mask_token_rate,
            "random_token_rate": self.random_token_rate,
            "strategy": self.strategy,
            "continuation_ids": np.flatnonzero(self._is_continuation).tolist(),
            "span_geometric_p": self.span_geometric_p,
            "max_span_length": self.max_span_length,
        }

