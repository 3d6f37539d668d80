import keras
import numpy as np
import pytest

from tfbert.train.optimizer import WarmupPolynomialDecay, create_optimizer


def test_schedule_warmup_then_linear_decay():
    s = WarmupPolynomialDecay(1e-3, decay_steps=110, warmup_steps=10)
    values = [float(s(step)) for step in (0, 5, 10, 60, 110, 200)]
    np.testing.assert_allclose(values, [0.0, 5e-4, 1e-3, 5e-4, 0.0, 0.0], atol=1e-9)
    assert WarmupPolynomialDecay.from_config(s.get_config()).get_config() == s.get_config()


def test_weight_decay_skips_layer_norm_and_bias():
    dense = keras.layers.Dense(4, bias_initializer="ones")
    norm = keras.layers.LayerNormalization()
    dense.build((None, 4))
    norm.build((None, 4))
    variables = [dense.kernel, dense.bias, norm.gamma, norm.beta]
    before = [v.numpy().copy() for v in variables]
    opt = create_optimizer(1e-2, num_train_steps=10, weight_decay=0.5, clipnorm=None)
    # Zero gradients: only decoupled weight decay can move a variable.
    opt.apply_gradients([(np.zeros(v.shape, "float32"), v) for v in variables])
    kernel, bias, gamma, beta = [v.numpy() for v in variables]
    assert not np.allclose(kernel, before[0])
    np.testing.assert_array_equal(bias, before[1])
    np.testing.assert_array_equal(gamma, before[2])
    np.testing.assert_array_equal(beta, before[3])


def test_lamb_and_unknown_optimizer():
    assert type(create_optimizer(1e-3, 100, optimizer_type="lamb")).__name__ == "Lamb"
    with pytest.raises(ValueError, match="Unknown optimizer_type 'sgd'"):
        create_optimizer(1e-3, 100, optimizer_type="sgd")
