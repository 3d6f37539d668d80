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

    `steps_per_update=N` (gradient accumulation): Keras 3.15 calls the
    schedule with its micro-step counter (`optimizer._iterations`, not the
    update count `optimizer.iterations`), so the step is divided by N first:
    update k gets the learning rate of step k, as without accumulation.

    Example:
    >>> s = WarmupPolynomialDecay(1e-3, decay_steps=100, warmup_steps=10)
    >>> round(float(s(5)), 6), round(float(s(10)), 6), round(float(s(100)), 6)
    (0.0005, 0.001, 0.0)
    """

    def __init__(self, learning_rate, decay_steps, warmup_steps=0,
                 end_learning_rate=0.0, power=1.0, steps_per_update=1):
        self.steps_per_update = steps_per_update
        self.learning_rate = learning_rate
        self.decay_steps = decay_steps
        self.warmup_steps = warmup_steps
        self.end_learning_rate = end_learning_rate
        self.power = power

    def __call__(self, step):
        if self.steps_per_update > 1:
            step = ops.floor_divide(step, self.steps_per_update)
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
            "steps_per_update": self.steps_per_update,
        }


@keras.saving.register_keras_serializable(package="tfbert")
class TimeBudgetDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup over `warmup_steps` steps, then polynomial decay (linear
    for `power=1`) to `end_learning_rate` at the end of a time budget.

    The decay's progress is `seconds_spent / budget_seconds`, read from the
    variable `seconds_spent` inside the (compiled) train step: the
    `tfbert.train.callbacks.TimeBudget` callback sets it from the wall clock
    before every step, and it is an optimizer variable (see
    `create_optimizer`), so a backup saves and restores the clock with the
    step and a resumed run continues the same schedule. The rate is the lower
    of the warmup line and the decay curve: it rises, meets the decay, and
    reaches `end_learning_rate` when the budget is spent.

    Example:
    >>> s = TimeBudgetDecay(1e-3, budget_seconds=100.0, warmup_steps=10)
    >>> round(float(s.rate(5, 0.0)), 6), round(float(s.rate(50, 50.0)), 6), float(s.rate(50, 100.0))
    (0.0005, 0.0005, 0.0)
    """

    def __init__(self, learning_rate, budget_seconds, warmup_steps=0, end_learning_rate=0.0,
                 power=1.0, steps_per_update=1, seconds_spent=None):
        self.learning_rate = learning_rate
        self.budget_seconds = budget_seconds
        self.warmup_steps = warmup_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.steps_per_update = steps_per_update
        if seconds_spent is None:
            seconds_spent = keras.Variable(0.0, dtype="float32", trainable=False,
                                           name="budget_seconds_spent")
        self.seconds_spent = seconds_spent

    def __call__(self, step):
        return self.rate(step, self.seconds_spent)

    def rate(self, step, seconds_spent):
        """The learning rate at optimizer step `step` with `seconds_spent` of the budget gone."""
        if self.steps_per_update > 1:
            step = ops.floor_divide(step, self.steps_per_update)
        step = ops.cast(step, "float32")
        peak = ops.cast(self.learning_rate, "float32")
        end = ops.cast(self.end_learning_rate, "float32")
        progress = ops.clip(ops.cast(seconds_spent, "float32") / float(self.budget_seconds),
                            0.0, 1.0)
        decayed = (peak - end) * ops.power(1.0 - progress, self.power) + end
        if self.warmup_steps > 0:
            return ops.minimum(peak * step / float(self.warmup_steps), decayed)
        return decayed

    def get_config(self):
        # The clock is state, not config: it is saved with the optimizer's variables.
        return {
            "learning_rate": self.learning_rate,
            "budget_seconds": self.budget_seconds,
            "warmup_steps": self.warmup_steps,
            "end_learning_rate": self.end_learning_rate,
            "power": self.power,
            "steps_per_update": self.steps_per_update,
        }


