"""Pretraining data: text documents -> NSP/SOP/MLM instances -> TFRecords -> `tf.data`.

One pipeline, two runners. The steps every run shares are here
(`write_shards`): the settings check, a temporary directory inside the
output directory, the document-count and no-instance errors, moving the
shards into place, removing an earlier run's shards, the metadata and the
final log line. A runner only writes the shards into the temporary
directory and counts: the local writer below (`write_pretraining_data`), or
Apache Beam (`tfbert.data.pretraining.beam`) for corpora beyond one machine.
The jobs they share have their own modules: reading the corpus
(`documents`), building instances (`instances`), the record format
(`records`) and the `tf.data` reader (`dataset`), all in this package.

The local writer makes shards whose order does not depend on the order of
the corpus, with memory bounded by a bucket, not by the corpus:

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
"""

import dataclasses
import math
import random
import struct
import uuid
import warnings

import numpy as np
import tensorflow as tf

from tfbert.atomic import write_json
from tfbert.data.pretraining.dataset import pretraining_dataset, read_metadata
from tfbert.data.pretraining.documents import (
    batches, decode_document, documents_from_lines, encode_document, read_documents,
    sentence_tokenizer, tokenize_documents)
from tfbert.data.pretraining.instances import (
    NEXT_SENTENCE_TASKS, InstanceBuilder, NoOtherDocumentError, RandomDocumentPool,
    decode_instance, encode_instance, next_sentence_task_or_use_nsp,
    resolve_next_sentence_task)
from tfbert.data.pretraining.records import (
    EVAL_DIR, METADATA_FILE, SHARD_PATTERN, RecordFormat, empty_stats, serialize_instances)
from tfbert.text.corpus_files import expand_files

# What callers import from here (tools, tests, docs); the rest is in the job modules.
__all__ = [
    "EVAL_DIR", "METADATA_FILE", "NEXT_SENTENCE_TASKS", "SHARD_PATTERN", "InstanceBuilder",
    "RecordFormat", "RunCounts", "check_settings", "run_summary", "documents_from_lines", "expand_files",
    "next_sentence_task_or_use_nsp", "pretraining_dataset", "read_documents", "read_metadata",
    "resolve_next_sentence_task",
    "write_pretraining_data", "write_shards",
]
SPLITS = ("train", "eval")


# -- What every runner shares -----------------------------------------------
def check_settings(dupe_factor, num_shards, buffer_documents, eval_fraction,
                   bucket_instances=1):
    """One-line errors for settings no runner can use."""
    for name, value in (("dupe_factor", dupe_factor), ("num_shards", num_shards),
                        ("buffer_documents", buffer_documents),
                        ("bucket_instances", bucket_instances)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}.")
    if not 0.0 <= eval_fraction < 1.0:
        raise ValueError(f"eval_fraction must be in [0, 1), got {eval_fraction}.")


@dataclasses.dataclass
class RunCounts:
    """What a runner reports of its run. `stats`: split -> `empty_stats()`
    counts of what it wrote; `summary`: the run's account of every document
    (`run_summary`), kept in the train split's `pretraining_data.json`;
    `unpaired_documents`: NSP documents that found no other document to draw
    a random "next" segment from; `metadata`: what the runner adds to each
    split's `pretraining_data.json`."""

    stats: dict
    summary: dict
    unpaired_documents: int = 0
    metadata: dict = dataclasses.field(default_factory=dict)


def run_summary(runner, files, skipped, documents, instances, num_shards):
    """The `summary` of `pretraining_data.json`, which the tool prints.
    `files`: path -> {"documents", "sentences"} read; `skipped`: reason
    ("empty": no tokens, "one_sentence", "no_instance") -> documents that gave
    no instance; `documents`, `instances`, `num_shards`: split -> number
    (documents: those that gave instances)."""
    return {
        "runner": runner,
        "files": files,
        "documents_read": sum(f["documents"] for f in files.values()),
        "sentences_read": sum(f["sentences"] for f in files.values()),
        "documents_skipped": skipped,
        "documents": documents,
        "instances": instances,
        "num_shards": num_shards,
    }


