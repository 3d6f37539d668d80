"""Pretraining data: corpus (`documents`) -> instances (`instances`) ->
TFRecord shards (`records`, written by `writer` locally or `beam` with Apache
Beam) -> `tf.data` batches (`dataset`). `data_config` is one run's settings."""
