"""One clear line when an export does not fit on its filesystem.

TensorFlow reports a full disk during `tf.saved_model.save` as a
`ResourceExhaustedError` traceback; Python writes as `OSError(ENOSPC)`. The
exports write into a temporary sibling and rename it into place
(`tfbert.atomic`), so a
failed write leaves nothing behind and an earlier export at the same path
stays as it was; this module only turns the failure into a
`DestinationError` (a `ValueError`) that says where, how much is needed and
how much is free. The size is measured only after a failure (by saving
again to TensorFlow's in-memory filesystem), so a normal export pays nothing.

Example:
>>> import tempfile
>>> out = os.path.join(tempfile.mkdtemp(), "model.tflite")
>>> with explain_full_disk(out, lambda: 5_000_000):
...     raise OSError(errno.ENOSPC, "No space left on device")
Traceback (most recent call last):
tfbert.atomic.DestinationError: Cannot write ...model.tflite: no space left on device (the export needs 5.0 MB; ... MB free there).
"""

import contextlib
import errno
import os
import shutil
import uuid

import tensorflow as tf

from tfbert.atomic import DestinationError

NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def is_out_of_space(error):
    """True for a full filesystem or quota, however it was reported."""
    if isinstance(error, tf.errors.ResourceExhaustedError):
        return True  # TF's file writers: "... No space left on device"
    while error is not None:
        if isinstance(error, OSError) and error.errno in NO_SPACE:
            return True
        error = error.__cause__ or error.__context__  # atomic_dir re-raises `from None`
    return False


@contextlib.contextmanager
def explain_full_disk(output_path, needed_bytes):
    """Re-raises a full disk inside the block as one `DestinationError`
    line. `needed_bytes`: a callable giving the export's size in bytes, called
    only then."""
    try:
        yield
    except (tf.errors.ResourceExhaustedError, OSError, DestinationError) as e:
        if not is_out_of_space(e):
            raise
        needed, free = needed_bytes(), free_bytes(output_path)
        raise DestinationError(
            f"Cannot write {os.path.abspath(output_path)}: no space left on device (the export "
            f"needs {megabytes(needed)}; {megabytes(free)} free there).") from None


def saved_model_bytes(obj, signatures=None):
    """Bytes that `tf.saved_model.save(obj, ..., signatures)` writes, measured
    on TensorFlow's in-memory filesystem (nothing touches the disk)."""
    path = f"ram://tfbert-size-{uuid.uuid4().hex}"
    tf.saved_model.save(obj, path, signatures=signatures)
    try:
        return sum(tf.io.gfile.stat(f"{root}/{name}").length
                   for root, _, files in tf.io.gfile.walk(path) for name in files)
    finally:
        tf.io.gfile.rmtree(path)


def free_bytes(path):
    """Free bytes on the filesystem that would hold `path`."""
    path = os.path.abspath(path)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return shutil.disk_usage(path).free


def megabytes(count):
    return f"{count / 1e6:.1f} MB"
