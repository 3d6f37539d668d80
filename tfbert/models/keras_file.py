"""`load_model(path)`: `keras.saving.load_model` for tfbert's `.keras` files,
with the file checked first.

Keras answers a truncated `.keras` file with "File not found" (it is not a zip
file, so Keras looks for other formats), and a damaged one with zipfile's
"Bad CRC-32 for file 'model.weights.h5'" halfway through building the model.
Here each is one line naming the file and the problem, before Keras reads it.
Importing this module registers every strings-in model class, so the file
loads whichever model wrote it.
"""

import zipfile

import keras

from tfbert import config_loader
from tfbert.models import (cross_encoder, question_answerer, sentence_encoder,  # noqa: F401
                           text_classifier, token_classifier)

# What every model's `.keras` archive holds (Keras 3's format).
MEMBERS = ("config.json", "model.weights.h5")


def check_keras_file(path):
    """`path` as a str, or one line naming it: not a path, missing, a
    directory, or not a readable `.keras` archive (truncated or corrupt: no
    zip index, a member whose CRC-32 fails, a member missing)."""
    path = config_loader.check_file(path, ".keras file")

    def unreadable(reason):
        return ValueError(f"{path} is not a readable .keras archive (truncated or corrupt: "
                          f"{reason}).")

    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            damaged = archive.testzip()  # reads every member: CRC-32 and lengths
    except (zipfile.BadZipFile, EOFError, OSError) as e:
        raise unreadable(str(e).rstrip(".") or type(e).__name__) from None
    if damaged is not None:
        raise unreadable(f"bad CRC-32 for {damaged}")
    missing = [name for name in MEMBERS if name not in names]
    if missing:
        raise unreadable(f"no {missing[0]} in it")
    return path


def load_model(path, **kwargs):
    """The model saved at `path` (`model.save("m.keras")`), as
    `keras.saving.load_model(path, **kwargs)` gives it, after `check_keras_file`.

    >>> load_model("missing.keras")
    Traceback (most recent call last):
    FileNotFoundError: .keras file: no such file: missing.keras
    """
    return keras.saving.load_model(check_keras_file(path), **kwargs)
