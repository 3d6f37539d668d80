"""Word vectors from every layer of an encoder, streamed to disk.

`LayerFeatures.extract(model, sentences, directory)` runs the encoder over
sentences given as word lists and writes, for every word, its vector at
every layer: layer 0 is the embeddings' output (what the first transformer
block reads), layer l the output of block l. A word's vector is the mean of
its wordpieces' vectors (`pooling="mean"`) or its first piece's
(`pooling="first"`, the tagging rule of `tfbert.models.word_labels`).

The sentences are tokenized in `tf.data`, sorted by length and batched so a
batch pads only to its longest sentence rounded up to a bucket
(`tfbert.text.packer.trim_to_bucket`). The vectors go to
`<directory>/vectors.npy`, float16 `[words, layers + 1, hidden]` written
batch by batch through a memory map (10,000 sentences x 13 layers x 768 are
about 5 GB on disk and one batch in memory), and `offsets.npy`, the first
word of each sentence. The directory appears whole or not at all
(`tfbert.atomic.atomic_dir`).

Example:
>>> encoder = BertEncoder(BertConfig.from_preset("tiny", num_layers=2))
>>> pre = BertPreprocessor(vocab_file="tests/data/pretraining/vocab.txt")
>>> out = os.path.join(tempfile.mkdtemp(), "features")
>>> features = LayerFeatures.extract((encoder, pre), [["Open", "the", "file", "."],
...                                                  ["Close", "it", "."]], out)
>>> features.vectors.shape, features.vectors.dtype, features.sentence(1).shape
((7, 3, 128), dtype('float16'), (3, 3, 128))
"""

import os
import tempfile  # noqa: F401  (the doctest)
import weakref

import numpy as np
import tensorflow as tf

from tfbert.atomic import atomic_dir
from tfbert.config import BertConfig  # noqa: F401  (the doctest)
from tfbert.encoder import BertEncoder
from tfbert.models.word_labels import word_pieces_of
from tfbert.text.packer import trim_to_bucket
from tfbert.text.preprocessor import BertPreprocessor

POOLING = ("mean", "first")


def encoder_and_preprocessor(model, seq_length=None):
    """`(encoder, preprocessor)` of a tfbert checkpoint directory, a strings-in
    model (`.encoder`, `.preprocessor`) or an `(encoder, preprocessor)` pair."""
    if isinstance(model, (str, os.PathLike)):
        encoder = BertEncoder.from_pretrained(str(model))
        preprocessor = BertPreprocessor.from_pretrained(str(model))
    elif isinstance(model, (tuple, list)) and len(model) == 2:
        encoder, preprocessor = model
    elif hasattr(model, "encoder") and hasattr(model, "preprocessor"):
        encoder, preprocessor = model.encoder, model.preprocessor
    else:
        raise TypeError("LayerFeatures needs a checkpoint directory, a strings-in model or an "
                        f"(encoder, preprocessor) pair, got {type(model).__name__}.")
    if not isinstance(encoder, BertEncoder):
        raise TypeError(f"LayerFeatures needs a BertEncoder, got {type(encoder).__name__}.")
    return encoder, preprocessor


class LayerFeatures:
    """Per-word vectors of every layer on disk (see the module docstring):
    `vectors` float16 `[words, layers, hidden]` (a read-only memory map),
    `offsets` `[sentences + 1]`, `sentence(i)` `[words of i, layers, hidden]`."""

    def __init__(self, directory):
        self.directory = str(directory)
        self.vectors = np.load(os.path.join(self.directory, "vectors.npy"), mmap_mode="r")
        self.offsets = np.load(os.path.join(self.directory, "offsets.npy"))

    @property
    def num_layers(self):
        """Layers including layer 0, the embeddings."""
        return self.vectors.shape[1]

    @property
    def num_sentences(self):
        return len(self.offsets) - 1

    def sentence(self, i):
        return self.vectors[self.offsets[i]:self.offsets[i + 1]]

    @classmethod
    def extract(cls, model, sentences, directory, pooling="mean", batch_size=32, names=None):
        """Writes the vectors of `sentences` (lists of words) to `directory` and
        returns them as `LayerFeatures`. `model`: a checkpoint directory, a
        strings-in model or an `(encoder, preprocessor)` pair. `names[i]`, if
        given, says where sentence i comes from in errors (a file and line)."""
        if pooling not in POOLING:
            raise ValueError(f"pooling must be one of {list(POOLING)}, got {pooling!r}.")
        encoder, preprocessor = encoder_and_preprocessor(model)
        sentences = [list(s) for s in sentences]
        if not sentences:
            raise ValueError("LayerFeatures.extract: no sentences.")
        offsets = np.concatenate([[0], np.cumsum([len(s) for s in sentences])]).astype(np.int64)
        width = encoder.config.hidden_size
        layers = encoder.config.num_layers + 1
        seq_length = encoder.config.max_position_embeddings
        vectors_of = _word_vectors_function(encoder, pooling)
        with atomic_dir(directory) as tmp:
            vectors = np.lib.format.open_memmap(os.path.join(tmp, "vectors.npy"), mode="w+",
                                                dtype=np.float16, shape=(int(offsets[-1]),
                                                                         layers, width))
            for inputs, word_pieces, rows in sentence_batches(preprocessor, sentences,
                                                               batch_size, seq_length, names):
                target = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in rows])
                vectors[target] = vectors_of(inputs, word_pieces).numpy().astype(np.float16)
            vectors.flush()
            del vectors
            np.save(os.path.join(tmp, "offsets.npy"), offsets)
        return cls(directory)


