"""length_grouped_batches: every example once per window, similar lengths per batch."""

import collections
import re

import numpy as np
import pydoc_data.topics
import tensorflow as tf

from tfbert.data.batching import count_batches, length_grouped_batches, with_known_length


def doc_sentences(count):
    """Real sentences of mixed length from the Python documentation."""
    sentences = set()
    for text in pydoc_data.topics.topics.values():
        for sentence in re.split(r"(?<=[.!?])\s+", " ".join(text.split())):
            if 10 <= len(sentence) <= 400:
                sentences.add(sentence)
    return sorted(sentences)[:count]


def stream(sentences, seed=3):
    ds = tf.data.Dataset.from_tensor_slices(sentences)
    return ds.shuffle(len(sentences), seed=seed, reshuffle_each_iteration=True).repeat()


def test_each_window_is_one_pass_sorted_into_batches():
    sentences = doc_sentences(240)
    batch, window = 8, 30  # one window = one pass over the 240 lines
    batches = [b.numpy().tolist() for b in
               length_grouped_batches(stream(sentences), batch, tf.strings.length, window).take(60)]
    assert all(len(b) == batch for b in batches)
    for start in (0, window):  # each pass holds every line exactly once
        seen = collections.Counter(t.decode() for b in batches[start:start + window] for t in b)
        assert seen == collections.Counter(sentences)
    # Within a window, the batches' length ranges do not overlap (sorted),
    # and their order is not the sorted order (shuffled).
    lengths = [sorted(len(t) for t in b) for b in batches[:window]]
    ranges = sorted((b[0], b[-1]) for b in lengths)
    assert all(hi <= next_lo for (_, hi), (next_lo, _) in zip(ranges, ranges[1:]))
    assert [b[0] for b in lengths] != sorted(b[0] for b in lengths)
    # Narrower than random batches: the widest text of a batch is what it pads to.
    random = [sorted(len(t) for t in b.numpy().tolist())
              for b in stream(sentences).batch(batch).take(window)]
    assert np.mean([b[-1] for b in lengths]) < 0.7 * np.mean([b[-1] for b in random])


def test_same_seed_same_stream_pairs_keep_their_labels():
    sentences = doc_sentences(64)
    labels = np.arange(64)
    ds = tf.data.Dataset.from_tensor_slices(({"text": sentences}, labels)).repeat()

    def length(texts, _):
        return tf.strings.length(texts["text"])

    runs = [[(x["text"].numpy().tolist(), y.numpy().tolist())
             for x, y in length_grouped_batches(ds, 4, length, 8, seed=seed).take(32)]
            for seed in (5, 5, 6)]
    assert runs[0] == runs[1] and runs[0] != runs[2]
    for texts, ys in runs[0]:  # each label still belongs to its text
        assert [sentences[y].encode() for y in ys] == texts


def test_a_filtered_dataset_gets_its_length_counted_and_declared():
    words = tf.data.Dataset.from_tensor_slices(doc_sentences(70)).filter(
        lambda text: tf.strings.length(text) > 40).batch(8)
    assert int(words.cardinality()) == tf.data.UNKNOWN_CARDINALITY
    count = count_batches(words)
    assert count == sum(1 for _ in words) > 1
    known = with_known_length(words)
    assert int(known.cardinality()) == count
    assert [b.numpy().tolist() for b in known] == [b.numpy().tolist() for b in words]
