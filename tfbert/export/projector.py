"""Embeddings for TensorBoard's projector: look at the space instead of reading numbers.

`write_projector(log_dir, embeddings, metadata)` writes

    <log_dir>/<name>_tensors.tsv      one embedding per line, tab-separated
    <log_dir>/<name>_metadata.tsv     one label per line (a header row when
                                      there are several label columns)
    <log_dir>/projector_config.pbtxt  points TensorBoard at both files

then `tensorboard --logdir <log_dir>` shows them under PROJECTOR (PCA, t-SNE,
UMAP, nearest neighbours by cosine). The same files load in the standalone
https://projector.tensorflow.org ("Load" the two TSVs).

Example:
>>> import tempfile
>>> out = write_projector(tempfile.mkdtemp(), np.eye(3, 2), ["a", "b", "c"])
>>> print(open(out + "/projector_config.pbtxt").read().splitlines()[2])
  tensor_path: "embedding_tensors.tsv"
"""

import os

import numpy as np

CONFIG_FILE = "projector_config.pbtxt"


def _clean(value):
    # TSV cells: a tab or newline inside a label would shift every later row.
    return " ".join(str(value).split())


def write_projector(log_dir, embeddings, metadata=None, name="embedding"):
    """Writes the projector files (see module doc); returns `log_dir`.

    `metadata`: None, a list of labels (one per row), or a dict of
    `{column: list}` for several label columns (e.g. text and source).
    Another embedding written to the same `log_dir` under a different
    `name` is added to the config, not replaced.
    """
    emb = np.asarray(embeddings, np.float32)
    if emb.ndim != 2 or len(emb) == 0:
        raise ValueError(f"embeddings must be a non-empty [n, dim] array, got shape {emb.shape}.")
    if not np.isfinite(emb).all():
        raise ValueError("embeddings contain NaN or inf.")
    if name != _clean(name) or not name or "/" in name or '"' in name:
        raise ValueError(f"name must be a plain word, got {name!r}.")
    columns = None
    if metadata is not None:
        columns = dict(metadata) if isinstance(metadata, dict) else {"label": list(metadata)}
        for column, values in columns.items():
            if len(values) != len(emb):
                raise ValueError(f"metadata column {column!r} has {len(values)} rows, "
                                 f"embeddings have {len(emb)}.")
    os.makedirs(log_dir, exist_ok=True)
    tensor_file, metadata_file = f"{name}_tensors.tsv", f"{name}_metadata.tsv"
    np.savetxt(os.path.join(log_dir, tensor_file), emb, delimiter="\t", fmt="%.6g")
    entry = [f'  tensor_name: "{name}"', f'  tensor_path: "{tensor_file}"',
             f"  tensor_shape: {emb.shape[0]}", f"  tensor_shape: {emb.shape[1]}"]
    if columns is not None:
        with open(os.path.join(log_dir, metadata_file), "w", encoding="utf-8") as f:
            if len(columns) > 1:  # the projector reads a header only with 2+ columns
                f.write("\t".join(_clean(c) for c in columns) + "\n")
            for row in zip(*columns.values()):
                f.write("\t".join(_clean(v) for v in row) + "\n")
        entry.append(f'  metadata_path: "{metadata_file}"')
    block = "embeddings {\n" + "\n".join(entry) + "\n}\n"
    # Keep the other embeddings already in the config (one block each).
    config_path = os.path.join(log_dir, CONFIG_FILE)
    blocks = []
    if os.path.isfile(config_path):
        text = open(config_path, encoding="utf-8").read()
        blocks = [b for b in ("embeddings {" + part for part in text.split("embeddings {")[1:])
                  if f'tensor_name: "{name}"' not in b]
    with open(config_path, "w", encoding="utf-8") as f:
        f.write(block + "".join(b if b.endswith("\n") else b + "\n" for b in blocks))
    return log_dir
