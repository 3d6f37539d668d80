"""Training batches of similar length (tf.data), so bucketed batches stay narrow.

Real text is mostly short: a random batch of 32 usually holds one long text,
and `trim_to_bucket` can cut it no narrower than that text. Sorting windows of
shuffled examples by length (as Hugging Face's `group_by_length` does with its
"megabatches") puts texts of similar length together; the batches are then
shuffled, so the order stays random at the batch level.
"""

import tensorflow as tf

# Batches per sorted window: HF's megabatch multiplier.
WINDOW_BATCHES = 50


def length_grouped_batches(ds, batch_size, length, window_batches=WINDOW_BATCHES, seed=0):
    """Full batches of similar length from a dataset of single examples.

    Args:
        ds: examples, already shuffled and repeated (an endless stream; a
            finite one loses its last partial window).
        batch_size: examples per batch.
        length: `length(*batched_example)` -> a `[n]` tensor to sort by: the
            token counts (byte lengths are a poor stand-in: on real sentences
            their batches' longest texts averaged 35 tokens against 23).
        window_batches: batches per sorted window.
        seed: seed of the batch order within each window (stateless: the
            same seed gives the same stream, which exact resume needs).

    Each window of `window_batches * batch_size` consecutive examples is
    sorted by length, cut into batches and those batches put in random order,
    so every example lands in exactly one batch of its own window (as with
    `ds.batch(batch_size)`, only the company it keeps changes).

    Example:
    >>> ds = tf.data.Dataset.from_tensor_slices(tf.constant(["a", "bbbbbbbb", "cc", "ddddddd"]))
    >>> batches = length_grouped_batches(ds, 2, tf.strings.length, window_batches=2)
    >>> sorted(b.numpy().tolist() for b in batches)
    [[b'a', b'cc'], [b'ddddddd', b'bbbbbbbb']]
    """

    def sort(index, example):
        keys = length(*example) if isinstance(example, tuple) else length(example)
        by_length = tf.reshape(tf.argsort(keys, stable=True), [window_batches, batch_size])
        batch_order = tf.argsort(tf.random.stateless_uniform(
            [window_batches], seed=tf.stack([tf.cast(seed, tf.int64), index])))
        order = tf.gather(by_length, batch_order)  # [window_batches, batch_size]
        return tf.nest.map_structure(lambda t: tf.gather(t, order), example)

    ds = ds.batch(batch_size * window_batches, drop_remainder=True).enumerate()
    return ds.map(sort).unbatch()
