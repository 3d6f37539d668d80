"""Raw texts as Python hands them to tfbert: one checker for every public
entry that takes texts (the strings-in models' `fit` / `predict`, the tasks'
`predict`, `SentenceEncoder.encode`, `OpenVINOModel`), so each rule reads the
same everywhere, and a bad text is one line naming its argument and index
before TensorFlow, NumPy or OpenVINO sees it.

Example:
>>> text_column(["a", b"caf\\xc3\\xa9"], "x").tolist()
['a', 'café']
>>> text_column(["a", None], "x")
Traceback (most recent call last):
TypeError: x[1] is NoneType (None), not str.
"""

import numpy as np

IDS_HINT = "this model takes raw text (ids go to model(inputs) or to BertClassifier)"


def text_column(values, what, allow_empty=False):
    """One column of texts as a NumPy object array of str, or one clear error.
    Bytes are decoded as UTF-8. `allow_empty`: an empty column is no error
    (a served batch of none)."""
    if values is None:
        raise TypeError(f"{what} is None, not a list of texts.")
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{what} is one string; pass a list of texts, e.g. [{values!r:.40}].")
    if isinstance(values, dict):
        raise TypeError(f"{what} is a dict ({', '.join(map(str, values))}): this model takes "
                        "raw text, not the three id tensors; call the model on ids instead.")
    if isinstance(values, (set, frozenset)):  # the answers would come back in another order
        raise TypeError(f"{what} is a set, whose order is arbitrary: pass a list, so each "
                        "answer lines up with its text.")
    if hasattr(values, "to_numpy"):  # a pandas Series (or Index)
        values = values.to_numpy()
    elif hasattr(values, "numpy"):  # a tf.Tensor
        values = values.numpy()
    if isinstance(values, np.ndarray):
        if values.dtype.kind in "iufb":
            raise TypeError(f"{what} holds {values.dtype} values, not strings: {IDS_HINT}.")
        if values.ndim != 1:
            raise ValueError(f"{what} must be one text per example (rank 1), got shape "
                             f"{values.shape}.")
        values = values.tolist()
    elif not hasattr(values, "__iter__"):
        raise TypeError(f"{what} is {type(values).__name__}, not a list of texts.")
    values = list(values)
    if not values and not allow_empty:
        raise ValueError(f"{what} is empty: no texts.")
    out = np.empty(len(values), dtype=object)
    for i, text in enumerate(values):
        if isinstance(text, (list, tuple, np.ndarray)):
            raise ValueError(f"{what} must be one text per example (rank 1); {what}[{i}] is a "
                             f"{type(text).__name__}.")
        out[i] = check_text(text, f"{what}[{i}]")
    return out


def check_text(text, what):
    """One text as a str (UTF-8 bytes decoded), or one clear line naming `what`."""
    if isinstance(text, bytes):
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"{what} is bytes that are not UTF-8 text ({error.reason} "
                             f"at byte {error.start}): decode it first.") from None
    if isinstance(text, (int, np.integer)) and not isinstance(text, bool):
        raise TypeError(f"{what} is an int ({text}), not a string: {IDS_HINT}.")
    if not isinstance(text, str):
        raise TypeError(f"{what} is {type(text).__name__} ({text!r:.40}), not str.")
    return str(text)  # np.str_ -> str
