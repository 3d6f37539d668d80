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
import json
import math
import os
import random
import shutil
import struct
import tempfile
import weakref

import numpy as np
import tensorflow as tf

from tfbert.atomic import write_json

METADATA_FILE = "pretraining_data.json"
SHARD_PATTERN = "pretrain-{:05d}-of-{:05d}.tfrecord"
EVAL_DIR = "eval"
# The binary pair task: "nsp" (BERT: B is the next segment or a random one),
# "sop" (ALBERT: A and B are consecutive, in order or swapped), "none".
NEXT_SENTENCE_TASKS = ("nsp", "sop", "none")


def resolve_next_sentence_task(next_sentence_task=None, use_nsp=True):
    """The task from the two settings: `next_sentence_task` when given, else
    `use_nsp` (True -> "nsp", False -> "none"), as before SOP existed.

    >>> resolve_next_sentence_task("sop"), resolve_next_sentence_task("", use_nsp=False)
    ('sop', 'none')
    """
    if not next_sentence_task:
        return "nsp" if use_nsp else "none"
    if next_sentence_task not in NEXT_SENTENCE_TASKS:
        raise ValueError(f"next_sentence_task must be one of {list(NEXT_SENTENCE_TASKS)}, "
                         f"got {next_sentence_task!r}.")
    if not use_nsp and next_sentence_task != "none":
        raise ValueError(f"use_nsp=false conflicts with next_sentence_task={next_sentence_task}; "
                         "set one of them.")
    return next_sentence_task


# -- Reading the corpus -----------------------------------------------------
def documents_from_lines(lines):
    """Documents (lists of non-empty stripped lines) from an iterable of
    lines: a blank line ends a document."""
    document = []
    for line in lines:
        line = line.strip()
        if line:
            document.append(line)
        elif document:
            yield document
            document = []
    if document:
        yield document


def read_documents(input_files):
    """Yields documents (lists of non-empty lines) from the corpus files, in
    order, one at a time. A missing file is an error naming it."""
    for path in expand_files(input_files, what="input file"):
        with open(path, encoding="utf-8", errors="replace") as f:
            yield from documents_from_lines(f)


def expand_files(patterns, what="file"):
    """Comma-separated strings or lists of paths / globs -> sorted paths."""
    if isinstance(patterns, str):
        patterns = [p for p in patterns.split(",") if p.strip()]
    files = []
    for pattern in patterns:
        pattern = os.path.expanduser(pattern.strip())
        matched = sorted(glob.glob(pattern))
        if not matched:
            raise FileNotFoundError(f"No {what} matches {pattern!r}.")
        files.extend(m for m in matched if os.path.isfile(m))
    if not files:
        raise FileNotFoundError(f"No {what} given.")
    return files


