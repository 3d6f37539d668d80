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
    """Batches of similar length from a dataset of single examples.

    Args:
        ds: examples of one epoch, already shuffled (finite: every example
            lands in one batch; the last batch may be partial).
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
    `ds.batch(batch_size)`, only the company it keeps changes). A partial
    batch (only in the last window) goes last, so batches stay aligned.

    Example:
    >>> ds = tf.data.Dataset.from_tensor_slices(tf.constant(["a", "bbbbbbbb", "cc", "ddddddd", "e"]))
    >>> batches = length_grouped_batches(ds, 2, tf.strings.length, window_batches=2)
    >>> sorted(b.numpy().tolist() for b in batches)
    [[b'a', b'cc'], [b'ddddddd', b'bbbbbbbb'], [b'e']]
    """

    def sort(index, example):
        keys = length(*example) if isinstance(example, tuple) else length(example)
        n = tf.size(keys)
        by_length = tf.argsort(keys, stable=True)
        num_batches = (n + batch_size - 1) // batch_size
        draw = tf.random.stateless_uniform([num_batches], seed=tf.stack(
            [tf.cast(seed, tf.int64), index]))
        partial = tf.range(num_batches) * batch_size + batch_size > n
        batch_rank = tf.argsort(tf.argsort(tf.where(partial, 2.0, draw)))  # partial: last
        position = tf.range(n)
        key = tf.gather(batch_rank, position // batch_size) * batch_size + position % batch_size
        order = tf.gather(by_length, tf.argsort(key))
        return tf.nest.map_structure(lambda t: tf.gather(t, order), example)

    ds = ds.batch(batch_size * window_batches).enumerate()
    return ds.map(sort).unbatch().batch(batch_size)


def epoch_batches(ds, num_examples, batch_size, seed, drop_remainder=False, batch=None):
    """Training batches: each epoch one pass over every example, reshuffled
    each epoch (seeded: the same stream again for an exact resume), the last
    partial batch kept unless `drop_remainder` (multi-replica runs), repeated
    without end. `batch(ds)` batches one shuffled epoch (default `ds.batch`).

    Example:
    >>> ds = tf.data.Dataset.range(5)
    >>> stream = epoch_batches(ds, 5, 2, seed=0)
    >>> [sorted(v for b in stream.skip(3 * e).take(3) for v in b.numpy().tolist()) for e in range(2)]
    [[0, 1, 2, 3, 4], [0, 1, 2, 3, 4]]
    """
    ds = ds.shuffle(num_examples, seed=seed, reshuffle_each_iteration=True)
    if batch is not None:
        ds = batch(ds)
    else:
        ds = ds.batch(batch_size, drop_remainder=drop_remainder)
    return ds.repeat()


# Texts tokenized and windowed per call of a window stream's `to_windows`.
WINDOWING_BATCH = 32


def window_stream(examples, to_windows, batch_size, num_examples=None, num_windows=None,
                  seed=0, drop_remainder=False, finish=None, ragged=False,
                  shuffle_buffer=4096):
    """Batches of the windows of long texts, each window one example: the
    stream of every windowed task and strings-in model.

    Args:
        examples: a dataset of single examples (a text with its targets).
        to_windows: `to_windows(*batch_of_examples)` -> a batch of windows,
            each with its text's targets (`pack_windows` and a gather).
        batch_size: windows per batch.
        num_examples: the examples in `examples`. Without it, one pass in
            order (evaluation, prediction); with it, the training stream:
            each epoch every window once (`epoch_batches` shuffles the texts,
            then a buffer mixes a text's windows with others'), endless.
        num_windows: the windows of one epoch, when known (the buffer is no
            bigger than an epoch).
        seed: the shuffles' seed (the same stream again for an exact resume).
        drop_remainder: whole batches only (multi-replica training).
        finish: mapped on each batch of windows (e.g. trimmed to a bucket).
        ragged: the examples hold ragged tensors (words), batched as such.
        shuffle_buffer: windows mixed at most.

    Example:
    >>> texts = tf.data.Dataset.from_tensor_slices(tf.constant([2, 3, 1]))
    >>> windows = lambda n: tf.ragged.range(n).flat_values  # n windows per "text"
    >>> [b.numpy().tolist() for b in window_stream(texts, windows, 4)]
    [[0, 1, 0, 1], [2, 0]]
    """
    group = (lambda d: d.ragged_batch(WINDOWING_BATCH)) if ragged else (
        lambda d: d.batch(WINDOWING_BATCH))

    def batches(ds, drop):
        ds = group(ds).map(to_windows, num_parallel_calls=tf.data.AUTOTUNE).unbatch()
        if num_examples is not None:
            ds = ds.shuffle(min(shuffle_buffer, num_windows or shuffle_buffer), seed=seed)
        ds = ds.batch(batch_size, drop_remainder=drop)
        return ds if finish is None else ds.map(finish)

    if num_examples is None:
        return batches(examples, False).prefetch(tf.data.AUTOTUNE)
    return epoch_batches(examples, num_examples, batch_size, seed,
                         batch=lambda shuffled: batches(shuffled, drop_remainder)).prefetch(
                             tf.data.AUTOTUNE)


def training_batches(ds, num_examples, batch_size, seed, num_tokens, drop_remainder=False,
                     bucketing=True):
    """The fine-tuning stream of text examples (the tasks' and
    `TextClassifier.fit`'s): each epoch a seeded shuffle (`epoch_batches`),
    cut into batches of similar length (`length_grouped_batches` over windows
    of at most `WINDOW_BATCHES` batches; `num_tokens(*example)` gives the
    lengths) unless `bucketing` is off or replicas need equal batches
    (`drop_remainder`); repeated without end."""
    grouped = None
    if bucketing and not drop_remainder:
        window = min(WINDOW_BATCHES, max(1, num_examples // batch_size))
        grouped = lambda d: length_grouped_batches(d, batch_size, num_tokens, window, seed)
    return epoch_batches(ds, num_examples, batch_size, seed, drop_remainder, grouped)


def steps_per_epoch(num_examples, batch_size, drop_remainder=False):
    """Batches in one pass over `num_examples` (the last partial one counted
    unless dropped)."""
    if drop_remainder:
        return max(1, num_examples // batch_size)
    return max(1, -(-num_examples // batch_size))


def count_batches(dataset):
    """Batches in a finite dataset."""
    count = int(dataset.cardinality())
    if count < 0:  # unknown (filtered, generated or read from files): count it once
        count = int(dataset.reduce(0, lambda c, _: c + 1))
    return count


def with_known_length(dataset):
    """`dataset` (finite) with its length declared. Keras' `fit` evaluates a dataset of
    unknown length with a "ran out of data" warning after every pass, and pretraining's
    per-epoch evaluation waited about 24 s per epoch in Keras' EpochIterator.reset
    (docs/pretraining.md, "Pretrain for an hour")."""
    return dataset.apply(tf.data.experimental.assert_cardinality(count_batches(dataset)))
