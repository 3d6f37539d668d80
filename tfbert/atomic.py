r"""Publishing files and directories atomically: write to a temporary sibling,
then rename it into place.

Every file or directory tfbert publishes (checkpoints, exports, data files,
run configs, metadata, reports) goes through `atomic_file` or `atomic_dir`,
so a killed or failed run never leaves a truncated file under the final
name, and an earlier file at that path stays as it was until the new one is
complete. Temporaries left by killed runs are removed by the next write.

Example:
>>> import tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "results.json")
>>> write_json(path, {"accuracy": 0.9})
>>> open(path).read()
'{\n  "accuracy": 0.9\n}'
>>> with atomic_file(path) as tmp:
...     raise RuntimeError("killed half way")
Traceback (most recent call last):
RuntimeError: killed half way
>>> open(path).read(), sorted(os.listdir(os.path.dirname(path)))
('{\n  "accuracy": 0.9\n}', ['results.json'])
"""

import contextlib
import ctypes
import errno
import json
import os
import shutil
import tempfile
import time

from tfbert import config_loader


class DestinationError(ValueError):
    """An output directory that cannot be written (permissions, full disk, read-only)."""


# Temporary directories of processes that started before this one and were
# killed are stale; those of a concurrent process are not touched.
_PROCESS_START = time.time()


@contextlib.contextmanager
def atomic_dir(out_dir, name="output directory"):
    """Yields a temporary sibling of `out_dir` to write into; on success it
    replaces `out_dir` atomically, on error it is removed and `out_dir` is
    left as it was. The result gets the umask's normal directory mode (not
    the temporary directory's 0700), so e.g. a TF Serving process running as
    another user can read it. Stale temporaries of killed runs are removed.

    `out_dir` is checked first (`check_replaceable`; `name`: the argument
    its errors name): the current directory and its parents are never replaced.

    Example:
    >>> import tempfile
    >>> out = os.path.join(tempfile.mkdtemp(), "artifact")
    >>> with atomic_dir(out) as tmp:
    ...     open(os.path.join(tmp, "f.txt"), "w").close()
    >>> os.listdir(out)
    ['f.txt']
    >>> with atomic_dir(""):
    ...     pass
    Traceback (most recent call last):
    tfbert.atomic.DestinationError: The output directory is empty: name a directory to write (an empty path would replace the current directory).
    """
    out_dir = check_replaceable(out_dir, name)
    parent = os.path.dirname(out_dir)
    base = os.path.basename(out_dir)
    try:
        os.makedirs(parent, exist_ok=True)
        _remove_stale(parent, base)
        tmp = tempfile.mkdtemp(prefix=f".{base}.tmp-", dir=parent)
        os.chmod(tmp, 0o777 & ~_umask())
    except OSError as e:
        raise DestinationError(f"Cannot write {out_dir}: {e.strerror or e}.") from None
    try:
        yield tmp
        replace_dir(tmp, out_dir)
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EROFS, errno.EPERM):
            raise DestinationError(f"Cannot write {out_dir}: {e.strerror}.") from None
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_replaceable(out_dir, name="output directory"):
    """The absolute path of `out_dir`, refused (one `DestinationError`) when
    replacing it would delete what the user did not ask to replace: an empty
    path (it means the current directory), the current directory or one of its
    parents, the filesystem root or the home directory; and an existing file.
    An export to "" once replaced a whole working tree this way. None or
    another non-path is a TypeError naming the argument `name`."""
    if not isinstance(out_dir, (str, os.PathLike)):  # None is not "empty": it is no path
        config_loader.check_path(out_dir, name)
    if not str(os.fspath(out_dir)).strip():
        raise DestinationError("The output directory is empty: name a directory to write "
                               "(an empty path would replace the current directory).")
    path = os.path.abspath(out_dir)
    cwd = os.path.abspath(os.getcwd())
    protected = {os.path.abspath(os.sep), os.path.abspath(os.path.expanduser("~"))}
    if path in protected or cwd == path or cwd.startswith(path.rstrip(os.sep) + os.sep):
        raise DestinationError(f"Refusing to replace {path}: it is the current directory, one "
                               "of its parents, the root or the home directory; write the "
                               "output into a new directory below it.")
    if os.path.lexists(path) and not os.path.isdir(path):
        # A directory swapped in for a file would leave the file under a hidden name.
        raise DestinationError(f"{path} is a file, not a directory: name a directory to write.")
    return path


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _remove_stale(parent, base):
    """Removes `.<base>.tmp-*` and `<base>.old` left by killed runs."""
    for name in os.listdir(parent):
        path = os.path.join(parent, name)
        stale = name.startswith(f".{base}.tmp-") or name == f"{base}.old"
        if stale and os.path.isdir(path) and os.path.getmtime(path) < _PROCESS_START:
            shutil.rmtree(path, ignore_errors=True)


def _exchange(a, b):
    """Swaps two existing paths in one atomic step (Linux `renameat2` with
    RENAME_EXCHANGE); False where the platform or file system lacks it."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def replace_dir(src, dst):
    """Moves directory `src` to `dst`. An existing `dst` is swapped with `src`
    in one atomic step where the OS can (readers always see the old or the
    new directory, never neither), then the old one is removed."""
    if not os.path.exists(dst):
        os.rename(src, dst)
    elif _exchange(src, dst):
        shutil.rmtree(src, ignore_errors=True)
    else:
        old = dst + ".old"
        shutil.rmtree(old, ignore_errors=True)
        os.rename(dst, old)
        os.rename(src, dst)
        shutil.rmtree(old, ignore_errors=True)


def cache_path(name):
    """The path of `name` in tfbert's cache, ~/.cache/tfbert (`XDG_CACHE_HOME`):
    what tfbert derives once and keeps between processes (the core op list of
    this TensorFlow build, the normalization tables of this Python's Unicode).
    Each file's name holds what it was derived from, so it is never stale; an
    unwritable cache only means no reuse."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "tfbert", name)


@contextlib.contextmanager
def atomic_file(path, suffix=""):
    """Yields a temporary path beside `path` to write; on success it is
    renamed onto `path` (atomic on one filesystem), on error removed.
    `suffix`: an ending the writer needs (Keras: `.weights.h5`)."""
    path = os.path.abspath(path)
    directory, base = os.path.split(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.tmp-", suffix=suffix, dir=directory)
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600: others could not read it
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_bytes(path, data):
    """Writes `data` to `path` atomically. A URL that `tf.io.gfile` writes
    (gs://...) goes to a temporary name beside it, then is renamed."""
    if "://" in path:
        import tensorflow as tf

        tmp = f"{path}.tmp-{os.getpid()}-{time.time_ns()}"
        try:
            with tf.io.gfile.GFile(tmp, "wb") as f:
                f.write(data)
            tf.io.gfile.rename(tmp, path, overwrite=True)
        finally:
            if tf.io.gfile.exists(tmp):
                tf.io.gfile.remove(tmp)
        return
    with atomic_file(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)


def write_text(path, text):
    """Writes `text` (UTF-8) to `path` atomically."""
    write_bytes(path, text.encode("utf-8"))


def write_json(path, value, **dump_args):
    """Writes `value` as indented JSON to `path` atomically."""
    write_text(path, json.dumps(value, indent=2, **dump_args))
