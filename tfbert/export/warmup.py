"""TF Serving warmup requests: an XLA export compiles every shape before traffic.

An export written with `jit_compile=True` (`tfbert.export.compiled_call`)
compiles one XLA program per bucketed (rows, width) shape, on the first
request of that shape: 1.4-2.0 s each for all-MiniLM-L6-v2 on 2 CPU cores.
TF Serving replays `<version>/assets.extra/tf_serving_warmup_requests` (a
TFRecord of `PredictionLog`s) when it loads a model, before it serves, so
the export writes one request per compiled shape there. They go to
`serving_ids` (ids of every shape are easy to make; strings of an exact
packed width are not), whose model call is the same XLA function as
`serving_default`'s: warming one warms both.

Example:
>>> requests = warmup_requests([(1, 16), (2, 16)], "serving_ids")
>>> [[d.size for d in r.predict_log.request.inputs["input_mask"].tensor_shape.dim]
...  for r in requests]
[[1, 16], [2, 16]]
>>> requests[0].predict_log.request.model_spec.signature_name
'serving_ids'
"""

import os

import numpy as np
import tensorflow as tf

from tfbert.encoder import INPUT_NAMES

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")


def warmup_requests(shapes, signature_name):
    """`PredictionLog`s, one per `(rows, width)` in `shapes`: ids of word 1
    (in range for any vocabulary), mask 1, segment 0, to `signature_name`."""
    from tensorflow_serving.apis import predict_pb2, prediction_log_pb2

    values = {"input_word_ids": 1, "input_mask": 1, "input_type_ids": 0}
    logs = []
    for rows, width in shapes:
        request = predict_pb2.PredictRequest()
        request.model_spec.signature_name = signature_name
        for name in INPUT_NAMES:
            request.inputs[name].CopyFrom(tf.make_tensor_proto(
                np.full((rows, width), values[name], np.int32)))
        logs.append(prediction_log_pb2.PredictionLog(
            predict_log=prediction_log_pb2.PredictLog(request=request)))
    return logs


def write_warmup_requests(export_dir, shapes, signature_name):
    """Writes `warmup_requests(shapes)` to `<export_dir>/assets.extra/
    tf_serving_warmup_requests`; returns its path (None when `shapes` is empty)."""
    if not shapes:
        return None
    path = os.path.join(export_dir, WARMUP_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for log in warmup_requests(shapes, signature_name):
            writer.write(log.SerializeToString())
    return path


def read_warmup_requests(export_dir):
    """`[(signature name, {input name: np.ndarray})]` of an export's warmup
    file (what TF Serving replays); `[]` when it has none. A file that is
    not TFRecords of `PredictionLog`s raises one `ValueError` line."""
    from google.protobuf.message import DecodeError
    from tensorflow_serving.apis import prediction_log_pb2

    path = os.path.join(export_dir, WARMUP_FILE)
    if not os.path.isfile(path):
        return []
    out = []
    try:
        for record in tf.data.TFRecordDataset(path).as_numpy_iterator():
            request = prediction_log_pb2.PredictionLog.FromString(record).predict_log.request
            out.append((request.model_spec.signature_name,
                        {name: tf.make_ndarray(t) for name, t in request.inputs.items()}))
    except (tf.errors.DataLossError, DecodeError) as e:
        raise ValueError(f"{path}: not a TF Serving warmup file (record {len(out)}: "
                         f"{type(e).__name__})") from None
    return out
