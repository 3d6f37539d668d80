"""Pretraining data: text documents -> NSP/MLM instances -> TFRecords -> `tf.data`.

Corpus format (google-research/bert's): UTF-8 text files, one sentence per
line, a blank line between documents.

`write_pretraining_data` streams the corpus: it holds one buffer of
`buffer_documents` documents at a time (the random "next" segments of NSP
come from the same buffer), so memory does not grow with the corpus. The
shards are `pretrain-<i>-of-<n>.tfrecord` plus `pretraining_data.json`
(sequence length, NSP, masking, counts), which the reader checks.

`pretraining_dataset` reads the shards into `(features, targets)` batches for
`BertPretrainer.fit`, masking each batch with a seed derived from
`(seed, batch index)` (dynamic masking: a new mask every epoch; the same
masks again after a resume).
"""

import glob
import json
import os
import random
import weakref

import numpy as np
import tensorflow as tf

METADATA_FILE = "pretraining_data.json"
SHARD_PATTERN = "pretrain-{:05d}-of-{:05d}.tfrecord"


# -- Reading the corpus -----------------------------------------------------
def read_documents(input_files):
    """Yields documents (lists of non-empty lines) from the corpus files, in
    order, one at a time. A missing file is an error naming it."""
    files = expand_files(input_files, what="input file")
    for path in files:
        document = []
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if line:
                    document.append(line)
                elif document:
                    yield document
                    document = []
        if document:
            yield document


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
    bert's `create_instances_from_document`, plus an MLM-only mode).

    With `use_nsp`: pairs (A, B) where B is the actual continuation or, half
    the time, a span of another document (`is_random_next`). A chunk of one
    sentence takes the next sentence when an actual-next pair is drawn, so
    the labels stay balanced; a document of one sentence can only make a
    random-next pair.
    Without NSP (RoBERTa style): one segment per instance, filled to the full
    length from the document's contiguous tokens.

    A segment longer than the space left is truncated (randomly from the
    front or back, as the reference), so a line longer than `max_seq_length`
    loses its excess tokens in NSP mode; MLM-only mode splits it.
    """

    def __init__(self, max_seq_length, short_seq_prob=0.1, use_nsp=True, rng=None):
        if max_seq_length < 5:
            raise ValueError(f"max_seq_length must be >= 5, got {max_seq_length}.")
        self.max_seq_length = max_seq_length
        self.short_seq_prob = short_seq_prob
        self.use_nsp = use_nsp
        self.rng = rng or random.Random(12345)
        self._balance = 0  # random-next minus actual-next pairs so far

    def from_document(self, documents, index):
        """Instances `(tokens_a, tokens_b, is_random_next)` from
        `documents[index]` (a list of sentences, each a list of ids); other
        documents serve as random next segments."""
        rng = self.rng
        document = documents[index]
        max_tokens = self.max_seq_length - (3 if self.use_nsp else 2)
        target = max_tokens
        if rng.random() < self.short_seq_prob:
            target = rng.randint(2, max_tokens)
        if not self.use_nsp:
            stream = [t for sentence in document for t in sentence]
            return [(stream[i:i + target], [], False) for i in range(0, len(stream), target)]

        instances = []
        chunk, chunk_length, i = [], 0, 0
        while i < len(document):
            chunk.append(document[i])
            chunk_length += len(document[i])
            if i == len(document) - 1 or chunk_length >= target:
                # Forced random pairs (one-sentence chunks at a document's end)
                # and the reuse of a random pair's unused sentences both favour
                # random pairs; leaning on the running balance keeps NSP at 50%.
                p_random = 0.5 if self._balance == 0 else (0.25 if self._balance > 0 else 0.75)
                is_random_next = rng.random() < p_random
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
                    other = self._random_other(len(documents), index)
                    random_document = documents[other]
                    start = rng.randint(0, len(random_document) - 1)
                    for sentence in random_document[start:]:
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
):
    """Writes sharded TFRecords of pretraining instances; returns stats.

    `tokenizer`: a `tfbert.text.tokenizer.BertTokenizer`. `masker`: a
    `MaskedLMMasker` for static masking (stored `masked_lm_*` features), or
    None for unmasked instances (mask dynamically when reading). The output
    is the same for the same inputs and seed.
    """
    if dupe_factor < 1 or num_shards < 1 or buffer_documents < 2:
        raise ValueError("dupe_factor and num_shards must be >= 1, buffer_documents >= 2.")
    vocab = tokenizer.vocab
    rng = random.Random(seed)
    builder = InstanceBuilder(max_seq_length, short_seq_prob, use_nsp, rng)
    tokenize = _sentence_tokenizer(tokenizer)
    os.makedirs(output_dir, exist_ok=True)
    names = [SHARD_PATTERN.format(i, num_shards) for i in range(num_shards)]
    tmp_paths = [os.path.join(output_dir, "." + n + ".tmp") for n in names]
    writers = [tf.io.TFRecordWriter(p) for p in tmp_paths]
    stats = {"documents": 0, "sentences": 0, "instances": 0, "random_next": 0,
             "tokens": 0, "masked": 0}
    carry = []  # last document of the previous buffer: a random-next source
    mask_seed = rng.randint(0, 2**31 - 1)

    def flush(buffer):
        nonlocal carry
        sentences = [s for doc in buffer for s in doc]
        ids = []
        for start in range(0, len(sentences), 1024):
            ragged = tokenize(tf.constant(sentences[start:start + 1024]))
            ids.extend(ragged.to_list())
        documents, k = [], 0
        for doc in buffer:
            tokenized = [s for s in ids[k:k + len(doc)] if s]
            k += len(doc)
            if tokenized:
                documents.append(tokenized)
        pool = carry + documents
        if use_nsp and len(pool) == 1:
            raise ValueError(
                f"{input_files}: next-sentence pairs need at least 2 documents (blank "
                "line between documents); the corpus has 1. Add documents or set use_nsp=false."
            )
        instances = []
        for _ in range(dupe_factor):
            for index in range(len(carry), len(pool)):
                instances.extend(builder.from_document(pool, index))
        rng.shuffle(instances)
        carry = pool[-1:]
        packed = [pack_instance(a, b, r, max_seq_length, vocab.cls_id, vocab.sep_id)
                  for a, b, r in instances]
        if masker is not None and packed:
            batch = np.stack([p["input_word_ids"] for p in packed])
            masked = masker(batch, seed=[mask_seed, stats["instances"]])
            for j, p in enumerate(packed):
                for key, value in masked.items():
                    p[key] = value[j].numpy().astype(np.float32 if key == "masked_lm_weights" else np.int64)
            stats["masked"] += int(np.sum(masked["masked_lm_weights"]))
        for p in packed:
            writers[stats["instances"] % num_shards].write(_example(p))
            stats["instances"] += 1
            stats["random_next"] += int(p["next_sentence_labels"][0])
            stats["tokens"] += int(p["input_mask"].sum())
        stats["documents"] += len(documents)
        stats["sentences"] += sum(len(d) for d in documents)

    buffer = []
    try:
        for document in read_documents(input_files):
            buffer.append(document)
            if len(buffer) >= buffer_documents:
                flush(buffer)
                buffer = []
        if buffer:
            flush(buffer)
    finally:
        for w in writers:
            w.close()
    if stats["instances"] == 0:
        for p in tmp_paths:
            os.remove(p)
        raise ValueError(
            f"The corpus {input_files} gave no pretraining instances: it is empty or "
            "has no tokens (one sentence per line, blank line between documents)."
        )
    for tmp, name in zip(tmp_paths, names):
        os.replace(tmp, os.path.join(output_dir, name))
    metadata = {
        "max_seq_length": max_seq_length,
        "use_nsp": use_nsp,
        "static_masking": masker is not None,
        "max_predictions": masker.max_predictions if masker is not None else None,
        "vocab_size": vocab.vocab_size,
        "seed": seed,
        "files": names,
        **stats,
    }
    with open(os.path.join(output_dir, METADATA_FILE), "w", encoding="utf-8") as f:
        json.dump(metadata, f, indent=2)
    log(f"Wrote {stats['instances']} instances from {stats['documents']} documents "
        f"({stats['random_next']} random-next) to {num_shards} shard(s) in {output_dir}.")
    return metadata


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
):
    """`(features, targets)` batches for `BertPretrainer`.

    `masker`: a `MaskedLMMasker` for dynamic masking (batch `i` is masked with
    seed `(seed, i)`), or None to use the static masks stored in the files.
    `skip_batches`: batches already consumed by a resumed run; the order is
    deterministic for a seed, so the run continues where it stopped.
    Batches have a static shape (`drop_remainder`), as XLA wants.
    """
    files = expand_files(train_files, what="training file")
    meta = read_metadata(files)
    seq_length = int(meta["max_seq_length"])
    if use_nsp is None:
        use_nsp = bool(meta["use_nsp"])
    if use_nsp and not meta["use_nsp"]:
        raise ValueError(f"{files[0]}: written with use_nsp=false; it has no next-sentence pairs.")
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
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), 4),
                       num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if repeat:
        ds = ds.repeat()
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed)
    ds = ds.batch(batch_size, drop_remainder=True).enumerate()
    if skip_batches:
        ds = ds.skip(skip_batches)  # serialized records only: cheap
    ds = ds.map(parse_and_mask, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.prefetch(tf.data.AUTOTUNE)
