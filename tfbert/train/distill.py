"""Knowledge distillation: smaller students from a teacher (DistilBERT-style).

Three pieces:

- `init_student`: a student checkpoint made from a teacher checkpoint by
  keeping every k-th transformer layer (DistilBERT initialises its 6-layer
  student from one layer out of two of BERT-base); embeddings, pooler and the
  pretraining heads are copied. The result is an ordinary tfbert checkpoint:
  `tools/finetune.py --init_checkpoint` and `tools/distill.py` take it.
- Task distillation (`TaskDistiller`, driven by
  `tfbert.tasks.distillation.DistillationTask`): the student task model trains
  on `soft_weight` x KL(teacher || student) at a temperature (x T^2, as in
  Hinton et al., so gradients keep their scale) plus `hard_weight` x the
  task's own loss on the gold labels; the teacher's logits come with each
  batch (labelled once, before training).
- General distillation (`MlmDistiller`): on masked-LM batches, the student
  pretrainer learns `soft_weight` x KL(teacher MLM distribution || student's)
  at a temperature + `hard_weight` x MLM cross-entropy + `cosine_weight` x
  (1 - cosine) between student and teacher final hidden states at real tokens.

Example:
>>> keep_every_kth(6, 3)
[0, 3]
>>> keep_every_kth(12, 2)
[0, 2, 4, 6, 8, 10]
"""

import dataclasses

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from tfbert import checkpoint
from tfbert.encoder import INPUT_NAMES
from tfbert.config_loader import at_least, positive, validate

LAYER = "transformer_layer_"


