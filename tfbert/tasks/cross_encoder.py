"""Cross-encoder (reranker): score (query, passage) read together; train, score, export.

The model is `tfbert.CrossEncoder`, the strings-in Keras model a user's
`compile()` + `fit` trains: a pair classifier with one output on [CLS] of
`[CLS] query [SEP] passage [SEP]`, as transformers'
`BertForSequenceClassification` with `num_labels=1` (`pooling: mean` puts the
head on the mean of the token states). The task is a `TextTask` (the text
plumbing it shares with classification) with the inputs named
`query`/`passage`, a reranking loss and a reranking dev metric.

Training rows (JSONL, `tfbert.data.rerank_rows`):
  {"query", "passage", "label"}        binary cross-entropy per pair (`loss: bce`)
  {"query", "positive", "negatives"}   softmax over the positive and its first
                                       `num_negatives` negatives (`loss: softmax`,
                                       the default), or BCE over the same pairs
                                       (`loss: bce`)

Dev metric each epoch: each dev query's candidates (its pointwise rows, or
its positive and negatives) are scored and ranked: `recall_at_1` (the top
candidate is relevant) and `mrr_at_10`; the main metric is `mrr_at_10`.

After training, `<model_dir>/cross_encoder/` is a tfbert checkpoint that
`tfbert.CrossEncoder.from_pretrained(model_dir)` loads. The export's
`serving_default(query, passage)` (two tf.string `[batch]`) gives `logits`
and `score` (the sigmoid of the logit, as sentence-transformers' `predict`).

Example:
>>> task = CrossEncoderTask({"seq_length": 16})
>>> _ = task.prepare(BertPreprocessor(vocab_file="tests/data/pretraining/vocab.txt",
...                                   seq_length=16))
>>> model = task.build_model(BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931)))
>>> task.predict(model, ["open a file"], ["Open the file."])["score"].shape
(1,)
>>> task.text_inputs
('query', 'passage')
"""

import dataclasses
import os
from typing import Optional

import numpy as np
import tensorflow as tf

from tfbert.data import validation_split
from tfbert.data.batching import epoch_batches
from tfbert.data.rerank_rows import read_rerank_rows
from tfbert.config_loader import at_least, in_range, one_of, validate
from tfbert.losses.listwise import ListwiseLoss
from tfbert.metrics import retrieval
from tfbert.layers.pooling import POOLING
from tfbert.text.raw_texts import text_column
from tfbert.models.cross_encoder import (CrossEncoder, cross_encoder_outputs, pointwise_loss,
                                         pointwise_metrics)
from tfbert.tasks.text_task import TextTask
from tfbert.text.windows import check_pair_length

CHECKPOINT_DIR = "cross_encoder"  # under model_dir: what from_pretrained(model_dir) loads


@dataclasses.dataclass
class CrossEncoderConfig:
    """Data and loss settings (the `task:` section of a finetune YAML)."""

    train_file: str = ""
    dev_file: str = ""
    # softmax (listwise rows only) | bce; default: softmax for listwise rows, bce for pointwise.
    loss: Optional[str] = one_of(("softmax", "bce"), None)
    # Listwise: negatives per query in each step (the first ones of each row:
    # mined rows list the hardest first). Default: the fewest any row has.
    num_negatives: Optional[int] = at_least(1, None)
    seq_length: int = at_least(3, 128)
    bucketing: bool = True  # pad each batch to a bucket of its longest pair
    dropout: float = in_range(0.0, 1.0, 0.1, high_open=True)
    # The head reads [CLS]'s pooler (cls) or the mean of the pair's token states (mean).
    pooling: str = one_of(POOLING, "cls")
    main_metric: str = one_of(("mrr_at_10", "recall_at_1"), "mrr_at_10")

    def __post_init__(self):
        validate(self)


