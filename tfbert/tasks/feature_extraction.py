"""Feature extraction: BERT's hidden states as fixed features (the paper's feature-based approach).

- `FeatureExtractionTask.features(model, texts)`: per-token and per-sentence
  features of chosen layers (e.g. the last four, concatenated or summed) from
  raw strings, as NumPy.
- `FeatureExtractionTask.export(model, dir, jit_compile=False)`: a SavedModel whose
  `serving_default(text)` returns `embedding` `[batch, D]`, `features`
  `[batch, seq, D]` and `input_mask` `[batch, seq]`.
- Nothing trains here; `tools/finetune.py --task=feature_extraction` just
  exports the features model. For a head trained on cached features, see
  `tfbert.tasks.frozen_classification`.

Example:
>>> task = FeatureExtractionTask(FeatureExtractionConfig(layers=(-2, -1)))
>>> _ = task.prepare(BertPreprocessor(vocab_file="tests/data/pretraining/vocab.txt"))
>>> model = task.build_model(BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931)))
>>> out = task.features(model, ["The file is opened.", "Read it."])
>>> out["embedding"].shape, out["features"][1].shape, out["tokens"][1]
((2, 256), (5, 256), ['[CLS]', 'read', 'it', '.', '[SEP]'])
"""

import dataclasses

import numpy as np
import tensorflow as tf

from tfbert.config_loader import at_least, one_of, validate
from tfbert.export.compiled_call import compiled_call
from tfbert.export.task_model import export_task_model
from tfbert.layers.pooling import POOLING
from tfbert.text.raw_texts import text_column
from tfbert.models.feature_extractor import COMBINE, BertFeatureExtractor
from tfbert.tasks.base import Task


@dataclasses.dataclass
class FeatureExtractionConfig:
    layers: tuple = (-4, -3, -2, -1)
    combine: str = one_of(COMBINE, "concat")
    pooling: str = one_of(POOLING, "mean")  # mean: over real tokens
    seq_length: int = at_least(2, 128)

    def __post_init__(self):
        validate(self)


class FeatureExtractionTask(Task):
    """Features from strings; no training (`frozen_classification` puts a head on top)."""

    name = "feature_extraction"
    config_class = FeatureExtractionConfig

    def fit(self, encoder, train, model_dir, strategy, dev, validation=None):
        """Nothing to train (so not the trainer's loop): the model is the
        encoder's features."""
        with strategy.scope():
            return self.build_model(encoder), [{}]

    def eval_data(self, path, batch_size):
        return None

    def evaluate(self, model, dev):
        return {}

    def build_model(self, encoder):
        c = self.config
        return BertFeatureExtractor(encoder, layers=c.layers, combine=c.combine, pooling=c.pooling)

    def encode(self, texts):
        return self.preprocessor(texts["text"])

    def outputs(self, model, inputs, call=None):
        """Named outputs; `call`: how the model runs (`tfbert.export.compiled_call`)."""
        out = (call or compiled_call(model, jit_compile=False))(inputs)
        return {"embedding": out["sentence_features"], "features": out["token_features"],
                "input_mask": inputs["input_mask"]}

    def features(self, model, text, batch_size=64):
        """`embedding` `[N, D]` and `features`: one `[tokens, D]` array per
        string (its real tokens, [CLS] and [SEP] included), plus `tokens`
        (the wordpiece strings)."""
        texts = text_column(text, "text").tolist()  # one clear line for None, one str, ...
        batch_size = self.check_batch_size(batch_size)
        ds = tf.data.Dataset.from_tensor_slices({"text": texts}).batch(batch_size)
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

    def export(self, model, export_dir, jit_compile=False):
        """SavedModel: `serving_default(text)` -> `embedding`, `features`,
        `input_mask`. `jit_compile=True`: small batches run the model under XLA
        at bucketed shapes (`tfbert.export.compiled_call`; TF Serving needs
        `--xla_cpu_compilation_enabled=true`)."""
        call = compiled_call(model, jit_compile)
        return export_task_model(
            export_dir,
            serve_text=lambda texts: self.outputs(model, self.encode(texts), call),
            serve_ids=lambda inputs: self.outputs(model, inputs, call),
            text_inputs=self.text_inputs,
            track=[model, self.preprocessor],
            warmup_shapes=call.shapes(self.preprocessor.seq_length))
