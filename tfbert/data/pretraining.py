"""Pretraining data: text documents -> NSP/SOP/MLM instances -> TFRecords -> `tf.data`.

Corpus format (google-research/bert's): UTF-8 text files, one sentence per
line, a blank line between documents.

`write_pretraining_data` makes shards whose order does not depend on the
order of the corpus, with memory bounded by a bucket, not by the corpus:

1. tokenize the documents (`buffer_documents` at a time) into a temporary
   file, keeping a uniform reservoir sample of `random_next_pool` documents
   of the whole corpus: NSP's random "next" segments come from it, so from
   anywhere in the corpus, not only from nearby documents;
2. build the instances document by document and scatter each one into a
   random temporary bucket (about `bucket_instances` instances each);
3. shuffle each bucket in memory and deal it into the shards.

Every bucket is a random sample of the whole corpus in random order, so every
stretch of every shard is too. A corpus in file order (one source, then
another) still gives mixed training batches. The output is the same for the
same inputs and seed. With `eval_fraction`, that share of the documents goes
to `<output_dir>/eval/` (same format), for the trainer's held-out evaluation.

The shards are `pretrain-<i>-of-<n>.tfrecord` plus `pretraining_data.json`
(sequence length, next-sentence task, masking, counts), which the reader checks.

`pretraining_dataset` reads the shards into `(features, targets)` batches for
`BertPretrainer.fit`, interleaving all shards one record at a time and masking
each batch with a seed derived from `(seed, batch index)` (dynamic masking: a
new mask every epoch; the same masks again after a resume).
"""

import glob
import math
import os
import random
import shutil
import struct
import tempfile

import numpy as np
import tensorflow as tf

from tfbert.atomic import write_json
from tfbert.data.pretraining_dataset import pretraining_dataset, read_metadata  # noqa: F401
from tfbert.data.pretraining_documents import (  # noqa: F401
    batches, decode_document, documents_from_lines, encode_document, expand_files,
    read_documents, sentence_tokenizer, tokenize_documents)
from tfbert.data.pretraining_instances import (  # noqa: F401
    NEXT_SENTENCE_TASKS, InstanceBuilder, RandomDocumentPool, decode_instance, encode_instance,
    resolve_next_sentence_task)
from tfbert.data.pretraining_records import (  # noqa: F401
    EVAL_DIR, METADATA_FILE, SHARD_PATTERN, data_metadata, empty_stats, pack_instance,
    serialize_instances)


def _write_record(f, array):
    data = array.tobytes()
    f.write(struct.pack("<I", len(data)))
    f.write(data)


def _read_records(path):
    with open(path, "rb") as f:
        while True:
            head = f.read(4)
            if not head:
                return
            (size,) = struct.unpack("<I", head)
            yield np.frombuffer(f.read(size), np.int32)


