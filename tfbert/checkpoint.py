"""The tfbert checkpoint directory: the one hand-off format between
`convert`, `train` and `export`.

    <dir>/config.json        {"format": "tfbert-checkpoint", "version": 1,
                               "encoder": {BertConfig fields},
                               "lower_case": bool, "source": str,
                               "sentence": {pooling, normalize, max_seq_length,
                                            dense_units, dense_activation} (optional:
                                            SentenceEncoder settings),
                               "cross_encoder": {max_seq_length} (optional)}
    <dir>/model.safetensors  weights by name: "encoder/<encoder weight name>",
                             and optional heads "mlm/...", "nsp/...",
                             "sentence_dense/..." (SentenceEncoder dense layer),
                             "classifier/..." (CrossEncoder score head)
    <dir>/vocab.txt          WordPiece vocabulary, one token per line

Written to a temporary sibling directory and renamed into place, so a killed
writer never leaves a half checkpoint behind.
"""

import contextlib
import ctypes
import dataclasses
import errno
import json
import os
import shutil
import tempfile
import time

import numpy as np
import safetensors
import safetensors.numpy

from tfbert.config import BertConfig

FORMAT = "tfbert-checkpoint"
VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
VOCAB_FILE = "vocab.txt"


@dataclasses.dataclass
class Checkpoint:
    """A read checkpoint directory: config, tokenizer settings, weights."""

    path: str
    config: BertConfig
    lower_case: bool
    weights: dict
    source: str = ""
    sentence: dict = None  # SentenceEncoder settings, when the checkpoint has them
    cross_encoder: dict = None  # CrossEncoder settings (max_seq_length), when it has them

    @property
    def vocab_file(self):
        return os.path.join(self.path, VOCAB_FILE)

    @property
    def weights_path(self):
        return os.path.join(self.path, WEIGHTS_FILE)

    def encoder_weights(self):
        return self.prefixed_weights("encoder")

    def prefixed_weights(self, prefix):
        """`{name: array}` of the weights under `prefix/`, prefix stripped."""
        start = prefix + "/"
        return {k[len(start):]: v for k, v in self.weights.items() if k.startswith(start)}


def assign_weights(variables, weights, source, what):
    """Assigns `weights[name]` to every `variables[name]`, or assigns nothing:
    a missing, unexpected or mis-shaped weight is one ValueError naming them
    all, with both shapes (never a silent partial load)."""
    missing = sorted(set(variables) - set(weights))
    extra = sorted(set(weights) - set(variables))
    problems = []
    if missing:
        problems.append(f"missing weights {missing}")
    if extra:
        problems.append(f"unexpected weights {extra}")
    for name in sorted(set(variables) & set(weights)):
        want, got = tuple(variables[name].shape), tuple(np.shape(weights[name]))
        if want != got:
            problems.append(f"{name}: shape {got} in {source}, {what} expects {want}")
    if problems:
        raise ValueError(f"{source} does not match the {what}: " + "; ".join(problems))
    for name, variable in variables.items():
        variable.assign(np.asarray(weights[name], dtype=variable.dtype))


