"""Pretraining shards -> `(features, targets)` batches for `BertPretrainer.fit`.

All shards are interleaved one record at a time; each batch is masked with a
seed derived from `(seed, batch index)` (dynamic masking: a new mask every
epoch; the same masks again after a resume).
"""

import json
import os

import tensorflow as tf

from tfbert.data.pretraining.instances import next_sentence_task_or_use_nsp
from tfbert.data.pretraining.records import METADATA_FILE
from tfbert.text.corpus_files import expand_files


def read_metadata(files):
    """The `pretraining_data.json` next to the shards (error if absent)."""
    directory = os.path.dirname(os.path.abspath(files[0]))
    path = os.path.join(directory, METADATA_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{path} is missing: pretraining shards are written by "
            "tools/create_pretraining_data.py together with this file."
        )
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def pretraining_dataset(
    train_files,
    batch_size,
    masker=None,
    seed=0,
    shuffle_buffer=10000,
    repeat=True,
    skip_batches=0,
    use_nsp=None,
    next_sentence_task=None,
    drop_remainder=True,
):
    """`(features, targets)` batches for `BertPretrainer`.

    `masker`: a `MaskedLMMasker` for dynamic masking (batch `i` is masked with
    seed `(seed, i)`), or None to use the static masks stored in the files.
    `skip_batches`: batches already consumed by a resumed run; the order is
    deterministic for a seed, so the run continues where it stopped.
    `next_sentence_task`: the pair task to train ("nsp", "sop" or "none"; `use_nsp`
    is its deprecated alias); by default the one the data was written for.
    Batches have a static shape (`drop_remainder`), as XLA wants; an
    evaluation set keeps its last partial batch with `drop_remainder=False`.
    """
    files = expand_files(train_files, what="training file")
    meta = read_metadata(files)
    # Records written before the rename say max_seq_length.
    seq_length = int(meta["seq_length"] if "seq_length" in meta else meta["max_seq_length"])
    written = meta.get("next_sentence_task") or ("nsp" if meta["use_nsp"] else "none")
    if next_sentence_task is None and use_nsp is None:
        task = written
    else:
        task = next_sentence_task_or_use_nsp(next_sentence_task, use_nsp)
    if task != "none" and task != written:
        raise ValueError(
            f"{files[0]}: written with next_sentence_task={written}; training asks for {task}. "
            f"Write the data with --next_sentence_task={task}, or train with "
            f"next_sentence_task: {written}."
        )
    has_pair_label = task != "none"
    if masker is None and not meta["static_masking"]:
        raise ValueError(
            f"{files[0]}: has no stored masks (written without static masking); "
            "pass a MaskedLMMasker for dynamic masking."
        )
    if masker is not None and masker.vocab_size != meta["vocab_size"]:
        raise ValueError(
            f"{files[0]}: written with a {meta['vocab_size']}-token vocab, the masker "
            f"has {masker.vocab_size}."
        )
    spec = {
        "input_word_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
        "input_type_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }
    if masker is None:
        p = int(meta["max_predictions"])
        spec.update(
            masked_lm_positions=tf.io.FixedLenFeature([p], tf.int64),
            masked_lm_ids=tf.io.FixedLenFeature([p], tf.int64),
            masked_lm_weights=tf.io.FixedLenFeature([p], tf.float32),
        )

    def parse_and_mask(step, serialized):
        f = tf.io.parse_example(serialized, spec)
        f = {k: (v if v.dtype == tf.float32 else tf.cast(v, tf.int32)) for k, v in f.items()}
        if masker is not None:
            f.update(masker(f["input_word_ids"], seed=tf.stack([tf.cast(seed, tf.int64), step])))
        x = {k: f[k] for k in ("input_word_ids", "input_mask", "input_type_ids",
                               "masked_lm_positions")}
        # Span masking also gives the span boundary objective's inputs.
        x.update({k: v for k, v in f.items() if k.startswith("masked_lm_span_")})
        y = {"masked_lm_ids": f["masked_lm_ids"], "masked_lm_weights": f["masked_lm_weights"]}
        if has_pair_label:
            y["next_sentence_labels"] = f["next_sentence_labels"][:, 0]
        return x, y

    ds = tf.data.Dataset.from_tensor_slices(files)
    if shuffle_buffer:
        ds = ds.shuffle(len(files), seed=seed)
    # All shards at once (up to 64 open readers), one record from each in
    # turn: every batch draws from every shard.
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), 64), block_length=1,
                       num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if repeat:
        ds = ds.repeat()
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed)
    ds = ds.batch(batch_size, drop_remainder=drop_remainder).enumerate()
    if skip_batches:
        ds = ds.skip(skip_batches)  # serialized records only: cheap
    ds = ds.map(parse_and_mask, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.prefetch(tf.data.AUTOTUNE)
