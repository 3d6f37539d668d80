"""Sentence embeddings (Sentence-BERT): train a `SentenceEncoder`, score retrieval or STS, export.

Losses (`task.loss`, from `tfbert.losses`):
  ranking   (query, passage[, hard negative]) pairs, in-batch negatives
            (MultipleNegativesRankingLoss; scale `scale`)
  cosine    (text, text_b, score) pairs, MSE of the cosine against the score
            rescaled from `[min_score, max_score]` to [0, 1]
  softmax   (text, text_b, label) pairs, a classifier on (u, v, |u - v|) (NLI)
  triplet   (anchor, positive, negative), Euclidean margin `margin`

Dev metric each epoch (`dev_metric`; the best epoch is kept): `retrieval`
ranks every dev query against all dev passages (recall_at_1, recall_at_5,
mrr_at_10; main metric recall_at_1), `spearman` correlates cosine(text,
text_b) with the dev file's `score_column` (the default for `cosine`).

Export: `serving_default(text)` -> `embedding` float32 `[batch, dim]`
(normalized when the model normalizes), each batch padded to its longest text;
`truncate_dim`: its first dims only. `matryoshka_dims` (ranking loss): trained
at nested dims (`tfbert.losses.MatryoshkaLoss`) so truncation loses little.

Example:
>>> task = SentenceEmbeddingTask({"loss": "ranking", "seq_length": 16})
>>> _ = task.prepare(BertPreprocessor(vocab_file="tests/data/pretraining/vocab.txt",
...                                   seq_length=16))
>>> model = task.build_model(BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931)))
>>> task.predict(model, ["Open the file.", "Read it."])["embedding"].shape
(2, 128)
>>> task.main_metric
'recall_at_1'
"""

import dataclasses
from typing import Optional, Union

import numpy as np
import tensorflow as tf

from tfbert.data import pairs as pair_readers
from tfbert.data import validation_split
from tfbert.data.batching import epoch_batches
from tfbert.config_loader import at_least, one_of, validate
from tfbert.losses import (CosineSimilarityLoss, MatryoshkaLoss, MultipleNegativesRankingLoss,
                           SoftmaxLoss, TripletLoss)
from tfbert.metrics import retrieval
from tfbert.layers.pooling import POOLING
from tfbert.models.sentence_encoder import SentenceEncoder
from tfbert.tasks.base import Task
from tfbert.text.packer import trim_to_bucket, trim_to_longest
from tfbert.text.windows import WINDOW_MODES

Column = Optional[Union[str, int]]
LOSSES = ("ranking", "cosine", "softmax", "triplet")
DEV_METRICS = ("retrieval", "spearman")


@dataclasses.dataclass
class SentenceEmbeddingConfig:
    """Data, loss and pooling settings (the `task:` section of a finetune YAML)."""

    train_file: str = ""
    dev_file: str = ""
    format: Optional[str] = None  # tsv | csv | jsonl; default from the extension
    header: bool = True  # TSV/CSV: first line names the columns
    loss: str = one_of(LOSSES, "ranking")
    text_column: Column = "anchor"  # query / sentence1 / anchor
    text_b_column: Column = "positive"  # passage / sentence2 / positive
    negative_column: Column = None  # ranking: optional hard negative; triplet: required
    score_column: Column = "score"  # cosine loss, and the dev file for dev_metric=spearman
    label_column: Column = "label"  # softmax loss
    label_list: Optional[list] = None  # softmax: default sorted labels of the training file
    min_score: float = 0.0  # scores must lie in [min_score, max_score] (STS-B: 0, 5)
    max_score: float = 1.0
    dev_metric: Optional[str] = one_of(DEV_METRICS, None)  # default: spearman for cosine
    pooling: str = one_of(POOLING, "mean")
    normalize: bool = True
    dense_units: Optional[int] = None
    scale: float = 20.0  # ranking: cosine scale (sentence-transformers' default)
    margin: float = 5.0  # triplet: Euclidean margin (sentence-transformers' default)
    seq_length: int = 128
    # Texts longer than seq_length in `predict`, dev scoring and the export:
    # "truncate" cuts them; "windows" embeds every window and averages them
    # weighted by wordpieces (`SentenceEncoder.embed_text`). Training pairs
    # are truncated either way.
    long_text: str = one_of(WINDOW_MODES, "truncate")
    doc_stride: Optional[int] = at_least(1, None)  # window step; None: half a window
    doc_overlap: Optional[int] = at_least(0, None)  # or: wordpieces shared by neighbours
    max_windows: int = at_least(1, 64)  # per text; the rest of a longer text is not read
    # ranking: Matryoshka training at these nested dims (MatryoshkaLoss), with
    # these weights (default 1 each); e.g. [384, 256, 128, 64].
    matryoshka_dims: Optional[list] = None
    matryoshka_weights: Optional[list] = None
    # The export's embeddings cut to their first truncate_dim dims (re-normalized
    # when the model normalizes); None: full size.
    truncate_dim: Optional[int] = at_least(1, None)

    def __post_init__(self):
        validate(self)
        if self.loss == "triplet" and self.negative_column is None:
            raise ValueError("task.loss=triplet needs task.negative_column.")
        if self.matryoshka_dims is not None and self.loss != "ranking":
            raise ValueError("task.matryoshka_dims applies to loss=ranking only.")

    def window_options(self):
        """`SentenceEncoder.encode` / `embed_text` keyword arguments for long texts."""
        return {"long_text": self.long_text, "doc_stride": self.doc_stride,
                "doc_overlap": self.doc_overlap, "max_windows": self.max_windows}


