"""Input pipelines: pretraining TFRecords and task readers."""
