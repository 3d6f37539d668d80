"""BERT's optimizer recipe: AdamW (or LAMB), linear warmup, polynomial decay."""

import keras
import tensorflow as tf
from keras import ops

# LayerNorm scales/offsets and every bias are not decayed (BERT's recipe).
# Keras matches these patterns against the short variable name.
NO_DECAY_PATTERNS = ("bias", "gamma", "beta")


@keras.saving.register_keras_serializable(package="tfbert")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup from 0 to `learning_rate` over `warmup_steps`, then
    polynomial decay (linear for `power=1`) to `end_learning_rate` at
    `decay_steps`.

    Example:
    >>> s = WarmupPolynomialDecay(1e-3, decay_steps=100, warmup_steps=10)
    >>> round(float(s(5)), 6), round(float(s(10)), 6), round(float(s(100)), 6)
    (0.0005, 0.001, 0.0)
    """

    def __init__(self, learning_rate, decay_steps, warmup_steps=0,
                 end_learning_rate=0.0, power=1.0):
        self.learning_rate = learning_rate
        self.decay_steps = decay_steps
        self.warmup_steps = warmup_steps
        self.end_learning_rate = end_learning_rate
        self.power = power

    def __call__(self, step):
        step = ops.cast(step, "float32")
        peak = ops.cast(self.learning_rate, "float32")
        end = ops.cast(self.end_learning_rate, "float32")
        warmup = float(max(self.warmup_steps, 0))
        decay_span = float(max(self.decay_steps - self.warmup_steps, 1))
        progress = ops.clip((step - warmup) / decay_span, 0.0, 1.0)
        decayed = (peak - end) * ops.power(1.0 - progress, self.power) + end
        if warmup > 0:
            warmed = peak * step / warmup
            return ops.where(step < warmup, warmed, decayed)
        return decayed

    def get_config(self):
        return {
            "learning_rate": self.learning_rate,
            "decay_steps": self.decay_steps,
            "warmup_steps": self.warmup_steps,
            "end_learning_rate": self.end_learning_rate,
            "power": self.power,
        }


class _SumThenClip:
    """Under tf.distribute, Keras 3.15 clips each replica's gradients and only
    then sums them across replicas, so `global_clipnorm` sees per-replica
    norms and training differs from one device with the same global batch.
    This sums first (once) and clips the summed gradients."""

    def _clip_gradients(self, grads):
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            present = [i for i, g in enumerate(grads) if g is not None]
            summed = context.all_reduce(
                tf.distribute.ReduceOp.SUM, [grads[i] for i in present]
            )
            grads = list(grads)
            for i, g in zip(present, summed):
                grads[i] = g
        return super()._clip_gradients(grads)

    def _all_reduce_sum_gradients(self, grads_and_vars):
        return grads_and_vars  # already summed in _clip_gradients


@keras.saving.register_keras_serializable(package="tfbert")
class AdamW(_SumThenClip, keras.optimizers.AdamW):
    """Keras AdamW with gradients summed across replicas before clipping."""


@keras.saving.register_keras_serializable(package="tfbert")
class Lamb(_SumThenClip, keras.optimizers.Lamb):
    """Keras LAMB with gradients summed across replicas before clipping."""


def create_optimizer(
    learning_rate,
    num_train_steps,
    num_warmup_steps=0,
    optimizer_type="adamw",
    weight_decay=0.01,
    end_learning_rate=0.0,
    power=1.0,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-6,
    clipnorm=1.0,
):
    """AdamW or LAMB with BERT's schedule; decay skips LayerNorm and biases.

    `clipnorm` clips the global gradient norm (None disables clipping).

    Example:
    >>> opt = create_optimizer(5e-5, num_train_steps=1000, num_warmup_steps=100)
    >>> type(opt).__name__
    'AdamW'
    """
    schedule = WarmupPolynomialDecay(
        learning_rate,
        decay_steps=num_train_steps,
        warmup_steps=num_warmup_steps,
        end_learning_rate=end_learning_rate,
        power=power,
    )
    kwargs = dict(
        learning_rate=schedule,
        weight_decay=weight_decay,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        global_clipnorm=clipnorm,
    )
    if optimizer_type == "adamw":
        optimizer = AdamW(**kwargs)
    elif optimizer_type == "lamb":
        optimizer = Lamb(**kwargs)
    else:
        raise ValueError(f"Unknown optimizer_type {optimizer_type!r}; use 'adamw' or 'lamb'.")
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_PATTERNS))
    return optimizer
