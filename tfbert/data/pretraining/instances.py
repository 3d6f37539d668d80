"""Pretraining instances: tokenized documents -> `(tokens_a, tokens_b, label)`.

The pair task (`next_sentence_task`) decides what a pair is: BERT's
next-sentence prediction, ALBERT's sentence order, or none (MLM only).
Instances travel between the stages encoded as one int32 array
(`encode_instance`).
"""

import random
import warnings

import numpy as np

from tfbert.data.pretraining.documents import decode_document

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


def next_sentence_task_of(use_nsp):
    """The `next_sentence_task` that the old `use_nsp` flag means (True: nsp,
    False: none); any other value is passed on for the config to refuse.

    >>> next_sentence_task_of(False)
    'none'
    """
    return resolve_next_sentence_task(None, use_nsp) if isinstance(use_nsp, bool) else use_nsp


def fold_use_nsp(values):
    """A saved config dict under the one name: configs saved before
    `next_sentence_task` was it held `use_nsp` beside it ("" then meaning:
    from `use_nsp`).

    >>> fold_use_nsp({"use_nsp": False, "next_sentence_task": ""})
    {'next_sentence_task': 'none'}
    """
    if "use_nsp" not in values:
        return values
    values = dict(values)
    use_nsp = values.pop("use_nsp")
    values["next_sentence_task"] = resolve_next_sentence_task(
        values.get("next_sentence_task"), use_nsp)
    return values


_WARNED = set()


def next_sentence_task_or_use_nsp(next_sentence_task, use_nsp):
    """The pair task of the data settings, where `next_sentence_task` is the
    name and `use_nsp` (None: not given) its deprecated alias, which warns
    once a process.

    >>> next_sentence_task_or_use_nsp("sop", None), next_sentence_task_or_use_nsp(None, None)
    ('sop', 'nsp')
    """
    if use_nsp is None:
        return resolve_next_sentence_task(next_sentence_task)
    if "use_nsp" not in _WARNED:
        _WARNED.add("use_nsp")
        warnings.warn("use_nsp is deprecated: set next_sentence_task (nsp, sop or none; "
                      "use_nsp=false is next_sentence_task=none).", FutureWarning, stacklevel=3)
    return resolve_next_sentence_task(next_sentence_task, use_nsp)


class NoOtherDocumentError(ValueError):
    """NSP needs a random "next" segment from another document, and there is none."""

    def __init__(self):
        super().__init__("Next-sentence pairs need at least 2 documents (blank line between "
                         "documents); the corpus has 1. Add documents or set "
                         "next_sentence_task to sop or none.")


class InstanceBuilder:
    """Turns tokenized documents into pretraining instances (google-research/
    bert's `create_instances_from_document`, plus SOP and MLM-only modes).

    `next_sentence_task` (default "nsp"; `use_nsp` is its deprecated alias):
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
    `seq_length` loses its excess tokens in pair modes; MLM-only mode
    splits it.
    """

    def __init__(self, seq_length, short_seq_prob=0.1, use_nsp=None, rng=None,
                 next_sentence_task=None):
        if seq_length < 5:
            raise ValueError(f"seq_length must be >= 5, got {seq_length}.")
        self.seq_length = seq_length
        self.short_seq_prob = short_seq_prob
        self.task = next_sentence_task_or_use_nsp(next_sentence_task, use_nsp)
        self.has_pair_label = self.task != "none"
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
        max_tokens = self.seq_length - (3 if self.has_pair_label else 2)
        target = max_tokens
        if rng.random() < self.short_seq_prob:
            target = rng.randint(2, max_tokens)
        if not self.has_pair_label:
            stream = [t for sentence in document for t in sentence]
            return [(stream[i:i + target], [], False) for i in range(0, len(stream), target)]
        if self.task == "sop":
            return self._walk_chunks(document, target, lambda chunk, i: self._sop_pair(
                document, chunk, i, max_tokens))
        return self._walk_chunks(document, target, lambda chunk, i: self._nsp_pair(
            document, chunk, i, target, max_tokens, random_document))

    def _walk_chunks(self, document, target, pair_of_chunk):
        """The walk both pair tasks share: sentences gather into a chunk until
        it holds `target` tokens (or the document ends); `pair_of_chunk(chunk,
        i)` returns `(index of the last sentence used, instance or None)`: it may
        take the next sentence, or give unused ones back to the next chunk."""
        instances = []
        chunk, chunk_length, i = [], 0, 0
        while i < len(document):
            chunk.append(document[i])
            chunk_length += len(document[i])
            if i == len(document) - 1 or chunk_length >= target:
                i, instance = pair_of_chunk(chunk, i)
                if instance:
                    instances.append(instance)
                    self._balance += 1 if instance[2] else -1
                chunk, chunk_length = [], 0
            i += 1
        return instances

    def _nsp_pair(self, document, chunk, i, target, max_tokens, random_document):
        rng = self.rng
        # Forced random pairs (one-sentence chunks at a document's end) and the
        # reuse of a random pair's unused sentences both favour random pairs;
        # leaning on the running balance keeps NSP at 50%.
        is_random_next = rng.random() < self._p_label_1()
        if not is_random_next and len(chunk) == 1 and i + 1 < len(document):
            # An actual next pair needs two sentences: take the next one (the
            # reference would force a random pair here, which skews the labels
            # when sentences are long).
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
            tokens_b = [t for s in chunk[a_end:] for t in s]
        self._truncate_pair(tokens_a, tokens_b, max_tokens)
        return i, ((tokens_a, tokens_b, is_random_next) if tokens_a and tokens_b else None)

    def _sop_pair(self, document, chunk, i, max_tokens):
        rng = self.rng
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
        if not (tokens_a and tokens_b):
            return i, None
        swapped = rng.random() < self._p_label_1()
        if swapped:
            tokens_a, tokens_b = tokens_b, tokens_a
        return i, (tokens_a, tokens_b, swapped)

    def _p_label_1(self):
        return 0.5 if self._balance == 0 else (0.25 if self._balance > 0 else 0.75)

    def _random_other(self, num_documents, index):
        if num_documents < 2:
            raise NoOtherDocumentError()
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
        raise NoOtherDocumentError()
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
        return draw_other_document(self.items, exclude_id, self.rng)


def draw_other_document(items, exclude_id, rng):
    """A random document of `items` (`(id, encoded document)` pairs) other than
    `exclude_id`, decoded; None if there is none."""
    if len(items) - any(i == exclude_id for i, _ in items) < 1:
        return None
    while True:
        doc_id, encoded = items[rng.randrange(len(items))]
        if doc_id != exclude_id:
            return decode_document(encoded)


def encode_instance(tokens_a, tokens_b, label):
    return np.array([int(label), len(tokens_a)] + list(tokens_a) + list(tokens_b), np.int32)


def decode_instance(encoded):
    values = encoded.tolist()
    return values[2:2 + values[1]], values[2 + values[1]:], values[0]