# -- Writing ----------------------------------------------------------------
def write_pretraining_data(
    input_files,
    output_dir,
    tokenizer,
    max_seq_length=128,
    short_seq_prob=0.1,
    dupe_factor=1,
    num_shards=1,
    seed=12345,
    use_nsp=True,
    masker=None,
    buffer_documents=1000,
    log=print,
    next_sentence_task=None,
    random_next_pool=10000,
    bucket_instances=50000,
    eval_fraction=0.0,
):
    """Writes sharded TFRecords of pretraining instances; returns the metadata.

    `tokenizer`: a `tfbert.text.tokenizer.BertTokenizer`. `masker`: a
    `MaskedLMMasker` for static masking (stored `masked_lm_*` features), or
    None for unmasked instances (mask dynamically when reading).
    `buffer_documents`: documents tokenized at a time. `random_next_pool`:
    documents in the reservoir of random "next" segments. `bucket_instances`:
    about how many instances one temporary bucket holds (the memory unit of
    the shuffle). `eval_fraction`: share of the documents held out to
    `<output_dir>/eval/`. The output is the same for the same inputs and seed.
    """
    if dupe_factor < 1 or num_shards < 1 or buffer_documents < 1 or bucket_instances < 1:
        raise ValueError("dupe_factor, num_shards, buffer_documents and bucket_instances "
                         "must be >= 1.")
    if not 0.0 <= eval_fraction < 1.0:
        raise ValueError(f"eval_fraction must be in [0, 1), got {eval_fraction}.")
    task = resolve_next_sentence_task(next_sentence_task, use_nsp)
    vocab = tokenizer.vocab
    rng = random.Random(seed)
    builder = InstanceBuilder(max_seq_length, short_seq_prob, rng=rng, next_sentence_task=task)
    pool = RandomDocumentPool(random_next_pool, rng)
    tokenize = sentence_tokenizer(tokenizer)
    os.makedirs(output_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".tmp-pretraining-", dir=output_dir)
    try:
        # 1. Tokenize into a document store; sample the random-next pool.
        store = os.path.join(work, "documents.bin")
        counts = {"train": empty_stats(), "eval": empty_stats()}
        total_tokens = {"train": 0, "eval": 0}
        with open(store, "wb") as f:
            doc_id = 0
            for buffer in batches(read_documents(input_files), buffer_documents):
                for document in tokenize_documents(tokenize, buffer):
                    if not document:
                        continue
                    split = "eval" if eval_fraction and rng.random() < eval_fraction else "train"
                    encoded = encode_document(document)
                    _write_record(f, np.concatenate([[doc_id, split == "eval"], encoded]).astype(np.int32))
                    if split == "train":
                        pool.add(doc_id, encoded)
                    counts[split]["documents"] += 1
                    counts[split]["sentences"] += len(document)
                    total_tokens[split] += sum(len(s) for s in document)
                    doc_id += 1
        if task == "nsp" and counts["train"]["documents"] + counts["eval"]["documents"] == 1:
            raise ValueError(
                f"{input_files}: next-sentence pairs need at least 2 documents (blank "
                "line between documents); the corpus has 1. Add documents or set use_nsp=false."
            )

        # 2. Instances, scattered into random buckets.
        def num_buckets(tokens):
            estimate = tokens * dupe_factor / max(1.0, 0.8 * (max_seq_length - 3))
            return max(1, math.ceil(estimate / bucket_instances))

        buckets = {s: [os.path.join(work, f"{s}-{i}.bin") for i in range(num_buckets(total_tokens[s]))]
                   for s in ("train", "eval")}
        files = {s: [open(p, "wb") for p in paths] for s, paths in buckets.items()}
        try:
            for _ in range(dupe_factor):
                for record in _read_records(store):
                    doc_id, is_eval, document = int(record[0]), bool(record[1]), decode_document(record[2:])
                    split = "eval" if is_eval else "train"
                    for a, b, label in builder.instances(document, lambda: pool.draw(doc_id)):
                        bucket = files[split][rng.randrange(len(files[split]))]
                        _write_record(bucket, encode_instance(a, b, label))
        finally:
            for f in files["train"] + files["eval"]:
                f.close()

        # 3. Each bucket shuffled in memory and dealt into the shards.
        mask_seed = rng.randint(0, 2**31 - 1)
        metadata = None
        for split, directory, shards in (("train", output_dir, num_shards),
                                         ("eval", os.path.join(output_dir, EVAL_DIR), 1)):
            stats = counts[split]
            if split == "eval" and not stats["documents"]:
                # An earlier run's held-out split would be evaluated as this one's.
                _remove_stale_shards(directory, [])
                if os.path.isfile(os.path.join(directory, METADATA_FILE)):
                    os.remove(os.path.join(directory, METADATA_FILE))
                continue
            os.makedirs(directory, exist_ok=True)
            names = [SHARD_PATTERN.format(i, shards) for i in range(shards)]
            tmp_paths = [os.path.join(work, f"{split}-{n}") for n in names]
            writers = [tf.io.TFRecordWriter(p) for p in tmp_paths]
            try:
                for path in buckets[split]:
                    instances = [decode_instance(r) for r in _read_records(path)]
                    os.remove(path)
                    rng.shuffle(instances)
                    for start in range(0, len(instances), 1024):
                        first = stats["instances"]
                        records = serialize_instances(
                            instances[start:start + 1024], max_seq_length, vocab, masker,
                            mask_seed + (split == "eval"), first, stats)
                        for j, record in enumerate(records):
                            writers[(first + j) % shards].write(record)
            finally:
                for w in writers:
                    w.close()
            if split == "train" and stats["instances"] == 0:
                raise ValueError(
                    f"The corpus {input_files} gave no pretraining instances: it is empty or "
                    "has no tokens (one sentence per line, blank line between documents)."
                )
            for tmp, name in zip(tmp_paths, names):
                os.replace(tmp, os.path.join(directory, name))
            _remove_stale_shards(directory, names)
            meta = data_metadata(max_seq_length, task, masker, vocab.vocab_size, seed, names,
                                 stats, split=split)
            if split == "train":
                metadata = meta
            write_json(os.path.join(directory, METADATA_FILE), meta)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if counts["eval"]["instances"]:
        metadata["eval_instances"] = counts["eval"]["instances"]
        write_json(os.path.join(output_dir, METADATA_FILE), metadata)
    stats = counts["train"]
    held_out = (f"; {counts['eval']['instances']} held out in {EVAL_DIR}/"
                if counts["eval"]["instances"] else "")
    label = {"nsp": "random-next", "sop": "swapped", "none": "no pair label"}[task]
    log(f"Wrote {stats['instances']} instances from {stats['documents']} documents "
        f"({stats['random_next']} {label}) to {num_shards} shard(s) in {output_dir}{held_out}.")
    return metadata


def _remove_stale_shards(directory, names):
    """Shards of an earlier run with another shard count would be read too."""
    for path in glob.glob(os.path.join(directory, "pretrain-*-of-*.tfrecord")):
        if os.path.basename(path) not in names:
            os.remove(path)
