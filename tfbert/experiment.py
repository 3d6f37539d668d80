"""One config path for scripts: dataclass <- YAML <- absl flag overrides.

A script declares its settings as a (possibly nested) dataclass, loads a YAML
file onto it and applies `--set key=value` style overrides; unknown keys are
errors that name the key and the file.
"""

import dataclasses
import os
import re
import typing

import yaml


class _YamlLoader(yaml.SafeLoader):
    """SafeLoader that also reads `1e-5` as a float (YAML 1.2; PyYAML's
    YAML 1.1 rules need a dot, `1.0e-5`, and would give the string '1e-5')."""


_YamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def load_yaml(stream):
    """Parses YAML text or a file object (the one YAML reader of tfbert)."""
    return yaml.load(stream, Loader=_YamlLoader)


def from_dict(cls, values, source="config"):
    """Builds dataclass `cls` from a mapping; nested dataclass fields recurse.

    Classes with their own `from_dict(values, source=...)` (e.g. BertConfig)
    build themselves.
    """
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise TypeError(f"{source}: expected a mapping for {cls.__name__}, got {values!r}.")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(f"{source}: unknown key(s) {unknown} for {cls.__name__}; "
                         f"valid keys are {sorted(fields)}.")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for name, value in values.items():
        hint = hints.get(name)
        if dataclasses.is_dataclass(hint) and isinstance(value, dict):
            builder = getattr(hint, "from_dict", None)
            value = (builder(value, source=f"{source}:{name}") if builder
                     else from_dict(hint, value, source=f"{source}:{name}"))
        kwargs[name] = value
    return cls(**kwargs)


def load(cls, yaml_path=None, overrides=None):
    """`cls` from defaults, then the YAML file, then `overrides`
    (`{"a.b": value}` or nested dicts); later sources win."""
    values = {}
    if yaml_path:
        if not os.path.isfile(yaml_path):
            raise FileNotFoundError(f"Config file not found: {yaml_path}")
        with open(yaml_path, encoding="utf-8") as f:
            loaded = load_yaml(f)
        if loaded is not None and not isinstance(loaded, dict):
            raise ValueError(f"{yaml_path}: the top level must be a mapping.")
        values = loaded or {}
    for key, value in (overrides or {}).items():
        _set_dotted(values, key, value)
    return from_dict(cls, values, source=yaml_path or "config")


def parse_overrides(items):
    """`["a.b=3", "name=x"]` -> `{"a.b": 3, "name": "x"}`; values parse as YAML."""
    overrides = {}
    for item in items or []:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ValueError(f"Override {item!r} must look like key=value.")
        overrides[key.strip()] = load_yaml(text)
    return overrides


def to_dict(obj):
    return dataclasses.asdict(obj)


def _set_dotted(values, key, value):
    parts = key.split(".")
    node = values
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ValueError(f"Override {key!r}: {part!r} is not a mapping.")
    node[parts[-1]] = value