def save_checkpoint(out_dir, config, encoder_weights, vocab_file, lower_case,
                    head_weights=None, source="", sentence=None, cross_encoder=None):
    """Writes a checkpoint directory atomically.

    `encoder_weights`: `{name: array}` as `BertEncoder.get_named_weights()`.
    `head_weights`: optional `{"mlm": {...}, "nsp": {...}}`.
    `sentence`: optional `SentenceEncoder` settings (pooling, normalize, ...).
    `cross_encoder`: optional `CrossEncoder` settings (max_seq_length).
    """
    if not os.path.isfile(vocab_file):
        raise FileNotFoundError(f"Vocabulary file not found: {vocab_file}")
    tensors = {f"encoder/{k}": np.ascontiguousarray(v) for k, v in encoder_weights.items()}
    for head, weights in (head_weights or {}).items():
        tensors.update({f"{head}/{k}": np.ascontiguousarray(v) for k, v in weights.items()})
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "encoder": config.to_dict(),
        "lower_case": bool(lower_case),
        "source": source,
    }
    if sentence is not None:
        meta["sentence"] = dict(sentence)
    if cross_encoder is not None:
        meta["cross_encoder"] = dict(cross_encoder)
    with atomic_dir(out_dir) as tmp:
        with open(os.path.join(tmp, CONFIG_FILE), "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=2, sort_keys=True)
        safetensors.numpy.save_file(tensors, os.path.join(tmp, WEIGHTS_FILE))
        shutil.copyfile(vocab_file, os.path.join(tmp, VOCAB_FILE))
    return out_dir


class DestinationError(ValueError):
    """An output directory that cannot be written (permissions, full disk, read-only)."""


# Temporary directories of processes that started before this one and were
# killed are stale; those of a concurrent process are not touched.
_PROCESS_START = time.time()


@contextlib.contextmanager
def atomic_dir(out_dir):
    """Yields a temporary sibling of `out_dir` to write into; on success it
    replaces `out_dir` atomically, on error it is removed and `out_dir` is
    left as it was. The result gets the umask's normal directory mode (not
    the temporary directory's 0700), so e.g. a TF Serving process running as
    another user can read it. Stale temporaries of killed runs are removed.

    Example:
    >>> import tempfile
    >>> out = os.path.join(tempfile.mkdtemp(), "artifact")
    >>> with atomic_dir(out) as tmp:
    ...     open(os.path.join(tmp, "f.txt"), "w").close()
    >>> os.listdir(out)
    ['f.txt']
    """
    out_dir = os.path.abspath(out_dir)
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


def read_meta(path):
    """`(config.json path, its dict)` of a checkpoint directory; errors name the file."""
    if not os.path.isdir(path):
        raise FileNotFoundError(f"tfbert checkpoint directory not found: {path} (no {CONFIG_FILE})")
    config_path = os.path.join(path, CONFIG_FILE)
    if not os.path.isfile(config_path):
        raise FileNotFoundError(f"Not a tfbert checkpoint: {config_path} is missing.")
    try:
        with open(config_path, encoding="utf-8") as f:
            meta = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{config_path}: not valid JSON: {e}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        # E.g. a Hugging Face directory: its lower-casing would be guessed.
        raise ValueError(f"{config_path}: not a tfbert checkpoint config (no format={FORMAT!r}); "
                         "convert it first with tools/convert_checkpoint.py.")
    return config_path, meta


def read_checkpoint(path):
    """Reads and validates a checkpoint directory; errors name the bad file."""
    config_path, meta = read_meta(path)
    config = BertConfig.from_dict(meta.get("encoder"), source=config_path)
    for name in (WEIGHTS_FILE, VOCAB_FILE):
        if not os.path.isfile(os.path.join(path, name)):
            raise FileNotFoundError(f"tfbert checkpoint {path} has no {name}.")
    weights_path = os.path.join(path, WEIGHTS_FILE)
    try:
        weights = safetensors.numpy.load_file(weights_path)
    except Exception as e:  # safetensors raises its own error types
        raise ValueError(f"{weights_path}: cannot read safetensors file: {e}") from None
    return Checkpoint(
        path=path,
        config=config,
        lower_case=bool(meta.get("lower_case", True)),
        weights=weights,
        source=meta.get("source", ""),
        sentence=_sentence_section(meta.get("sentence"), config_path),
        cross_encoder=_sentence_section(meta.get("cross_encoder"), config_path, "cross_encoder"),
    )


def _sentence_section(section, config_path, name="sentence"):
    """The optional `sentence` (or `cross_encoder`) section, checked to be a JSON object."""
    if section is not None and not isinstance(section, dict):
        raise ValueError(f"{config_path}: {name!r} must be a JSON object, got {section!r}.")
    return section
