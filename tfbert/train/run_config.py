"""One run per `model_dir`: the resolved config is stored there, and a rerun
with a different config is refused instead of silently resuming (or
re-exporting) the old run's weights.

    <model_dir>/<name>   the resolved config of the run (JSON)

Settings that do not change what is trained (logging, where exports go, the
distribution strategy: a run may resume under another one) are ignored.

Example:
>>> import tempfile
>>> run_dir = tempfile.mkdtemp()
>>> claim_model_dir(run_dir, {"train": {"learning_rate": 5e-5}, "verbose": 2})
>>> claim_model_dir(run_dir, {"train": {"learning_rate": 5e-5}, "verbose": 0})  # same run
>>> claim_model_dir(run_dir, {"train": {"learning_rate": 1e-4}})
Traceback (most recent call last):
ValueError: ...holds a run with another config (train.learning_rate: 5e-05 -> 0.0001)...
"""

import json
import os
import shutil

from tfbert.atomic import write_json

RUN_CONFIG = "run_config.json"
RUNTIME_KEYS = frozenset({"verbose", "tensorboard", "model_dir", "export_dir", "overwrite",
                          "export_jit_compile", "distribution_strategy", "num_devices", "tpu"})


def flatten(config, prefix=""):
    """`{"a": {"b": 1}}` -> `{"a.b": 1}`."""
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def claim_model_dir(model_dir, config, overwrite=False, name=RUN_CONFIG, write=True,
                    renamed=None, upgrade=None):
    """Checks `config` (a JSON-able dict) against the one stored in
    `model_dir`; stores it for a new run. `overwrite=True` empties
    `model_dir` first (start fresh). `write=False` (multi-worker non-chief):
    only check. `renamed`: `{old dotted key: new}` of keys a stored config
    may hold under an old name (`tfbert.config_loader.renamed_keys`);
    `upgrade(stored dict)`: the stored config under today's names where an
    old setting's values differ from the new one's."""
    path = os.path.join(model_dir, name)
    if overwrite and os.path.isdir(model_dir) and write:
        shutil.rmtree(model_dir)
    if os.path.isfile(path) and not overwrite:
        with open(path, encoding="utf-8") as f:
            try:
                stored = json.load(f)
            except json.JSONDecodeError:
                stored = None
        if stored is not None:
            stored = upgrade(stored) if upgrade else stored
            stored = {(renamed or {}).get(k, k): v for k, v in flatten(stored).items()}
            changed = _changes(stored, flatten(json.loads(json.dumps(config))))
            if changed:
                shown = ", ".join(changed[:4]) + (", ..." if len(changed) > 4 else "")
                raise ValueError(
                    f"{model_dir} holds a run with another config ({shown}). Rerun with "
                    "--overwrite to start fresh, use a new --model_dir, or rerun the same "
                    "config to resume.")
            return
    if write:
        write_json(path, config, sort_keys=True)


def _changes(old, new):
    keys = sorted((set(old) | set(new)) - {k for k in set(old) | set(new)
                                           if k.split(".")[-1] in RUNTIME_KEYS})
    return [f"{k}: {old.get(k, '(unset)')} -> {new.get(k, '(unset)')}"
            for k in keys if old.get(k) != new.get(k)]
