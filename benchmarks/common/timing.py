"""A fine-tuning run timed step by step: the steady-state speed the fine-tuning
benchmarks report (`bench_finetune`, `bench_keras_fit`, the bucketing rows)."""

import time


def step_timer(times):
    """A Keras callback that keeps in `times` the `perf_counter` after each
    training batch of the epoch running (the last one's, when fit ends:
    steady state, compiling happens in the first)."""
    import keras

    class StepTimer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            times.clear()

        def on_train_batch_end(self, batch, logs=None):
            times.append(time.perf_counter())

    return StepTimer()


def timed_finetune(task, train, model_dir, **kwargs):
    """`tfbert.tasks.runner.finetune` with a timer: `(result, times)` as `step_timer`."""
    import keras

    from tfbert.tasks.runner import finetune

    times = []
    original = keras.Model.fit

    def fit(self, *args, callbacks=None, **kw):  # add the timer to the runner's fit
        return original(self, *args, callbacks=list(callbacks or []) + [step_timer(times)],
                        **kw)

    keras.Model.fit = fit
    try:
        return finetune(task, train, model_dir, **kwargs), times
    finally:
        keras.Model.fit = original