class CrossEncoderTask(TextTask):
    """A one-output pair classifier trained to rank (see module doc)."""

    name = "cross_encoder"
    config_class = CrossEncoderConfig
    text_inputs = ("query", "passage")

    def __init__(self, config=None):
        super().__init__(config)
        self.main_metric = self.config.main_metric
        self.kind = None  # pointwise | listwise, from the training file
        self.group_size = None

    # === Data ===

    def read(self, path):
        return read_rerank_rows(path)

    def prepare(self, preprocessor):
        """Sets the preprocessor; reads the training file's row shape and group size."""
        c = self.config
        check_pair_length(preprocessor, c.seq_length, key="CrossEncoderConfig.seq_length")
        self.preprocessor = preprocessor
        if c.train_file:
            rows = self.read(c.train_file)
            self.kind = rows.kind
            if rows.kind == "listwise":
                fewest = min(len(n) for n in rows.negatives)
                k = c.num_negatives or fewest
                if k > fewest:
                    i = min(range(len(rows)), key=lambda i: len(rows.negatives[i]))
                    raise ValueError(f"{rows.where(i)}: {fewest} negatives, but "
                                     f"task.num_negatives is {k}.")
                self.group_size = 1 + k
            elif c.loss == "softmax":
                raise ValueError(f"{c.train_file}: loss=softmax needs listwise rows "
                                 '({"query", "positive", "negatives"}); these are pointwise '
                                 "(use loss=bce).")
        return self

    @property
    def loss_name(self):
        return self.config.loss or ("softmax" if self.kind == "listwise" else "bce")

    def dataset(self, path, batch_size, training=False, seed=0):
        """Pointwise: `(inputs, labels [batch, 1])`. Listwise: `(inputs of
        batch * group_size pairs, zeros [batch])`, query-major, positive first."""
        rows = self.read(path)
        if rows.kind != (self.kind or rows.kind):
            raise ValueError(f"{path}: {rows.kind} rows, but the training file has "
                             f"{self.kind} rows.")
        if rows.kind == "pointwise":
            texts = {"query": rows.query, "passage": rows.passage}
            labels = np.asarray(rows.label, np.float32)[:, None]
            ds = tf.data.Dataset.from_tensor_slices((texts, labels))
            ds = self.batch(ds, batch_size, len(rows), training, seed)
            ds = ds.map(lambda t, y: (self.encode(t), y), num_parallel_calls=tf.data.AUTOTUNE)
            return ds.prefetch(tf.data.AUTOTUNE)
        g = self.group_size or 1 + min(len(n) for n in rows.negatives)
        candidates = [[p] + n[:g - 1] for p, n in zip(rows.positive, rows.negatives)]
        if any(len(c) < g for c in candidates):
            i = next(i for i, c in enumerate(candidates) if len(c) < g)
            raise ValueError(f"{rows.where(i)}: {len(candidates[i]) - 1} negatives, fewer "
                             f"than the {g - 1} training uses.")
        ds = tf.data.Dataset.from_tensor_slices({"query": rows.query, "candidates": candidates})
        if training:
            ds = epoch_batches(ds, len(rows), batch_size, seed, self.drop_remainder)
        else:
            ds = ds.batch(batch_size)

        def encode(batch):
            n = tf.shape(batch["query"])[0]
            flat = {"query": tf.reshape(tf.repeat(batch["query"][:, None], g, axis=1), [-1]),
                    "passage": tf.reshape(batch["candidates"], [-1])}
            return self.encode(flat), tf.zeros([n], tf.int32)

        return ds.map(encode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    def num_examples(self, path):
        return len(self.read(path))

    def split_validation(self, path, out_dir, fraction, seed):
        return validation_split.split_records(path, out_dir, fraction, seed, "jsonl", False)

    def summary(self):
        rows = self.read(self.config.train_file)
        out = {"task": self.name, "rows": rows.kind, "loss": self.loss_name}
        if self.group_size:
            out["group_size"] = f"{self.group_size} (1 positive, {self.group_size - 1} negatives)"
        return out

    # === Model and training ===

    def build_model(self, encoder):
        """The `CrossEncoder` a user's `fit` trains (same head, same export)."""
        return CrossEncoder(encoder, self.preprocessor, dropout=self.config.dropout,
                            pooling=self.config.pooling)

    def build_trainable(self, model, optimizer, train):
        if self.kind != "listwise":
            return super().build_trainable(model, optimizer, train)
        trainable = ListwiseLoss(model, self.group_size, self.loss_name)
        ids = self.preprocessor([tf.constant(["a", "b"] * self.group_size)] * 2)
        trainable(ids)  # every weight built before a restore
        trainable.compile(optimizer=optimizer, jit_compile=train.jit_compile)
        return trainable

    def loss(self):
        return pointwise_loss()

    def metrics(self):
        return pointwise_metrics()

    def end_training(self, model, model_dir):
        """The trained model as a tfbert checkpoint in `<model_dir>/cross_encoder/`
        (what `CrossEncoder.from_pretrained` reads)."""
        model.save_pretrained(os.path.join(model_dir, CHECKPOINT_DIR),
                              source=f"tfbert finetune --task=cross_encoder ({model_dir})")

    # === Evaluation ===

    def eval_data(self, path, batch_size):
        """The dev file's groups `[(query, candidates, labels)]`."""
        if not path:
            raise ValueError("cross_encoder needs task.dev_file to score each epoch.")
        return self.read(path).groups()

    def evaluate(self, model, dev, batch_size=64):
        dev = self.check_dev(dev)
        queries = [q for q, c, _ in dev for _ in c]
        passages = [p for _, c, _ in dev for p in c]
        logits = self.predict(model, queries, passages, batch_size)["logits"]
        return rerank_metrics(dev, logits)

    def score(self, logits, groups):
        return rerank_metrics(groups, logits)

    def write_predictions(self, model, dev, out_dir):
        return []

    # === Raw strings: prediction and export ===

    def outputs(self, logits):
        """`logits` `[batch]` and `score` = sigmoid(logits) (graph ops; predict and export)."""
        return cross_encoder_outputs(logits)

    def export(self, model, export_dir, jit_compile=False):
        """SavedModel: `serving_default(query, passage)` -> `logits`, `score`."""
        return model.export(export_dir, jit_compile=jit_compile, bucketing=self.config.bucketing)

    def predict(self, model, query, passage=None, batch_size=64):
        """`{"logits", "score"}` NumPy `[n]` for parallel lists of queries and passages."""
        query = text_column(query, "query").tolist()
        if passage is None:
            raise ValueError("cross_encoder predict takes two lists of equal length: "
                             "queries and passages.")
        passage = text_column(passage, "passage").tolist()
        if len(passage) != len(query):
            raise ValueError(f"cross_encoder predict takes two lists of equal length: "
                             f"{len(query)} queries and {len(passage)} passages.")
        logits = model.predict((query, passage), batch_size=batch_size,
                               activation=None)
        return {k: v.numpy() for k, v in self.outputs(tf.constant(logits[:, None])).items()}


def rerank_metrics(groups, scores):
    """`recall_at_1` and `mrr_at_10` of `groups` `[(query, candidates, labels)]`
    scored by the flat `scores` (candidates in order). A candidate is relevant
    when its label is >= 0.5; groups without one are skipped; ties count
    against the query (a tied irrelevant candidate ranks first).

    >>> rerank_metrics([("q", ["a", "b"], [0, 1]), ("r", ["c", "d"], [1, 0])], [0.2, 0.9, 0.1, 0.5])
    {'recall_at_1': 0.5, 'mrr_at_10': 0.75}
    """
    scores = np.asarray(scores, np.float64).reshape(-1)
    ranks, start = [], 0
    for _, candidates, labels in groups:
        s = scores[start:start + len(candidates)]
        start += len(candidates)
        relevant = np.asarray(labels) >= 0.5
        if relevant.any():
            best = s[relevant].max()
            ranks.append(int((s[~relevant] >= best).sum()) + 1)
    if not ranks:
        raise ValueError("No group has a relevant candidate (label >= 0.5) to rank.")
    return {"recall_at_1": retrieval.recall_at_k(ranks, 1),
            "mrr_at_10": retrieval.mrr_at_k(ranks, 10)}