class _SumThenClip:
    """Under tf.distribute, Keras 3.15 clips each replica's gradients and only
    then sums them across replicas, so `global_clipnorm` sees per-replica
    norms and training differs from one device with the same global batch.
    This sums first (once) and clips the summed gradients.

    With `gradient_accumulation_steps`, the sum comes before the accumulator
    as well: every micro-batch's gradients are summed across replicas, so the
    accumulators (mirrored variables) hold the same value on every replica and
    a backup written mid-accumulation (which saves one replica's copy) loses
    nothing. Keras then averages the accumulated micro-batches and clips that
    average: the clipped gradient of one batch of N times the size."""

    def _backend_apply_gradients(self, grads, trainable_variables):
        # Dense gradients: Keras' Adam squares an IndexedSlices gradient (an
        # Embedding's) per occurrence, so a token seen k times in a batch
        # adds the sum of its k squared gradients to the second moment, not
        # the square of their sum (tests/train/test_optimizer.py).
        if getattr(self, "dense_gradients", False) or self.gradient_accumulation_steps:
            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                     for g in grads]
        context = tf.distribute.get_replica_context()
        if context is None or context.num_replicas_in_sync == 1:
            return super()._backend_apply_gradients(grads, trainable_variables)
        grads = list(context.all_reduce(tf.distribute.ReduceOp.SUM, list(grads)))
        if not self.gradient_accumulation_steps:
            return super()._backend_apply_gradients(grads, trainable_variables)
        # Keras' accumulation branches with `ops.cond` in the replica context,
        # and its update inside the branch needs a `merge_call`, which
        # tf.distribute refuses inside control flow ("merge_call called while
        # defining a new graph"; MirroredStrategy merges except under XLA on
        # GPUs). The summed gradients are equal on every replica, so the
        # branch runs once, in the cross-replica context.
        return context.merge_call(self._accumulate_cross_replica,
                                  args=(grads, trainable_variables))

    def _accumulate_cross_replica(self, strategy, grads, trainable_variables):
        """Keras' accumulation step (`BaseOptimizer._backend_apply_gradients`),
        written with `strategy.extended.update` (no merge_call inside)."""
        grads = [strategy.experimental_local_results(g)[0] for g in grads]
        accumulators = [self._accumulated_gradients[self._get_variable_index(v)].value
                        for v in trainable_variables]
        steps = self.gradient_accumulation_steps

        def update():
            mean = self._clip_gradients([(g + a) / steps for g, a in zip(grads, accumulators)])
            lr = self.learning_rate
            if self.weight_decay is not None:
                wd = self.weight_decay
                for v in trainable_variables:
                    if self._use_weight_decay(v):
                        strategy.extended.update(
                            v.value, lambda x: x.assign_sub(x * tf.cast(wd * lr, x.dtype)),
                            group=False)
            self._distributed_tf_update_step(
                strategy, list(zip(mean, [v.value for v in trainable_variables])), lr)
            for a in accumulators:
                strategy.extended.update(a, lambda x: x.assign(tf.zeros_like(x)), group=False)

        def accumulate():
            for a, g in zip(accumulators, grads):
                strategy.extended.update(a, lambda x, g: x.assign_add(g), args=(g,),
                                         group=False)

        tf.cond((self._iterations + 1) % steps == 0, update, accumulate)

    def _all_reduce_sum_gradients(self, grads_and_vars):
        return grads_and_vars  # already summed in _backend_apply_gradients