def sentence_batches(preprocessor, sentences, batch_size, seq_length, names=None):
    """Yields `(inputs, word_pieces, rows)`: the sentences (word lists) sorted
    by length, tokenized and packed in `tf.data`, each batch cut to a bucket
    of its longest sentence; `rows` are the batch's sentence indices. A
    sentence longer than `seq_length - 2` pieces is an error naming it
    (`names[i]`, else its index)."""
    # Sorted by characters, a close proxy of wordpieces: each batch pads little.
    order = np.argsort([sum(len(w) + 1 for w in s) for s in sentences], kind="stable")
    words = tf.ragged.constant([sentences[i] for i in order], dtype=tf.string,
                               row_splits_dtype=tf.int64)

    def pack(batch):
        word_pieces = word_pieces_of(preprocessor, batch)
        inputs = preprocessor.bert_pack_inputs([word_pieces], seq_length=seq_length)
        return trim_to_bucket(inputs), word_pieces

    data = tf.data.Dataset.from_tensor_slices(words).ragged_batch(batch_size)
    done = 0
    for inputs, word_pieces in data.map(pack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
            tf.data.AUTOTUNE):
        rows = order[done:done + int(word_pieces.nrows())]
        done += len(rows)
        totals = tf.reduce_sum(word_pieces.row_lengths(axis=-1), axis=1).numpy()
        too_long = np.flatnonzero(totals > seq_length - 2)
        if too_long.size:
            i = rows[too_long[0]]
            where = names[i] if names else f"sentence {i}"
            raise ValueError(f"{where}: {totals[too_long[0]]} wordpieces, more than the "
                             f"encoder's {seq_length - 2} (max_position_embeddings less [CLS] "
                             "and [SEP]).")
        yield inputs, word_pieces, rows


# One traced function per encoder and pooling, reused by every extraction
# (tracing the encoder costs seconds; a probe extracts train and dev, twice).
_FUNCTIONS = weakref.WeakKeyDictionary()
_SIGNATURE = (
    {name: tf.TensorSpec([None, None], tf.int32) for name in
     ("input_word_ids", "input_mask", "input_type_ids")},
    tf.RaggedTensorSpec([None, None, None], tf.int32, ragged_rank=2, row_splits_dtype=tf.int64),
)


def _word_vectors_function(encoder, pooling):
    """A tf.function: `(inputs, word_pieces)` -> float32 `[words, layers + 1,
    hidden]`, each word's pieces pooled at every layer (0 = embeddings);
    traced once (any batch and length)."""
    functions = _FUNCTIONS.setdefault(encoder, {})
    if pooling not in functions:
        functions[pooling] = _trace(encoder, pooling)
    return functions[pooling]


def _trace(encoder, pooling):
    @tf.function(input_signature=_SIGNATURE)
    def word_vectors(inputs, word_pieces):
        outputs = encoder(inputs, training=False)["encoder_outputs"]
        embeddings = tf.cast(encoder.embeddings(inputs["input_word_ids"],
                                                inputs["input_type_ids"], training=False),
                             tf.float32)
        stacked = tf.stack([embeddings] + list(outputs), axis=2)  # [batch, seq, layers, H]
        pieces = word_pieces.merge_dims(1, 2)  # [batch, (pieces)]
        row = pieces.value_rowids()
        position = 1 + tf.range(tf.shape(row, out_type=tf.int64)[0]) - tf.gather(
            pieces.row_starts(), row)  # after [CLS]
        word = word_pieces.values.value_rowids()  # flat word of each flat piece
        num_words = word_pieces.values.nrows()
        if pooling == "first":
            first = word_pieces.values.row_starts()
            return tf.gather_nd(stacked, tf.stack([tf.gather(row, first),
                                                   tf.gather(position, first)], axis=1))
        gathered = tf.gather_nd(stacked, tf.stack([row, position], axis=1))
        return tf.math.unsorted_segment_mean(gathered, word, num_words)

    return word_vectors