# -- Instances --------------------------------------------------------------
class InstanceBuilder:
    """Turns tokenized documents into pretraining instances (google-research/
    bert's `create_instances_from_document`, plus SOP and MLM-only modes).

    `next_sentence_task` (default from `use_nsp`):
    - "nsp": pairs (A, B) where B is the actual continuation or, half the
      time, a span of another document (`is_random_next`). A chunk of one
      sentence takes the next sentence when an actual-next pair is drawn, so
      the labels stay balanced; a document of one sentence can only make a
      random-next pair.
    - "sop" (ALBERT's sentence-order prediction): A and B are always two
      consecutive segments of the same document; half the time they are
      swapped (label 1). A chunk of one sentence takes the next sentence; a
      document of one sentence is split inside the sentence. Truncation cuts
      A's front and B's back only, so the A|B boundary stays intact.
    - "none" (RoBERTa style): one segment per instance, filled to the full
      length from the document's contiguous tokens.

    A segment longer than the space left is truncated (with NSP randomly from
    the front or back, as the reference), so a line longer than
    `max_seq_length` loses its excess tokens in pair modes; MLM-only mode
    splits it.
    """

    def __init__(self, max_seq_length, short_seq_prob=0.1, use_nsp=True, rng=None,
                 next_sentence_task=None):
        if max_seq_length < 5:
            raise ValueError(f"max_seq_length must be >= 5, got {max_seq_length}.")
        self.max_seq_length = max_seq_length
        self.short_seq_prob = short_seq_prob
        self.task = resolve_next_sentence_task(next_sentence_task, use_nsp)
        self.use_nsp = self.task != "none"  # has a pair label
        self.rng = rng or random.Random(12345)
        self._balance = 0  # label-1 minus label-0 pairs so far

    def from_document(self, documents, index):
        """Instances from `documents[index]`; the other documents serve as
        random next segments."""
        return self.instances(
            documents[index], lambda: documents[self._random_other(len(documents), index)]
        )

    def instances(self, document, random_document):
        """Instances `(tokens_a, tokens_b, label)` from `document` (a list of
        sentences, each a list of ids). `random_document()` returns another
        document (NSP only). `label`: 1 = random next (NSP) / swapped (SOP)."""
        rng = self.rng
        max_tokens = self.max_seq_length - (3 if self.use_nsp else 2)
        target = max_tokens
        if rng.random() < self.short_seq_prob:
            target = rng.randint(2, max_tokens)
        if not self.use_nsp:
            stream = [t for sentence in document for t in sentence]
            return [(stream[i:i + target], [], False) for i in range(0, len(stream), target)]
        if self.task == "sop":
            return self._sop_instances(document, target, max_tokens)

        instances = []
        chunk, chunk_length, i = [], 0, 0
        while i < len(document):
            chunk.append(document[i])
            chunk_length += len(document[i])
            if i == len(document) - 1 or chunk_length >= target:
                # Forced random pairs (one-sentence chunks at a document's end)
                # and the reuse of a random pair's unused sentences both favour
                # random pairs; leaning on the running balance keeps NSP at 50%.
                is_random_next = rng.random() < self._p_label_1()
                if not is_random_next and len(chunk) == 1 and i + 1 < len(document):
                    # An actual next pair needs two sentences: take the next
                    # one (the reference would force a random pair here, which
                    # skews the labels when sentences are long).
                    i += 1
                    chunk.append(document[i])
                a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
                tokens_a = [t for s in chunk[:a_end] for t in s]
                tokens_b = []
                if len(chunk) == 1 or is_random_next:
                    is_random_next = True
                    other = random_document_or_error(random_document)
                    start = rng.randint(0, len(other) - 1)
                    for sentence in other[start:]:
                        tokens_b.extend(sentence)
                        if len(tokens_b) >= target - len(tokens_a):
                            break
                    # The unused sentences of this chunk start the next one.
                    i -= len(chunk) - a_end
                else:
                    is_random_next = False
                    tokens_b = [t for s in chunk[a_end:] for t in s]
                self._truncate_pair(tokens_a, tokens_b, max_tokens)
                if tokens_a and tokens_b:
                    instances.append((tokens_a, tokens_b, is_random_next))
                    self._balance += 1 if is_random_next else -1
                chunk, chunk_length = [], 0
            i += 1
        return instances

    def _sop_instances(self, document, target, max_tokens):
        rng = self.rng
        instances = []
        chunk, chunk_length, i = [], 0, 0
        while i < len(document):
            chunk.append(document[i])
            chunk_length += len(document[i])
            if i == len(document) - 1 or chunk_length >= target:
                if len(chunk) == 1 and i + 1 < len(document):
                    i += 1
                    chunk.append(document[i])
                if len(chunk) >= 2:
                    a_end = rng.randint(1, len(chunk) - 1)
                    tokens_a = [t for s in chunk[:a_end] for t in s]
                    tokens_b = [t for s in chunk[a_end:] for t in s]
                else:  # a one-sentence document: two halves of the sentence
                    tokens = chunk[0]
                    cut = rng.randint(1, len(tokens) - 1) if len(tokens) >= 2 else 0
                    tokens_a, tokens_b = tokens[:cut], tokens[cut:]
                while len(tokens_a) + len(tokens_b) > max_tokens:
                    if len(tokens_a) > len(tokens_b):
                        del tokens_a[0]
                    else:
                        tokens_b.pop()
                if tokens_a and tokens_b:
                    swapped = rng.random() < self._p_label_1()
                    if swapped:
                        tokens_a, tokens_b = tokens_b, tokens_a
                    instances.append((tokens_a, tokens_b, swapped))
                    self._balance += 1 if swapped else -1
                chunk, chunk_length = [], 0
            i += 1
        return instances

    def _p_label_1(self):
        return 0.5 if self._balance == 0 else (0.25 if self._balance > 0 else 0.75)

    def _random_other(self, num_documents, index):
        if num_documents < 2:
            raise ValueError(
                "Next-sentence pairs need at least 2 documents (blank line between "
                "documents); the corpus has 1. Add documents or set use_nsp=false."
            )
        other = self.rng.randint(0, num_documents - 2)
        return other + 1 if other >= index else other

    def _truncate_pair(self, tokens_a, tokens_b, max_tokens):
        while len(tokens_a) + len(tokens_b) > max_tokens:
            longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
            if self.rng.random() < 0.5:
                del longer[0]
            else:
                longer.pop()


