"""Classification (or regression) with a frozen encoder: features once, then a head.

The BERT paper's feature-based approach: every training and dev example goes
through the encoder once, the chosen layers' features are pooled per
sentence and cached, and only dropout + dense train on them (many epochs at
a head learning rate, in seconds). Much cheaper than fine-tuning, usually a
few points worse. The returned model maps the three int32 inputs to logits,
so prediction and export are `ClassificationTask`'s.

    python tools/finetune.py --task=frozen_classification \
        --config=configs/finetune_sentiment.yaml --init_checkpoint=checkpoints/minilm \
        --model_dir=runs/sentiment_frozen --set task.head_epochs=20

Example:
>>> task = FrozenClassificationTask({"layers": [-1], "head_learning_rate": 3e-3})
>>> task.config.head_learning_rate, task.config.pooling
(0.003, 'mean')
"""

import dataclasses
import os

import keras

from tfbert.encoder import INPUT_NAMES
from tfbert.config_loader import at_least, one_of, positive
from tfbert.layers.pooling import POOLING
from tfbert.models.feature_extractor import COMBINE, BertFeatureExtractor
from tfbert.tasks.classification import ClassificationConfig, ClassificationTask
from tfbert.train.evaluation import BEST_WEIGHTS, VALIDATION, DevEvaluation, KeepBest
from tfbert.train.optimizer import create_optimizer


@dataclasses.dataclass
class FrozenClassificationConfig(ClassificationConfig):
    """`ClassificationConfig` plus the features and the head's own recipe."""

    layers: tuple = (-4, -3, -2, -1)  # encoder layers whose outputs are combined
    combine: str = one_of(COMBINE, "concat")
    pooling: str = one_of(POOLING, "mean")
    head_learning_rate: float = positive(1e-3)
    head_epochs: int = at_least(1, 30)


class FrozenClassificationTask(ClassificationTask):
    """A dense head on cached sentence features of a frozen encoder."""

    name = "frozen_classification"
    config_class = FrozenClassificationConfig

    def fit(self, encoder, train, model_dir, strategy, dev, validation=None):
        """Another training scheme (so not the trainer's loop): every example
        through the frozen encoder once, then only the head trains."""
        if train.lora_rank:
            raise ValueError("train.lora_rank: frozen_classification trains no encoder weight "
                             "(a head on frozen features); use --task=classification.")
        c = self.config
        dev_inputs, reference = dev
        with strategy.scope():
            extractor = BertFeatureExtractor(encoder, layers=c.layers, combine=c.combine,
                                             pooling=c.pooling)
            extractor.trainable = False
            sentence = keras.Model(extractor.input, extractor.output["sentence_features"])
            sentence.compile(jit_compile=train.jit_compile)

        # The expensive part, once: every example through the encoder.
        train_inputs, train_targets = self.eval_data(c.train_file, train.eval_batch_size)
        train_x = sentence.predict(train_inputs, verbose=0)
        dev_x = sentence.predict(dev_inputs, verbose=0)
        train_y = train_targets[:, None] if self.regression else train_targets

        steps = max(1, len(train_x) // train.batch_size) * c.head_epochs
        with strategy.scope():
            head = keras.Sequential([
                keras.Input((train_x.shape[1],), name="features"),
                keras.layers.Dropout(c.dropout),
                keras.layers.Dense(self.num_outputs, name="logits",
                                   kernel_initializer=keras.initializers.TruncatedNormal(
                                       stddev=encoder.config.initializer_range)),
            ], name="head")
            head.compile(
                optimizer=create_optimizer(c.head_learning_rate, steps,
                                           int(train.warmup_ratio * steps),
                                           weight_decay=train.weight_decay,
                                           gradient_accumulation_steps=(
                                               train.gradient_accumulation_steps)),
                loss=self.loss(), metrics=self.metrics(), jit_compile=train.jit_compile)
        evaluate = lambda: self.score(head.predict(dev_x, verbose=0), reference)
        if validation:  # it chooses the epoch; dev is only reported
            val_inputs, val_reference = self.eval_data(validation, train.eval_batch_size)
            val_x = sentence.predict(val_inputs, verbose=0)
            val_y = val_reference[:, None] if self.regression else val_reference

            def evaluate():
                scores = {VALIDATION + k: v for k, v in
                          self.score(head.predict(val_x, verbose=0), val_reference).items()}
                scores[VALIDATION + "loss"] = float(head.evaluate(val_x, val_y, verbose=0,
                                                                  return_dict=True)["loss"])
                return {**scores, **self.score(head.predict(dev_x, verbose=0), reference)}

        evaluation = DevEvaluation(evaluate, verbose=train.verbose)
        best_path = os.path.join(model_dir, "head_" + BEST_WEIGHTS)
        # Cached features fit in memory: a NumPy fit, shuffled by Keras.
        head.fit(train_x, train_y, batch_size=train.micro_batch_size, epochs=c.head_epochs,
                 shuffle=True, verbose=0 if train.verbose < 2 else 2, callbacks=[
                     evaluation, KeepBest(best_path, evaluation, self.main_metric)])
        if os.path.isfile(best_path):
            head.load_weights(best_path)

        # One model from the three int32 inputs to logits, for the task's export.
        inputs = {n: keras.Input(shape=(None,), dtype="int32", name=n) for n in INPUT_NAMES}
        model = keras.Model(inputs, head(sentence(inputs)), name="frozen_encoder_classifier")
        return model, evaluation.scores