@keras.saving.register_keras_serializable(package="tfbert")
class AdamW(_SumThenClip, keras.optimizers.AdamW):
    """Keras AdamW with gradients summed across replicas before clipping, and
    each dense update one fused op."""

    def update_step(self, gradient, variable, learning_rate):
        # Keras writes Adam's update as about a dozen ops per variable; TF's
        # ResourceApplyAdam kernel computes the same formula in the same order
        # (m += (g - m)(1 - b1), v += (g^2 - v)(1 - b2), var -= m lr_t /
        # (sqrt(v) + eps), lr_t = lr sqrt(1 - b2^t) / (1 - b1^t)) in one. A
        # BERT train step traces and runs faster (tests/train/test_optimizer.py).
        if self.amsgrad or isinstance(gradient, tf.IndexedSlices):
            return super().update_step(gradient, variable, learning_rate)
        dtype = tf.as_dtype(variable.dtype)
        step = tf.cast(self.iterations + 1, dtype)
        beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
        index = self._get_variable_index(variable)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle, m=self._momentums[index].handle,
            v=self._velocities[index].handle, beta1_power=tf.pow(beta_1, step),
            beta2_power=tf.pow(beta_2, step), lr=tf.cast(learning_rate, dtype), beta1=beta_1,
            beta2=beta_2, epsilon=tf.cast(self.epsilon, dtype), grad=tf.cast(gradient, dtype))


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
    gradient_accumulation_steps=1,
    dense_gradients=False,
    budget_seconds=None,
):
    """AdamW or LAMB with BERT's schedule; decay skips LayerNorm and biases.

    `clipnorm` clips the global gradient norm (None disables clipping).
    `gradient_accumulation_steps=N` > 1: Keras' own accumulation; the
    variables move on every N-th call with the mean of the N micro-batches'
    gradients (clipped after averaging), and `num_train_steps`,
    `num_warmup_steps` and `optimizer.iterations` count those updates.

    Example:
    >>> opt = create_optimizer(5e-5, num_train_steps=1000, num_warmup_steps=100)
    >>> type(opt).__name__
    'AdamW'

    `budget_seconds`: the decay follows the time spent instead of the step
    (`TimeBudgetDecay`; `num_train_steps` is unused); train with the
    `tfbert.train.callbacks.TimeBudget(optimizer.budget_schedule)`, which
    keeps the clock.
    """
    steps_per_update = max(1, int(gradient_accumulation_steps))
    if budget_seconds:
        schedule = TimeBudgetDecay(
            learning_rate,
            budget_seconds=budget_seconds,
            warmup_steps=num_warmup_steps,
            end_learning_rate=end_learning_rate,
            power=power,
            steps_per_update=steps_per_update,
        )
    else:
        schedule = WarmupPolynomialDecay(
            learning_rate,
            decay_steps=num_train_steps,
            warmup_steps=num_warmup_steps,
            end_learning_rate=end_learning_rate,
            power=power,
            steps_per_update=steps_per_update,
        )
    kwargs = dict(
        learning_rate=schedule,
        weight_decay=weight_decay,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        global_clipnorm=clipnorm,
    )
    if gradient_accumulation_steps > 1:
        kwargs["gradient_accumulation_steps"] = int(gradient_accumulation_steps)
    if optimizer_type == "adamw":
        optimizer = AdamW(**kwargs)
    elif optimizer_type == "lamb":
        optimizer = Lamb(**kwargs)
    else:
        raise ValueError(f"Unknown optimizer_type {optimizer_type!r}; use 'adamw' or 'lamb'.")
    if budget_seconds:
        # An optimizer variable: saved and restored with the step by every backup.
        schedule.seconds_spent = optimizer.add_variable((), name="budget_seconds_spent")
        optimizer.budget_schedule = schedule  # for the TimeBudget callback
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_PATTERNS))
    # Dense embedding gradients (torch's Adam): always with accumulation (its
    # accumulators are dense); without it only when asked, so the recipe's
    # measured figures stay as they were until re-measured (docs/quality.md).
    optimizer.dense_gradients = bool(dense_gradients)
    return optimizer


def optimizer_for(train, num_train_steps):
    """The recipe's optimizer for a `TrainConfig` (its learning rate set) over
    `num_train_steps` updates: warmup over `train.warmup_ratio` of them, then
    linear decay. One place for the fine-tuning trainer and `TextClassifier.fit`."""
    return create_optimizer(
        train.learning_rate, num_train_steps=num_train_steps,
        num_warmup_steps=int(train.warmup_ratio * num_train_steps),
        optimizer_type=train.optimizer_type, weight_decay=train.weight_decay,
        clipnorm=train.clipnorm, epsilon=train.adam_epsilon,
        gradient_accumulation_steps=train.gradient_accumulation_steps,
        dense_gradients=train.dense_gradients)


def build_before_fit(model):
    """Builds `model.optimizer`'s slots for the model's trainable weights now.

    Without a strategy scope, Keras 3.15 builds the optimizer inside the first
    traced train step, and a `tf.function` whose first trace creates variables
    is traced a second time: the whole train step's graph (tens of seconds for
    a BERT on CPU) was built twice at the start of every `fit`. A model with a
    layer not yet built (weights the first call makes) is left to Keras; a
    wrapper whose layers are all built (a sentence loss around its encoder) is
    built here."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or optimizer.built or not model.trainable_variables:
        return
    if not model.built and not (model.layers and all(layer.built for layer in model.layers)):
        return
    with model.distribute_strategy.scope():
        optimizer.build(model.trainable_variables)
