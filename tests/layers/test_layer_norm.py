import keras
import numpy as np
import pytest

from tfbert.layers.layer_norm import LayerNorm


@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16", "mixed_float16"])
@pytest.mark.parametrize("shape", [(3, 5, 16), (7, 16)])
def test_equals_keras_layer_normalization(dtype, shape):
    rng = np.random.default_rng(0)
    x = rng.normal(loc=3.0, scale=2.0, size=shape).astype("float32")
    ours = LayerNorm(epsilon=1e-12, dtype=dtype)
    theirs = keras.layers.LayerNormalization(epsilon=1e-12, dtype=dtype)
    ours.build(shape)
    theirs.build(shape)
    weights = [rng.normal(size=w.shape).astype("float32") for w in theirs.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    got, want = ours(x), theirs(x)
    assert got.dtype == want.dtype
    f32 = lambda t: np.asarray(keras.ops.cast(t, "float32"))  # noqa: E731
    # Both compute in float32; the 16-bit outputs differ by a rounding at most.
    atol = 1e-5 if dtype == "float32" else 0.05
    np.testing.assert_allclose(f32(got), f32(want), atol=atol)


def test_other_axes_and_rms_scaling_are_keras_own():
    x = np.random.default_rng(1).normal(size=(2, 3, 4)).astype("float32")
    for kwargs in ({"axis": 1}, {"rms_scaling": True}):
        ours, theirs = LayerNorm(**kwargs), keras.layers.LayerNormalization(**kwargs)
        np.testing.assert_allclose(ours(x), theirs(x), atol=1e-6)


def test_get_config_round_trips():
    layer = LayerNorm(epsilon=1e-6, name="norm")
    assert LayerNorm.from_config(layer.get_config()).get_config() == layer.get_config()