def write_shards(write, input_files, output_dir, record_format, num_shards, log=print,
                 runner_note=""):
    """Runs a runner and publishes what it wrote; returns the train split's metadata.

    `write(work_dir)` writes the train shards (`SHARD_PATTERN` of `num_shards`)
    into `work_dir` and the eval shard into `work_dir/eval/`, and returns
    `RunCounts`. `work_dir` is inside `output_dir` (a local path or a URL
    such as gs://...), so the shards are renamed into place; nothing in
    `output_dir` changes when the runner or a check fails.
    `runner_note`: what the final log line says of the runner.
    """
    directory = output_dir.rstrip("/") or "/"
    work_dir = f"{directory}/.tmp-pretraining-{uuid.uuid4().hex[:8]}"
    tf.io.gfile.makedirs(f"{work_dir}/{EVAL_DIR}")
    try:
        counts = write(work_dir)
        stats = counts.stats
        documents = sum(stats[s]["documents"] for s in SPLITS)
        if record_format.next_sentence_task == "nsp" and (documents == 1
                                                          or counts.unpaired_documents):
            raise ValueError(
                f"{input_files}: next-sentence pairs need at least 2 documents (blank line "
                f"between documents); the corpus has {documents} "
                f"({stats['train']['documents']} for training). Add documents or set "
                "next_sentence_task to sop or none."
            )
        if stats["train"]["instances"] == 0:
            raise ValueError(
                f"The corpus {input_files} gave no pretraining instances: it is empty or "
                "has no tokens (one sentence per line, blank line between documents)."
            )
        metadata = _publish(work_dir, directory, counts, record_format, num_shards)
    finally:
        if tf.io.gfile.exists(work_dir):
            tf.io.gfile.rmtree(work_dir)
    train, held_out = stats["train"], stats["eval"]["instances"]
    pair = {"nsp": "random-next", "sop": "swapped", "none": "no pair label"}
    log(f"Wrote {train['instances']} instances from {train['documents']} documents "
        f"({train['random_next']} {pair[record_format.next_sentence_task]}) to {num_shards} "
        f"shard(s) in {output_dir}{runner_note}"
        + (f"; {held_out} held out in {EVAL_DIR}/." if held_out else "."))
    return metadata


def _publish(work_dir, output_dir, counts, record_format, num_shards):
    """Moves the shards from `work_dir` into place and writes the metadata."""
    stats, eval_instances = counts.stats, counts.stats["eval"]["instances"]
    metadata = None
    for split, directory, shards in (("train", output_dir, num_shards),
                                     ("eval", f"{output_dir}/{EVAL_DIR}", 1)):
        if split == "eval" and not stats[split]["documents"]:
            # An earlier run's held-out split would be evaluated as this one's.
            _remove_stale_shards(directory, [])
            if tf.io.gfile.exists(f"{directory}/{METADATA_FILE}"):
                tf.io.gfile.remove(f"{directory}/{METADATA_FILE}")
            continue
        tf.io.gfile.makedirs(directory)
        names = [SHARD_PATTERN.format(i, shards) for i in range(shards)]
        source = work_dir if split == "train" else f"{work_dir}/{EVAL_DIR}"
        for name in names:
            if not tf.io.gfile.exists(f"{source}/{name}"):  # no instance drew this shard
                tf.io.TFRecordWriter(f"{source}/{name}").close()
            tf.io.gfile.rename(f"{source}/{name}", f"{directory}/{name}", overwrite=True)
        _remove_stale_shards(directory, names)
        meta = record_format.metadata(names, stats[split], split=split, **counts.metadata)
        if split == "train":
            metadata = meta
            if eval_instances:
                meta["eval_instances"] = eval_instances
            meta["summary"] = counts.summary
        write_json(f"{directory}/{METADATA_FILE}", meta)
    return metadata


def _remove_stale_shards(directory, names):
    """Shards of an earlier run with another shard count would be read too."""
    for path in tf.io.gfile.glob(f"{directory}/pretrain-*-of-*.tfrecord"):
        if path.rsplit("/", 1)[-1] not in names:
            tf.io.gfile.remove(path)


