"""`get_strategy`: a `tf.distribute` strategy from its flag name."""

import tensorflow as tf

STRATEGIES = ("off", "one_device", "mirrored", "multi_worker_mirrored", "tpu")


def get_strategy(name="off", num_devices=None, tpu=""):
    """Returns the strategy a `--distribution_strategy` flag names.

    - `off`: TF's default strategy (no distribution).
    - `one_device`: the first GPU, else the CPU.
    - `mirrored`: all local GPUs; with no GPU and `num_devices=N`, N logical
      CPU devices (for testing; must be called before TF touches devices).
    - `multi_worker_mirrored`: the cluster described by `TF_CONFIG`; also
      installs `tfbert.train.multi_worker.patch_keras_fit()`.
    - `tpu`: `TPUStrategy` on the TPU at `tpu` (a name or grpc:// address).
    """
    if name not in STRATEGIES:
        raise ValueError(f"Unknown distribution_strategy {name!r}; use one of {list(STRATEGIES)}.")
    if name == "off":
        return tf.distribute.get_strategy()
    gpus = tf.config.list_physical_devices("GPU")
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy("/gpu:0" if gpus else "/cpu:0")
    if name == "mirrored":
        if gpus:
            devices = [f"/gpu:{i}" for i in range(num_devices or len(gpus))]
        else:
            n = num_devices or 1
            cpu = tf.config.list_physical_devices("CPU")[0]
            try:
                tf.config.set_logical_device_configuration(
                    cpu, [tf.config.LogicalDeviceConfiguration()] * n
                )
            except RuntimeError:  # devices already initialised by earlier TF work
                have = len(tf.config.list_logical_devices("CPU"))
                if have < n:
                    raise RuntimeError(
                        f"mirrored with {n} CPU devices must be set up before TensorFlow "
                        f"initialises its devices (this process already has {have}); "
                        "call get_strategy first."
                    ) from None
            devices = [f"/cpu:{i}" for i in range(n)]
        return tf.distribute.MirroredStrategy(devices)
    if name == "multi_worker_mirrored":
        from tfbert.train.multi_worker import patch_keras_fit

        patch_keras_fit()  # Keras 3 `fit` needs it under this strategy
        return tf.distribute.MultiWorkerMirroredStrategy()
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def xla_supported(strategy):
    """False for a multi-replica strategy on CPU devices: XLA cannot compile
    the cross-device collectives there (logical CPUs or multi-worker), so
    train steps run as plain graphs; GPUs and TPUs keep XLA."""
    return (
        strategy.num_replicas_in_sync == 1
        or bool(tf.config.list_logical_devices("GPU"))
        or isinstance(strategy, tf.distribute.TPUStrategy)
    )
