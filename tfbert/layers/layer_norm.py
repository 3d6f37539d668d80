"""`LayerNorm`: Keras' `LayerNormalization` in the form runtimes fuse."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="tfbert")
class LayerNorm(keras.layers.LayerNormalization):
    """Keras' `LayerNormalization` (same weights, config and values, within
    float rounding) over the last axis, written as
    `(x - mean) / sqrt(variance + epsilon) * gamma + beta`.

    Why not Keras' own: it folds `gamma` into the reciprocal square root
    (`x * inv + (beta - mean * inv)`), which OpenVINO's converter leaves as
    eleven elementwise ops per norm; this form, with its reduction axes as a
    1-D list, becomes one fused MVN op there, and measured no slower in
    TensorFlow (docs/cpu_speed.md). In at least float32, as Keras computes it.

    Example:
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=(2, 3, 8)).astype("float32")
    >>> ours, theirs = LayerNorm(epsilon=1e-12), keras.layers.LayerNormalization(epsilon=1e-12)
    >>> bool(np.allclose(ours(x), theirs(x), atol=1e-5))
    True
    """

    def call(self, inputs):
        rank = len(inputs.shape)
        axes = self.axis if isinstance(self.axis, (list, tuple)) else [self.axis]
        if self.rms_scaling or [a % rank for a in axes] != [rank - 1]:
            return super().call(inputs)
        x = ops.cast(inputs, "float32") if self.compute_dtype in ("float16", "bfloat16") else inputs
        mean = ops.mean(x, axis=[-1], keepdims=True)
        centered = x - mean
        variance = ops.mean(ops.square(centered), axis=[-1], keepdims=True)
        outputs = centered / ops.sqrt(variance + self.epsilon)
        if self.scale:
            outputs = outputs * ops.cast(self.gamma, outputs.dtype)
        if self.center:
            outputs = outputs + ops.cast(self.beta, outputs.dtype)
        return ops.cast(outputs, self.compute_dtype)
