"""The pretraining corpus: text files -> documents -> token ids.

Corpus format (google-research/bert's): UTF-8 text files, one sentence per
line, a blank line between documents. Documents travel between the stages
encoded as one int32 array (`encode_document`), 4 bytes a token.
"""

import weakref

import numpy as np
import tensorflow as tf

from tfbert.text.corpus_files import expand_files


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


def batches(items, size):
    """Lists of `size` items (the last one shorter)."""
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def tokenize_documents(tokenize, documents):
    """Documents of strings -> documents of id lists, one per document
    (sentences without tokens dropped, so a document may become empty),
    tokenized in batches of 1,024 sentences. `tokenize`: `sentence_tokenizer`'s."""
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


def sentence_tokenizer(tokenizer):
    """A traced `strings -> [batch, (ids)]` per tokenizer (tracing is slow)."""
    if tokenizer not in _TOKENIZE_FUNCTIONS:
        _TOKENIZE_FUNCTIONS[tokenizer] = tf.function(
            lambda s: tokenizer.tokenize(s).merge_dims(1, 2),
            input_signature=[tf.TensorSpec([None], tf.string)],
        )
    return _TOKENIZE_FUNCTIONS[tokenizer]


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
