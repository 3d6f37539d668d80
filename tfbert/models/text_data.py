"""Raw strings to `tf.data`: what a strings-in Keras model (`TextClassifier`)
does with the `x`, `y` and `sample_weight` of `fit`, `evaluate` and `predict`
before Keras sees them.

`x` is a list of str, a NumPy string array, a pandas Series (anything with
`to_numpy()`), a tuple of two such columns for sentence pairs, or a
`tf.data.Dataset` of strings, `(strings, targets)` or `(strings, targets,
weights)`, batched or not. Tokenization runs in the dataset's `map` (graph
ops, `AUTOTUNE`), never in a Python loop over the examples.

Example:
>>> [c.tolist() for c in text_columns(["a b", "c"])]
[['a b', 'c']]
>>> [c.tolist() for c in text_columns((["q1", "q2"], np.array(["p1", "p2"])))]
[['q1', 'q2'], ['p1', 'p2']]
>>> text_columns(np.array([[2, 7, 3]]))
Traceback (most recent call last):
TypeError: x holds int64 values, not strings: this model takes raw text (ids go to model(inputs) or to BertClassifier).
"""

import contextlib

import numpy as np
import tensorflow as tf

from tfbert.config_loader import check_int
from tfbert.encoder import INPUT_NAMES
from tfbert.text.raw_texts import IDS_HINT, text_column


def check_label_list(label_list, unit="label"):
    """`label_list` as a list of str names, or one clear line: a string (its
    letters would become the labels), not a list, a name given twice."""
    if isinstance(label_list, (str, bytes)):
        raise TypeError(f"label_list must be a list of {unit} names, got the string "
                        f"{label_list!r:.40}.")
    if isinstance(label_list, (set, frozenset, dict)) or not hasattr(label_list, "__iter__"):
        raise TypeError(f"label_list must be a list of {unit} names (in class-id order), got "
                        f"{type(label_list).__name__}.")
    label_list = [str(label) for label in label_list]
    if len(set(label_list)) != len(label_list):
        raise ValueError(f"label_list names a {unit} twice: {label_list}.")
    return label_list


def is_pair(x):
    """True for a tuple/list of two text columns (not of two texts)."""
    return (isinstance(x, (tuple, list)) and len(x) == 2
            and all(not isinstance(c, (str, bytes)) and hasattr(c, "__len__") for c in x))


def is_one_pair(x):
    """True for a tuple of two strings: one pair, or two texts?"""
    return isinstance(x, tuple) and len(x) == 2 and all(isinstance(c, (str, bytes)) for c in x)


def text_columns(x, what="x"):
    """A tuple of one or two NumPy object arrays of str (see module doc); one
    clear error for anything else (ids, None, nested lists, columns of unequal length)."""
    if x is None:
        raise ValueError(f"{what} is None: pass the texts (a list of str, a NumPy string "
                         "array, a pandas Series, or a tuple of two for pairs).")
    if is_one_pair(x):  # two texts, or one pair? A pair model takes a tuple of two columns.
        raise ValueError(f"{what} is a tuple of two strings: pass one pair as ([text], "
                         "[text_b]), or two texts as a list.")
    if is_pair(x):
        columns = (text_column(x[0], f"{what}[0]"), text_column(x[1], f"{what}[1]"))
        if len(columns[0]) != len(columns[1]):
            raise ValueError(f"{what}: the two text columns differ in length "
                             f"({len(columns[0])} and {len(columns[1])}).")
        return columns
    return (text_column(x, what),)


def holds_ids(x):
    """True for what the model itself takes: the dict of the three id tensors,
    or a dataset whose (first) element is one. Such input skips the preprocessor."""
    spec = x.element_spec if isinstance(x, tf.data.Dataset) else x
    if isinstance(spec, tuple) and spec:
        spec = spec[0]
    return isinstance(spec, dict) and set(spec) == set(INPUT_NAMES)


def _string_spec(spec):
    """How many text columns a dataset's text element has (1 or 2), and its rank."""
    specs = tuple(spec) if isinstance(spec, (tuple, list)) else (spec,)
    if len(specs) not in (1, 2) or not all(isinstance(s, tf.TensorSpec) for s in specs):
        raise TypeError(f"x: the dataset's texts must be a string tensor or a tuple of two, "
                        f"got {spec}.")
    for s in specs:
        if s.dtype != tf.string:
            raise TypeError(f"x: the dataset yields {s.dtype.name} texts, not strings: "
                            f"{IDS_HINT}.")
    ranks = {s.shape.rank for s in specs}
    if ranks - {0, 1}:
        raise ValueError(f"x: the dataset's texts must be scalars or [batch] vectors, got "
                         f"shapes {[s.shape for s in specs]}.")
    return len(specs), max(ranks)


def dataset_columns(dataset):
    """`(number of text columns, has targets, batched)` of a `tf.data.Dataset`
    of texts, `(texts, targets)` or `(texts, targets, weights)`."""
    spec = dataset.element_spec
    if isinstance(spec, tuple) and len(spec) in (2, 3) and not all(
            isinstance(s, tf.TensorSpec) and s.dtype == tf.string for s in spec):
        columns, rank = _string_spec(spec[0])
        return columns, True, rank == 1
    columns, rank = _string_spec(spec)
    return columns, False, rank == 1


def text_dataset(columns, targets=None, weights=None):
    """Examples `(texts tuple[, targets[, weights]])` (or the texts tuple
    alone) from NumPy columns."""
    parts = [tuple(tf.constant(list(c), tf.string) for c in columns)]
    if targets is not None:
        parts.append(targets)
        if weights is not None:
            parts.append(weights)
    return tf.data.Dataset.from_tensor_slices(tuple(parts) if len(parts) > 1 else parts[0])


def check_batch_size(batch_size, default):
    """`batch_size` as an int >= 1 (`default` for None), or one clear error."""
    batch_size = check_int(batch_size, "batch_size", 1, allow_none=True)
    return default if batch_size is None else batch_size


def check_weights(weights, n):
    """`sample_weight` as float32 `[n]`, or one clear error."""
    if weights is None:
        return None
    try:
        weights = np.asarray(weights, np.float32)
    except (TypeError, ValueError):  # NumPy's message names neither the argument nor the item
        raise TypeError(f"sample_weight must be numbers, one weight per text; got "
                        f"{weights!r:.60}.") from None
    if weights.shape != (n,):
        raise ValueError(f"sample_weight has shape {weights.shape}; expected ({n},), one "
                         "weight per text.")
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise ValueError("sample_weight must be finite and >= 0.")
    return weights


@contextlib.contextmanager
def dataset_check_errors(lines):
    """A user's `tf.data.Dataset` is checked in the graph (it is not read
    ahead), so a bad element fails inside TensorFlow several lines deep:
    `lines` maps each check's message to the one line raised instead."""
    try:
        yield
    except tf.errors.InvalidArgumentError as error:
        line = next((v for k, v in lines.items() if k in (error.message or "")), None)
        if line is None:
            raise
        raise ValueError(line) from None