def random_document_or_error(random_document):
    document = random_document()
    if not document:
        raise ValueError(
            "Next-sentence pairs need at least 2 documents (blank line between "
            "documents); the corpus has 1. Add documents or set use_nsp=false."
        )
    return document


class RandomDocumentPool:
    """A uniform sample of at most `size` documents of the whole corpus
    (reservoir sampling, Algorithm R), the source of NSP's random "next"
    segments. Documents are kept encoded (int32, 4 bytes a token)."""

    def __init__(self, size, rng):
        if size < 2:
            raise ValueError(f"random_next_pool must be >= 2, got {size}.")
        self.size = size
        self.rng = rng
        self.seen = 0
        self.items = []  # (document id, encoded document)

    def add(self, doc_id, encoded):
        self.seen += 1
        if len(self.items) < self.size:
            self.items.append((doc_id, encoded))
        else:
            j = self.rng.randrange(self.seen)
            if j < self.size:
                self.items[j] = (doc_id, encoded)

    def draw(self, exclude_id):
        """A random document other than `exclude_id` (None if there is none)."""
        candidates = len(self.items) - any(i == exclude_id for i, _ in self.items)
        if candidates < 1:
            return None
        while True:
            doc_id, encoded = self.items[self.rng.randrange(len(self.items))]
            if doc_id != exclude_id:
                return decode_document(encoded)


def encode_document(document):
    """[[ids], ...] -> int32 array `[n, len_1..len_n, ids...]`."""
    lengths = [len(s) for s in document]
    return np.array([len(document)] + lengths + [t for s in document for t in s], np.int32)


def decode_document(encoded):
    values = encoded.tolist()
    n = values[0]
    out, k = [], 1 + n
    for length in values[1:1 + n]:
        out.append(values[k:k + length])
        k += length
    return out


def encode_instance(tokens_a, tokens_b, label):
    return np.array([int(label), len(tokens_a)] + list(tokens_a) + list(tokens_b), np.int32)


def decode_instance(encoded):
    values = encoded.tolist()
    return values[2:2 + values[1]], values[2 + values[1]:], values[0]


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


def pack_instance(tokens_a, tokens_b, is_random_next, max_seq_length, cls_id, sep_id):
    """`[CLS] A [SEP] (B [SEP])` padded to `max_seq_length`, as int64 arrays."""
    ids = [cls_id] + tokens_a + [sep_id]
    types = [0] * len(ids)
    if tokens_b:
        ids += tokens_b + [sep_id]
        types += [1] * (len(tokens_b) + 1)
    pad = max_seq_length - len(ids)
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
    ).SerializeToString()


