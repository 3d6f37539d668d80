"""The pretraining data on disk: TFRecord shards of `tf.train.Example`s and
the `pretraining_data.json` next to them.

A directory holds `pretrain-<i>-of-<n>.tfrecord` and `pretraining_data.json`
(sequence length, pair task, masking, counts), which the reader checks; the
held-out documents' shard and metadata are in its `eval/` subdirectory.
"""

import dataclasses
from typing import Optional

import numpy as np
import tensorflow as tf

METADATA_FILE = "pretraining_data.json"
SHARD_PATTERN = "pretrain-{:05d}-of-{:05d}.tfrecord"
EVAL_DIR = "eval"


def pack_instance(tokens_a, tokens_b, is_random_next, seq_length, cls_id, sep_id):
    """`[CLS] A [SEP] (B [SEP])` padded to `seq_length`, as int64 arrays."""
    ids = [cls_id] + tokens_a + [sep_id]
    types = [0] * len(ids)
    if tokens_b:
        ids += tokens_b + [sep_id]
        types += [1] * (len(tokens_b) + 1)
    pad = seq_length - len(ids)
    return {
        "input_word_ids": np.array(ids + [0] * pad, np.int64),
        "input_mask": np.array([1] * len(ids) + [0] * pad, np.int64),
        "input_type_ids": np.array(types + [0] * pad, np.int64),
        "next_sentence_labels": np.array([int(is_random_next)], np.int64),
    }


def _example(features):
    return tf.train.Example(
        features=tf.train.Features(
            feature={
                k: (tf.train.Feature(float_list=tf.train.FloatList(value=v))
                    if v.dtype.kind == "f" else
                    tf.train.Feature(int64_list=tf.train.Int64List(value=v)))
                for k, v in features.items()
            }
        )
    ).SerializeToString(deterministic=True)  # map order: same bytes in every process


def serialize_instances(instances, seq_length, vocab, masker=None, mask_seed=None,
                        first_index=0, stats=None):
    """Packs (and with `masker`, statically masks) `(a, b, label)` instances
    into serialized `tf.train.Example`s; counts into `stats` when given.
    The masks of instance `first_index + j` come from seed `[mask_seed, first_index]`
    for the batch, so the output is deterministic."""
    packed = [pack_instance(list(a), list(b), r, seq_length, vocab.cls_id, vocab.sep_id)
              for a, b, r in instances]
    if masker is not None and packed:
        batch = np.stack([p["input_word_ids"] for p in packed])
        masked = masker(batch, seed=[mask_seed, first_index])
        masked = {k: v.numpy() for k, v in masked.items()}
        for j, p in enumerate(packed):
            for key, value in masked.items():
                p[key] = value[j].astype(np.float32 if key == "masked_lm_weights" else np.int64)
        if stats is not None:
            stats["masked"] += int(np.sum(masked["masked_lm_weights"]))
    if stats is not None:
        for p in packed:
            stats["instances"] += 1
            stats["random_next"] += int(p["next_sentence_labels"][0])
            stats["tokens"] += int(p["input_mask"].sum())
    return [_example(p) for p in packed]


def empty_stats():
    return {"documents": 0, "sentences": 0, "instances": 0, "random_next": 0,
            "tokens": 0, "masked": 0}


@dataclasses.dataclass(frozen=True)
class RecordFormat:
    """What `pretraining_data.json` says of the records, whichever runner
    wrote them. `max_predictions`: None without static masking."""

    seq_length: int
    next_sentence_task: str
    max_predictions: Optional[int]
    vocab_size: int
    seed: int

    def metadata(self, names, stats, **extra):
        """The `pretraining_data.json` of shards `names` with counts `stats`."""
        return {
            "seq_length": self.seq_length,
            "use_nsp": self.next_sentence_task != "none",  # the records carry a pair label
            "next_sentence_task": self.next_sentence_task,
            "static_masking": self.max_predictions is not None,
            "max_predictions": self.max_predictions,
            "vocab_size": self.vocab_size,
            "seed": self.seed,
            "files": names,
            **stats,
            **extra,
        }