# -- The local runner -------------------------------------------------------
def write_pretraining_data(
    input_files,
    output_dir,
    tokenizer,
    seq_length=128,
    short_seq_prob=0.1,
    dupe_factor=1,
    num_shards=1,
    seed=12345,
    use_nsp=None,
    masker=None,
    buffer_documents=1000,
    log=print,
    next_sentence_task=None,
    random_next_pool=10000,
    bucket_instances=50000,
    eval_fraction=0.0,
    max_seq_length=None,
):
    """Writes sharded TFRecords of pretraining instances; returns the metadata.

    `tokenizer`: a `tfbert.text.tokenizer.BertTokenizer`. `next_sentence_task`:
    the pair task, "nsp" (default), "sop" or "none" (`use_nsp` is its
    deprecated alias). `masker`: a
    `MaskedLMMasker` for static masking (stored `masked_lm_*` features), or
    None for unmasked instances (mask dynamically when reading).
    `buffer_documents`: documents tokenized at a time. `random_next_pool`:
    documents in the reservoir of random "next" segments. `bucket_instances`:
    about how many instances one temporary bucket holds (the memory unit of
    the shuffle). `eval_fraction`: share of the documents held out to
    `<output_dir>/eval/`. The output is the same for the same inputs and seed.
    `seq_length`: the length of every instance (`max_seq_length` is its old
    name, one release).
    """
    if max_seq_length is not None:
        warnings.warn("write_pretraining_data: max_seq_length is deprecated: use seq_length.",
                      FutureWarning, stacklevel=2)
        seq_length = max_seq_length
    check_settings(dupe_factor, num_shards, buffer_documents, eval_fraction, bucket_instances)
    task = next_sentence_task_or_use_nsp(next_sentence_task, use_nsp)
    vocab = tokenizer.vocab
    rng = random.Random(seed)
    builder = InstanceBuilder(seq_length, short_seq_prob, rng=rng, next_sentence_task=task)
    pool = RandomDocumentPool(random_next_pool, rng)
    tokenize = sentence_tokenizer(tokenizer)

    def write(work):
        # 1. Tokenize into a document store; sample the random-next pool.
        store = f"{work}/documents.bin"
        counts = {s: empty_stats() for s in SPLITS}
        total_tokens = {s: 0 for s in SPLITS}
        files = {}  # path -> documents and sentences read
        empty = 0
        one_sentence = bytearray()  # per document id (a byte each: memory stays bounded)
        with open(store, "wb") as f:
            doc_id = 0
            for buffer in batches(_read_counting(input_files, files), buffer_documents):
                for document in tokenize_documents(tokenize, buffer):
                    if not document:
                        empty += 1
                        continue
                    split = "eval" if eval_fraction and rng.random() < eval_fraction else "train"
                    encoded = encode_document(document)
                    _write_record(f, np.concatenate([[doc_id, split == "eval"], encoded]).astype(np.int32))
                    if split == "train":
                        pool.add(doc_id, encoded)
                    counts[split]["documents"] += 1
                    counts[split]["sentences"] += len(document)
                    total_tokens[split] += sum(len(s) for s in document)
                    one_sentence.append(len(document) == 1)
                    doc_id += 1

        # 2. Instances, scattered into random buckets.
        def num_buckets(tokens):
            estimate = tokens * dupe_factor / max(1.0, 0.8 * (seq_length - 3))
            return max(1, math.ceil(estimate / bucket_instances))

        buckets = {s: [f"{work}/{s}-{i}.bin" for i in range(num_buckets(total_tokens[s]))]
                   for s in SPLITS}
        bucket_files = {s: [open(p, "wb") for p in paths] for s, paths in buckets.items()}
        unpaired = 0
        used = bytearray(len(one_sentence))  # per document id: 1 + is_eval once it gave an instance
        try:
            for _ in range(dupe_factor):
                for record in _read_records(store):
                    doc_id, is_eval, document = int(record[0]), bool(record[1]), decode_document(record[2:])
                    split = "eval" if is_eval else "train"
                    try:
                        instances = builder.instances(document, lambda: pool.draw(doc_id))
                    except NoOtherDocumentError:  # write_shards says so
                        unpaired += 1
                        continue
                    if instances:
                        used[doc_id] = 1 + is_eval
                    for a, b, label in instances:
                        bucket = bucket_files[split][rng.randrange(len(bucket_files[split]))]
                        _write_record(bucket, encode_instance(a, b, label))
        finally:
            for f in bucket_files["train"] + bucket_files["eval"]:
                f.close()

        # 3. Each bucket shuffled in memory and dealt into the shards.
        mask_seed = rng.randint(0, 2**31 - 1)
        for split, directory, shards in (("train", work, num_shards),
                                         ("eval", f"{work}/{EVAL_DIR}", 1)):
            stats = counts[split]
            if split == "eval" and not stats["documents"]:
                continue
            writers = [tf.io.TFRecordWriter(f"{directory}/{SHARD_PATTERN.format(i, shards)}")
                       for i in range(shards)]
            try:
                for path in buckets[split]:
                    instances = [decode_instance(r) for r in _read_records(path)]
                    tf.io.gfile.remove(path)
                    rng.shuffle(instances)
                    for start in range(0, len(instances), 1024):
                        first = stats["instances"]
                        records = serialize_instances(
                            instances[start:start + 1024], seq_length, vocab, masker,
                            mask_seed + (split == "eval"), first, stats)
                        for j, record in enumerate(records):
                            writers[(first + j) % shards].write(record)
            finally:
                for w in writers:
                    w.close()
        unused = used.count(0)
        short = sum(1 for u, one in zip(used, one_sentence) if one and not u)
        summary = run_summary(
            "local writer", files,
            skipped={"empty": empty, "one_sentence": short, "no_instance": unused - short},
            documents={"train": used.count(1), "eval": used.count(2)},
            instances={s: counts[s]["instances"] for s in SPLITS},
            num_shards={"train": num_shards, "eval": 1 if counts["eval"]["documents"] else 0})
        return RunCounts(counts, summary, unpaired_documents=unpaired)

    record_format = RecordFormat(seq_length, task,
                                 masker.max_predictions if masker is not None else None,
                                 vocab.vocab_size, seed)
    return write_shards(write, input_files, output_dir, record_format, num_shards, log)


def _read_counting(input_files, files):
    """`read_documents`, counting the documents and sentences of each file into `files`."""
    for path in expand_files(input_files, what="input file"):
        count = files[path] = {"documents": 0, "sentences": 0}
        with open(path, encoding="utf-8", errors="replace") as f:
            for document in documents_from_lines(f):
                count["documents"] += 1
                count["sentences"] += len(document)
                yield document


def _write_record(f, array):
    """The local runner's temporary files: records of int32 arrays, each
    after its byte length."""
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
