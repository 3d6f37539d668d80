"""Text files named by comma-separated paths or globs: the corpora that the vocabulary
tools (`vocab_extension`) and the pretraining data (`tfbert.data.pretraining`) read.

Example:
>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> for name in ("b.txt", "a.txt"):
...     _ = (d / name).write_text("text")
>>> [pathlib.Path(p).name for p in expand_files(f"{d}/*.txt")]
['a.txt', 'b.txt']
>>> expand_files(f"{d}/none*.txt", what="corpus file")
Traceback (most recent call last):
FileNotFoundError: No corpus file matches '.../none*.txt'.
"""

import glob
import os


def expand_files(patterns, what="file"):
    """Comma-separated strings or lists of paths / globs -> sorted paths."""
    if isinstance(patterns, str):
        patterns = [p for p in patterns.split(",") if p.strip()]
    files = []
    for pattern in patterns:
        pattern = os.path.expanduser(pattern.strip())
        matched = sorted(glob.glob(pattern))
        if not matched:
            raise FileNotFoundError(f"No {what} matches {pattern!r}.")
        files.extend(m for m in matched if os.path.isfile(m))
    if not files:
        raise FileNotFoundError(f"No {what} given.")
    return files