class SentenceEmbeddingTask(Task):
    """Trains a `SentenceEncoder` with a siamese/triplet loss (see module doc)."""

    name = "sentence_embedding"
    config_class = SentenceEmbeddingConfig

    def __init__(self, config=None):
        super().__init__(config)
        # While training, each batch is cut to its longest text (docstring-length
        # texts in a seq_length=128 batch are mostly padding); under XLA rounded up
        # to a bucket width, so it compiles a few shapes, not one per batch.
        self.trim = None  # None, trim_to_longest or trim_to_bucket
        c = self.config
        self.dev_metric = c.dev_metric or ("spearman" if c.loss == "cosine" else "retrieval")
        self.main_metric = "spearman" if self.dev_metric == "spearman" else "recall_at_1"
        self.label_list = [str(l) for l in c.label_list] if c.label_list else None

    # === Data ===

    def read(self, path):
        """`SentencePairs` of `path` with the columns this loss needs."""
        c = self.config
        if c.loss == "cosine":
            return pair_readers.read_scored_pairs(path, c.text_column, c.text_b_column,
                                                  c.score_column, c.min_score, c.max_score,
                                                  c.format, c.header)
        return pair_readers.read_pairs(
            path, c.text_column, c.text_b_column, negative_column=c.negative_column,
            label_column=c.label_column if c.loss == "softmax" else None,
            format=c.format, header=c.header)

    def prepare(self, preprocessor):
        """Sets the preprocessor; softmax without a label list takes the training file's."""
        self.preprocessor = preprocessor
        if self.config.loss == "softmax" and self.label_list is None:
            if not self.config.train_file:
                raise ValueError("loss=softmax needs task.label_list or a train_file.")
            self.label_list = sorted(set(self.read(self.config.train_file).label))
        return self

    def targets(self, rows):
        """Scores (cosine), class ids (softmax), or None (ranking, triplet)."""
        if self.config.loss == "cosine":
            return np.asarray(rows.score, np.float32)
        if self.config.loss == "softmax":
            index = {l: i for i, l in enumerate(self.label_list)}
            for i, label in enumerate(rows.label):
                if label not in index:
                    raise ValueError(f"{rows.where(i)}: label {label!r} is not in the label "
                                     f"list {self.label_list}.")
            return np.asarray([index[l] for l in rows.label], np.int32)
        return None

    def dataset(self, path, batch_size, training=False, seed=0):
        """`({"anchor", "positive"[, "negative"]: encoder inputs}[, targets])`
        batches; training ones are shuffled, repeated and full (static shapes)."""
        rows = self.read(path)
        texts = {"anchor": rows.anchor, "positive": rows.positive}
        if rows.negative is not None:
            texts["negative"] = rows.negative
        targets = self.targets(rows)
        ds = tf.data.Dataset.from_tensor_slices(texts if targets is None else (texts, targets))
        if training:  # in-batch negatives: a partial batch has fewer, and is kept
            ds = epoch_batches(ds, len(rows), batch_size, seed, self.drop_remainder)
        else:
            ds = ds.batch(batch_size)

        def encode(columns, *y):
            x = {name: self.preprocessor(t) for name, t in columns.items()}
            if self.trim is not None:
                x = {name: self.trim(ids) for name, ids in x.items()}
            return (x, *y) if y else x

        return ds.map(encode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    def num_examples(self, path):
        return len(self.read(path))

    def split_validation(self, path, out_dir, fraction, seed):
        c = self.config
        return validation_split.split_records(path, out_dir, fraction, seed, c.format, c.header)

    def summary(self):
        return {"task": self.name, "loss": self.config.loss, "dev_metric": self.dev_metric,
                "pooling": self.config.pooling, "normalize": self.config.normalize}

    # === Model and training ===

    def begin_training(self, train, validation):
        """Training batches cut to their longest text (XLA: to a bucket
        width; without, Keras retraces with `reduce_retracing`)."""
        self.trim = trim_to_bucket if train.jit_compile else trim_to_longest

    def end_training(self, model, model_dir):
        self.trim = None  # prediction and export batches stay seq_length wide

    def build_model(self, encoder):
        c = self.config
        return SentenceEncoder(encoder, pooling=c.pooling, dense_units=c.dense_units,
                               normalize=c.normalize, preprocessor=self.preprocessor)

    def build_trainable(self, model, optimizer, train):
        """The loss wrapper (its weights include `model`'s), compiled."""
        c = self.config
        if c.loss == "ranking":
            trainable = MultipleNegativesRankingLoss(model, scale=c.scale)
            if c.matryoshka_dims is not None:
                trainable = MatryoshkaLoss(trainable, c.matryoshka_dims, c.matryoshka_weights)
        elif c.loss == "cosine":
            trainable = CosineSimilarityLoss(model)
        elif c.loss == "softmax":
            trainable = SoftmaxLoss(model, num_labels=len(self.label_list))
        else:
            trainable = TripletLoss(model, margin=c.margin)
        # Build every weight now (a two-text batch), so restoring a backup or
        # the best weights never meets an unbuilt model.
        ids = self.preprocessor(tf.constant(["a", "b"]))
        columns = ["anchor", "positive"] + (["negative"] if c.negative_column is not None else [])
        trainable({name: ids for name in columns})
        trainable.compile(optimizer=optimizer, jit_compile=train.jit_compile)
        return trainable

    # === Evaluation ===

    def eval_data(self, path, batch_size):
        """`(texts, text_bs, gold scores or None)` of the dev file."""
        if not path:
            raise ValueError("sentence_embedding needs task.dev_file to score each epoch.")
        c = self.config
        if self.dev_metric == "spearman":
            rows = pair_readers.read_scored_pairs(path, c.text_column, c.text_b_column,
                                                  c.score_column, c.min_score, c.max_score,
                                                  c.format, c.header)
            return rows.anchor, rows.positive, rows.score
        rows = pair_readers.read_pairs(path, c.text_column, c.text_b_column, format=c.format,
                                       header=c.header)
        return rows.anchor, rows.positive, None

    def evaluate(self, model, dev, batch_size=64):
        texts, text_bs, scores = self.check_dev(dev)
        options = self.config.window_options()
        embeddings = (model.encode(texts, batch_size, **options),
                      model.encode(text_bs, batch_size, **options))
        return self.score(embeddings, scores)

    def score(self, embeddings, scores):
        """Retrieval metrics (scores None) or Spearman of cosine vs `scores`."""
        u, v = embeddings
        if scores is None:
            return retrieval.retrieval_metrics(u, v)
        return {"spearman": retrieval.similarity_spearman(u, v, scores)}

    # === Raw strings: prediction and export ===

    def predict(self, model, text, batch_size=32):
        """`{"embedding": [n, dim]}` for raw strings."""
        return {"embedding": model.encode(text, batch_size=batch_size,
                                          truncate_dim=self.config.truncate_dim,
                                          **self.config.window_options())}

    def export(self, model, export_dir, jit_compile=False):
        """SavedModel: `serving_default(text)` -> `embedding` (`SentenceEncoder.export`,
        with this task's `truncate_dim` and long-text settings)."""
        return model.export(export_dir, jit_compile=jit_compile,
                            truncate_dim=self.config.truncate_dim,
                            **self.config.window_options())
