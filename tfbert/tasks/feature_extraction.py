"""Feature extraction: BERT's hidden states as fixed features (the paper's feature-based approach).

- `FeatureExtractionTask.features(model, texts)`: per-token and per-sentence
  features of chosen layers (e.g. the last four, concatenated or summed) from
  raw strings, as NumPy.
- `FeatureExtractionTask.export(model, dir)`: a SavedModel whose
  `serving_default(text)` returns `embedding` `[batch, D]`, `features`
  `[batch, seq, D]` and `input_mask` `[batch, seq]`.
- `train_frozen_head`: the frozen-encoder mode of `tfbert.tasks.runner`:
  features are computed once and cached, then only a dense head is trained
  (much cheaper than fine-tuning, usually a few points worse).

Example:
>>> task = FeatureExtractionTask(FeatureExtractionConfig(layers=(-4, -3, -2, -1)))
>>> task.prepare(BertPreprocessor.from_pretrained("checkpoints/minilm"))  # doctest: +SKIP
>>> model = task.build_model(BertEncoder.from_pretrained("checkpoints/minilm"))  # doctest: +SKIP
>>> out = task.features(model, ["A cat sat.", "Dogs bark."])  # doctest: +SKIP
>>> out["embedding"].shape, out["features"][0].shape  # doctest: +SKIP
((2, 1536), (6, 1536))
"""

import dataclasses
import os

import keras
import numpy as np
import tensorflow as tf

from tfbert.encoder import INPUT_NAMES
from tfbert.export.task_model import export_task_model
from tfbert.models.feature_extractor import BertFeatureExtractor
from tfbert.train.optimizer import create_optimizer


@dataclasses.dataclass
class FeatureExtractionConfig:
    layers: tuple = (-4, -3, -2, -1)
    combine: str = "concat"  # concat | sum | mean
    pooling: str = "mean"  # mean (over real tokens) | cls
    seq_length: int = 128


class FeatureExtractionTask:
    """Features from strings; no training (see `train_frozen_head` for a head on top)."""

    text_inputs = ("text",)

    def __init__(self, config=None):
        if config is None:
            config = FeatureExtractionConfig()
        if isinstance(config, dict):
            config = FeatureExtractionConfig(**config)
        self.config = config
        self.preprocessor = None

    def prepare(self, preprocessor):
        self.preprocessor = preprocessor
        return self

    def build_model(self, encoder):
        c = self.config
        return BertFeatureExtractor(encoder, layers=c.layers, combine=c.combine, pooling=c.pooling)

    def encode(self, texts):
        return self.preprocessor(texts["text"])

    def outputs(self, model, inputs):
        out = model(inputs, training=False)
        return {"embedding": out["sentence_features"], "features": out["token_features"],
                "input_mask": inputs["input_mask"]}

    def features(self, model, text, batch_size=64):
        """`embedding` `[N, D]` and `features`: one `[tokens, D]` array per
        string (its real tokens, [CLS] and [SEP] included), plus `tokens`
        (the wordpiece strings)."""
        ds = tf.data.Dataset.from_tensor_slices({"text": list(text)}).batch(batch_size)
        embedding, features, tokens = [], [], []
        for texts in ds:
            inputs = self.encode(texts)
            out = self.outputs(model, inputs)
            lengths = inputs["input_mask"].numpy().sum(1)
            pieces = self.preprocessor.id_to_token(inputs["input_word_ids"]).numpy()
            embedding.append(out["embedding"].numpy())
            for row, n in zip(out["features"].numpy(), lengths):
                features.append(row[:n])
            tokens.extend([[p.decode() for p in row[:n]] for row, n in zip(pieces, lengths)])
        return {"embedding": np.concatenate(embedding), "features": features, "tokens": tokens}

    def export(self, model, export_dir):
        """SavedModel: `serving_default(text)` -> `embedding`, `features`, `input_mask`."""
        return export_task_model(
            export_dir,
            serve_text=lambda texts: self.outputs(model, self.encode(texts)),
            serve_ids=lambda inputs: self.outputs(model, inputs),
            text_inputs=self.text_inputs,
            track=[model, self.preprocessor])


def train_frozen_head(task, encoder, train, dev_inputs, reference, model_dir, strategy):
    """Frozen-encoder training for a `ClassificationTask` (classification or
    regression): caches the train/dev sentence features once, trains only
    dropout + dense on them, and returns `(model, evaluation)` where `model`
    maps the three int32 inputs to logits (so the task's export works as is).
    """
    from tfbert.tasks.classification import ClassificationTask
    from tfbert.tasks.runner import BEST_WEIGHTS, DevEvaluation

    if not isinstance(task, ClassificationTask):
        raise ValueError("frozen_encoder is supported for classification and regression only, "
                         f"not {type(task).__name__}.")
    with strategy.scope():
        extractor = BertFeatureExtractor(encoder, layers=train.frozen_layers,
                                         combine=train.frozen_combine,
                                         pooling=train.frozen_pooling)
        extractor.trainable = False
        sentence = keras.Model(extractor.input, extractor.output["sentence_features"])
        sentence.compile(jit_compile=train.jit_compile)

    # The expensive part, once: every example through the encoder.
    train_inputs, train_targets = task.eval_data(task.config.train_file, train.eval_batch_size)
    train_x = sentence.predict(train_inputs, verbose=0)
    dev_x = sentence.predict(dev_inputs, verbose=0)
    train_y = train_targets[:, None] if task.regression else train_targets

    steps = max(1, len(train_x) // train.batch_size) * train.head_epochs
    with strategy.scope():
        head = keras.Sequential([
            keras.Input((train_x.shape[1],), name="features"),
            keras.layers.Dropout(task.config.dropout),
            keras.layers.Dense(task.num_outputs, name="logits",
                               kernel_initializer=keras.initializers.TruncatedNormal(
                                   stddev=encoder.config.initializer_range)),
        ], name="head")
        head.compile(
            optimizer=create_optimizer(train.head_learning_rate, steps,
                                       int(train.warmup_fraction * steps),
                                       weight_decay=train.weight_decay),
            loss=task.loss(), metrics=task.metrics(), jit_compile=train.jit_compile)
    evaluation = DevEvaluation(task, dev_x, reference, verbose=train.verbose)
    best_path = os.path.join(model_dir, "head_" + BEST_WEIGHTS)
    head.fit(train_x, train_y, batch_size=train.batch_size, epochs=train.head_epochs,
             shuffle=True, verbose=0 if train.verbose < 2 else 2, callbacks=[
                 evaluation,
                 keras.callbacks.ModelCheckpoint(best_path, monitor=f"dev_{task.main_metric}",
                                                 mode="max", save_best_only=True,
                                                 save_weights_only=True)])
    if os.path.isfile(best_path):
        head.load_weights(best_path)

    # One model from the three int32 inputs to logits, for the task's export.
    inputs = {n: keras.Input(shape=(None,), dtype="int32", name=n) for n in INPUT_NAMES}
    model = keras.Model(inputs, head(sentence(inputs)), name="frozen_encoder_classifier")
    return model, evaluation