def serialize_instances(instances, max_seq_length, vocab, masker=None, mask_seed=None,
                        first_index=0, stats=None):
    """Packs (and with `masker`, statically masks) `(a, b, label)` instances
    into serialized `tf.train.Example`s; counts into `stats` when given.
    The masks of instance `first_index + j` come from seed `[mask_seed, first_index]`
    for the batch, so the output is deterministic."""
    packed = [pack_instance(list(a), list(b), r, max_seq_length, vocab.cls_id, vocab.sep_id)
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


def data_metadata(max_seq_length, task, masker, vocab_size, seed, names, stats, **extra):
    """The `pretraining_data.json` contents (shared by the local and Beam writers)."""
    return {
        "max_seq_length": max_seq_length,
        "use_nsp": task != "none",  # the records carry a pair label
        "next_sentence_task": task,
        "static_masking": masker is not None,
        "max_predictions": masker.max_predictions if masker is not None else None,
        "vocab_size": vocab_size,
        "seed": seed,
        "files": names,
        **stats,
        **extra,
    }


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
    tokenize = _sentence_tokenizer(tokenizer)
    os.makedirs(output_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".tmp-pretraining-", dir=output_dir)
    try:
        # 1. Tokenize into a document store; sample the random-next pool.
        store = os.path.join(work, "documents.bin")
        counts = {"train": empty_stats(), "eval": empty_stats()}
        total_tokens = {"train": 0, "eval": 0}
        with open(store, "wb") as f:
            doc_id = 0
            for buffer in _batches(read_documents(input_files), buffer_documents):
                for document in _tokenize_documents(tokenize, buffer):
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


def _batches(items, size):
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _tokenize_documents(tokenize, documents):
    """Documents of strings -> documents of id lists, one per document
    (sentences without tokens dropped, so a document may become empty),
    tokenized in batches of 1,024 sentences."""
    sentences = [s for doc in documents for s in doc]
    ids = []
    for start in range(0, len(sentences), 1024):
        ids.extend(tokenize(tf.constant(sentences[start:start + 1024])).to_list())
    out, k = [], 0
    for doc in documents:
        out.append([s for s in ids[k:k + len(doc)] if s])
        k += len(doc)
    return out


_TOKENIZE_FUNCTIONS = weakref.WeakKeyDictionary()


def _sentence_tokenizer(tokenizer):
    """A traced `strings -> [batch, (ids)]` per tokenizer (tracing is slow)."""
    if tokenizer not in _TOKENIZE_FUNCTIONS:
        _TOKENIZE_FUNCTIONS[tokenizer] = tf.function(
            lambda s: tokenizer.tokenize(s).merge_dims(1, 2),
            input_signature=[tf.TensorSpec([None], tf.string)],
        )
    return _TOKENIZE_FUNCTIONS[tokenizer]


# -- Reading ----------------------------------------------------------------
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
    `next_sentence_task` / `use_nsp`: the pair task to train ("nsp", "sop" or
    "none"); by default the one the data was written for.
    Batches have a static shape (`drop_remainder`), as XLA wants; an
    evaluation set keeps its last partial batch with `drop_remainder=False`.
    """
    files = expand_files(train_files, what="training file")
    meta = read_metadata(files)
    seq_length = int(meta["max_seq_length"])
    written = meta.get("next_sentence_task") or ("nsp" if meta["use_nsp"] else "none")
    if next_sentence_task is None and use_nsp is None:
        task = written
    else:
        task = resolve_next_sentence_task(next_sentence_task, True if use_nsp is None else use_nsp)
    if task != "none" and task != written:
        raise ValueError(
            f"{files[0]}: written with next_sentence_task={written}; training asks for {task}. "
            f"Write the data with --next_sentence_task={task}, or train with "
            f"next_sentence_task: {written}."
        )
    use_nsp = task != "none"
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
        if use_nsp:
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