def keep_every_kth(num_layers, k):
    """Teacher layer indices a student keeps: 0, k, 2k, ... (DistilBERT's one out of k)."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"keep every k-th layer: k must be a positive int, got {k!r}.")
    if k > num_layers:
        raise ValueError(f"keep every k-th layer: k={k} exceeds the teacher's {num_layers} layers.")
    return list(range(0, num_layers, k))


def student_weights(config, weights, layers):
    """`(student config, student weights)` from a teacher's `config` and
    `{"encoder/...", "mlm/...": array}` weights, keeping the transformer
    layers `layers` (teacher indices, in order) as student layers 0, 1, ..."""
    if config.share_layers:
        raise ValueError("The teacher shares one block across its layers (share_layers): there "
                         "are no separate layers to pick; use a preset student instead.")
    layers = [int(i) for i in layers]
    bad = [i for i in layers if not 0 <= i < config.num_layers]
    if not layers or bad or len(set(layers)) != len(layers):
        raise ValueError(f"student layers {layers} must be distinct teacher layers in "
                         f"[0, {config.num_layers}).")
    student = {}
    for name, value in weights.items():
        prefix = f"encoder/{LAYER}"
        if not name.startswith(prefix):
            student[name] = value
            continue
        index, rest = name[len(prefix):].split("/", 1)
        if int(index) in layers:
            student[f"{prefix}{layers.index(int(index))}/{rest}"] = value
    return config.replace(num_layers=len(layers)), student


def init_student(teacher_dir, out_dir, every_k=None, layers=None):
    """Writes a student checkpoint (atomically) with the teacher's layers
    `layers` (default: every `every_k`-th); returns `out_dir`."""
    ckpt = checkpoint.read_checkpoint(teacher_dir)
    if layers is None:
        if every_k is None:
            raise ValueError("init_student needs every_k or layers.")
        layers = keep_every_kth(ckpt.config.num_layers, every_k)
    config, weights = student_weights(ckpt.config, ckpt.weights, layers)
    encoder, heads = checkpoint.split_heads(weights)
    return checkpoint.save_checkpoint(
        out_dir, config, encoder, ckpt.vocab_file, ckpt.lower_case, head_weights=heads,
        source=f"student of {ckpt.path} (teacher layers {list(layers)})", sentence=ckpt.sentence)


# === Losses ===


def soft_target_loss(student_logits, teacher_logits, temperature, weights=None):
    """KL(softmax(teacher/T) || softmax(student/T)) x T^2, averaged over the
    leading positions (weighted by `weights` when given).

    Example:
    >>> x = np.array([[2.0, 0.0, -1.0]], "float32")
    >>> float(soft_target_loss(x, x, 2.0))
    0.0
    """
    t = float(temperature)
    teacher = ops.softmax(ops.cast(teacher_logits, "float32") / t, axis=-1)
    log_student = ops.log_softmax(ops.cast(student_logits, "float32") / t, axis=-1)
    log_teacher = ops.log_softmax(ops.cast(teacher_logits, "float32") / t, axis=-1)
    kl = ops.sum(teacher * (log_teacher - log_student), axis=-1) * (t * t)
    if weights is None:
        return ops.mean(kl)
    weights = ops.cast(weights, "float32")
    return ops.sum(kl * weights) / ops.maximum(ops.sum(weights), 1.0)


# === Task distillation ===


@dataclasses.dataclass
class DistillConfig:
    """Loss weights of distillation (the `distill:` section of tools/distill.py's YAML)."""

    temperature: float = positive(2.0)
    soft_weight: float = at_least(0.0, 1.0)  # KL to the teacher's soft targets
    # The task's loss on gold labels (MLM cross-entropy in general mode).
    hard_weight: float = at_least(0.0, 0.5)
    # General distillation: 1 - cos(student, teacher hidden states).
    cosine_weight: float = at_least(0.0, 1.0)

    def __post_init__(self):
        validate(self)


class TaskDistiller(keras.Model):
    """Trains `student` (a task model) on soft targets + gold labels; its
    weights are the student's, so the best weights and the export follow."""

    def __init__(self, student, hard_loss, distill, regression=False, **kwargs):
        super().__init__(**kwargs)
        self.student = student
        # A plain function: Keras would track a Loss attribute as a layer.
        self._hard_loss = lambda y, p, w=None: hard_loss(y, p, sample_weight=w)
        self.distill = distill
        self.regression = regression
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.soft_tracker = keras.metrics.Mean(name="soft_loss")
        self.hard_tracker = keras.metrics.Mean(name="hard_loss")
        # The student is a built functional model and this wrapper adds no
        # weights: built now, so BackupAndRestore can load into it before fit.
        self.built = True

    def call(self, inputs, training=None):
        return self.student(inputs, training=training)

    def _loss_terms(self, y, y_pred):
        if self.regression:  # a score has no distribution: match the teacher's value
            soft = ops.mean(ops.square(y_pred - ops.cast(y["teacher_logits"], "float32")))
        else:
            soft = soft_target_loss(y_pred, y["teacher_logits"], self.distill.temperature)
        # Transfer-set rows without a gold label weigh 0 in the hard loss.
        return soft, self._hard_loss(y["labels"], y_pred, y.get("label_weights"))

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        soft, hard = self._loss_terms(y, y_pred)
        loss = self.distill.soft_weight * soft + self.distill.hard_weight * hard
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        return loss / replicas if replicas > 1 else loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        soft, hard = self._loss_terms(y, y_pred)
        self.soft_tracker.update_state(soft)
        self.hard_tracker.update_state(hard)
        self.loss_tracker.update_state(self.distill.soft_weight * soft
                                       + self.distill.hard_weight * hard)
        return self.get_metrics_result()

    @property
    def metrics(self):
        return [self.loss_tracker, self.soft_tracker, self.hard_tracker]


# === General distillation (masked LM) ===


class MlmDistiller(keras.Model):
    """Trains a student `BertPretrainer` against a frozen teacher pretrainer
    on masked-LM batches (`tfbert.data.pretraining.dataset.pretraining_dataset`):

        soft_weight   x KL(teacher || student) of the MLM distributions at T (x T^2)
      + hard_weight   x MLM cross-entropy on the true tokens
      + cosine_weight x mean over real tokens of 1 - cos(student h, teacher h)

    (DistilBERT's triple loss; h is the last layer, so the student needs the
    teacher's hidden size). The two share the vocabulary. The student's
    weights are this model's trainable weights; the teacher's are frozen.
    Metrics: `loss`, `soft_loss`, `mlm_loss`, `cosine_loss`.
    """

    def __init__(self, student, teacher, distill=None, **kwargs):
        super().__init__(**kwargs)
        s, t = student.encoder.config, teacher.encoder.config
        if s.vocab_size != t.vocab_size:
            raise ValueError(f"student vocab_size {s.vocab_size} != teacher's {t.vocab_size}; "
                             "general distillation compares distributions over one vocabulary.")
        self.distill = distill or DistillConfig()
        if self.distill.cosine_weight and s.hidden_size != t.hidden_size:
            raise ValueError(f"cosine loss needs one hidden size: student {s.hidden_size}, "
                             f"teacher {t.hidden_size} (set distill.cosine_weight=0).")
        self.student = student
        self.teacher = teacher
        teacher.trainable = False
        self.trackers = {name: keras.metrics.Mean(name=name)
                         for name in ("loss", "soft_loss", "mlm_loss", "cosine_loss")}
        self.built = True  # both pretrainers are built; no weights of its own

    def _forward(self, model, x, training):
        out = model.encoder({k: x[k] for k in INPUT_NAMES}, training=training)
        logits = model.mlm_head(out["sequence_output"], x["masked_lm_positions"])
        return logits, out["sequence_output"]

    def call(self, x, training=None):
        logits, hidden = self._forward(self.student, x, training)
        return {"mlm_logits": logits, "sequence_output": hidden}

    def _loss_terms(self, x, y, y_pred):
        t_logits, t_hidden = self._forward(self.teacher, x, False)
        t_logits, t_hidden = ops.stop_gradient(t_logits), ops.stop_gradient(t_hidden)
        weights = ops.cast(y["masked_lm_weights"], "float32")
        soft = soft_target_loss(y_pred["mlm_logits"], t_logits, self.distill.temperature, weights)
        ce = keras.losses.sparse_categorical_crossentropy(y["masked_lm_ids"], y_pred["mlm_logits"],
                                                          from_logits=True)
        hard = ops.sum(ce * weights) / ops.maximum(ops.sum(weights), 1.0)
        terms = {"soft_loss": soft, "mlm_loss": hard}
        if self.distill.cosine_weight:
            mask = ops.cast(x["input_mask"], "float32")
            s_h = ops.normalize(ops.cast(y_pred["sequence_output"], "float32"), axis=-1)
            t_h = ops.normalize(ops.cast(t_hidden, "float32"), axis=-1)
            cos = ops.sum(s_h * t_h, axis=-1)
            terms["cosine_loss"] = ops.sum((1.0 - cos) * mask) / ops.maximum(ops.sum(mask), 1.0)
        else:
            terms["cosine_loss"] = ops.zeros(())
        terms["loss"] = (self.distill.soft_weight * soft + self.distill.hard_weight * hard
                         + self.distill.cosine_weight * terms["cosine_loss"])
        return terms

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        loss = self._loss_terms(x, y, y_pred)["loss"]
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        return loss / replicas if replicas > 1 else loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        for name, value in self._loss_terms(x, y, y_pred).items():
            self.trackers[name].update_state(value)
        return self.get_metrics_result()

    @property
    def metrics(self):
        return list(self.trackers.values())


def mlm_divergence(student, teacher, dataset, steps, temperature=1.0):
    """Mean KL(teacher || student) of the MLM distributions over `steps`
    batches of `dataset` (real predictions only): how far the student's
    masked-LM loss is from the teacher's."""
    from tfbert.encoder import INPUT_NAMES

    total, count = 0.0, 0.0
    for x, y in dataset.take(steps):
        inputs = {k: x[k] for k in INPUT_NAMES + ("masked_lm_positions",)}
        s = student(inputs, training=False)["mlm_logits"]
        t = teacher(inputs, training=False)["mlm_logits"]
        w = ops.cast(y["masked_lm_weights"], "float32")
        total += float(soft_target_loss(s, t, temperature, w)) * float(ops.sum(w))
        count += float(ops.sum(w))
    return total / max(count, 1.0)
