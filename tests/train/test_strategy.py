import pytest
import tensorflow as tf

from tfbert.train.strategy import get_strategy


def test_off_and_one_device():
    assert get_strategy("off") is tf.distribute.get_strategy()
    strategy = get_strategy("one_device")
    assert isinstance(strategy, tf.distribute.OneDeviceStrategy)
    assert strategy.num_replicas_in_sync == 1


def test_unknown_strategy():
    with pytest.raises(ValueError, match="Unknown distribution_strategy 'parameter_server'"):
        get_strategy("parameter_server")


def test_xla_supported_on_one_replica():
    from tfbert.train.strategy import xla_supported

    assert xla_supported(get_strategy("off"))
    assert xla_supported(get_strategy("one_device"))
