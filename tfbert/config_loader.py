"""One config path for scripts: dataclass <- YAML <- absl flag overrides.

A script declares its settings as a (possibly nested) dataclass, loads a YAML
file onto it and applies `--set key=value` style overrides. Every value is
checked here, in one place, before a model is built: unknown keys, values of
the wrong type (from the field's annotation) and values out of range (from
the field's `positive`/`at_least`/`in_range`/`one_of` declaration) are errors
that name the key and where it came from (the YAML file, or the `--set`
flag). YAML syntax errors are one line with file, line and column.

Every config of tfbert (BertConfig, TrainConfig, the task configs, the
tools' configs) is such a dataclass: its `__post_init__` calls `validate(self)`
(the field declarations), then checks what spans several fields. A renamed
field keeps its old name for one release (`renamed`): Python keywords, YAML
keys and `--set` take it with a one-line FutureWarning naming the new key.

Example:
>>> @dataclasses.dataclass
... class Train:
...     epochs: int = at_least(1, 3)
...     learning_rate: float = positive(5e-5)
...     def __post_init__(self):
...         validate(self)
>>> load(Train, overrides={"learning_rate": 1}).learning_rate
1.0
>>> load(Train, overrides={"epochs": "lots"})
Traceback (most recent call last):
ValueError: --set epochs=lots: expected an integer, got 'lots'.
>>> Train(epochs=0)
Traceback (most recent call last):
ValueError: Train.epochs: must be >= 1, got 0.
"""

import dataclasses
import functools
import json
import math
import numbers
import os
import re
import sys
import typing
import warnings

import yaml


class _YamlLoader(yaml.SafeLoader):
    """SafeLoader that also reads `1e-5` as a float (YAML 1.2; PyYAML's
    YAML 1.1 rules need a dot, `1.0e-5`, and would give the string '1e-5')."""


_YamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def load_yaml(stream, source=None):
    """Parses YAML text or a file object (the one YAML reader of tfbert);
    a syntax error is a one-line `ValueError` with file, line and column."""
    try:
        return yaml.load(stream, Loader=_YamlLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = source or getattr(stream, "name", "YAML")
        if mark is not None:
            where += f":{mark.line + 1}:{mark.column + 1}"
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ValueError(f"{where}: YAML syntax error: {problem}.") from None


# === Field checks: declared on the dataclass, applied by `from_dict` and `validate` ===


def positive(default):
    """A dataclass field whose value must be > 0."""
    return dataclasses.field(default=default, metadata={"check": (lambda v: v > 0, "> 0")})


def at_least(low, default):
    """A dataclass field whose value must be >= `low`."""
    return dataclasses.field(default=default,
                             metadata={"check": (lambda v: v >= low, f">= {low}")})


def in_range(low, high, default, high_open=False):
    """A dataclass field in `[low, high]` (`[low, high)` with `high_open`)."""
    text = f"in [{low}, {high})" if high_open else f"in [{low}, {high}]"
    ok = (lambda v: low <= v < high) if high_open else (lambda v: low <= v <= high)
    return dataclasses.field(default=default, metadata={"check": (ok, text)})


def one_of(choices, default):
    """A dataclass field whose value must be one of `choices`."""
    return dataclasses.field(default=default, metadata={
        "check": (lambda v: v in choices, f"one of {list(choices)}")})


_TYPE_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def check_value(value, hint, field=None):
    """`value` converted to the annotation `hint` (int -> float, list ->
    tuple), or a `ValueError` message body saying what was expected."""
    origin = typing.get_origin(hint)
    if origin is typing.Union:
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return check_value(value, option, field)
            except ValueError as e:
                errors.append(str(e))
        raise ValueError(errors[0] if len(errors) == 1 else
                         f"expected one of {[getattr(o, '__name__', str(o)) for o in options]}, "
                         f"got {value!r}")
    if hint is bool:
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {value!r}")
    elif hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer, got {value!r}")
    elif hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected a number, got {value!r}")
        value = float(value)
        if not math.isfinite(value):  # .inf passes "> 0" (a budget that never ends)
            raise ValueError(f"expected a finite number, got {value!r}")
    elif hint is str:
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {value!r}")
    elif hint in (tuple, list) or origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"expected a list, got {value!r}")
        value = tuple(value) if (hint is tuple or origin is tuple) else list(value)
    elif hint is dict or origin is dict:
        if not isinstance(value, dict):
            raise ValueError(f"expected a mapping, got {value!r}")
    check = (field.metadata.get("check") if field is not None else None)
    if check is not None and value is not None and not check[0](value):
        raise ValueError(f"must be {check[1]}, got {value!r}")
    return value


def renamed(**old_to_new):
    """Class decorator of a config dataclass: `old=new` field names. The old
    name is still accepted (keyword, YAML key, `--set`) with a FutureWarning.
    `old=(new, convert)` when the old setting's values differ from the new
    one's: `convert(old value)` is the new value (e.g. a flag that became one
    of several choices). A new name may be dotted, `old="section.new"`,
    when a flat setting moved into a nested section (the value goes to key
    `new` of the mapping, or dataclass, at `section`).

    >>> @renamed(warmup="warmup_steps")
    ... @dataclasses.dataclass
    ... class Schedule:
    ...     warmup_steps: int = 0
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     Schedule(warmup=5).warmup_steps
    5
    >>> str(caught[0].message)
    'Schedule.warmup is deprecated: use Schedule.warmup_steps.'
    """
    def decorate(cls):
        names = {old: new[0] if isinstance(new, tuple) else new for old, new in old_to_new.items()}
        converts = {old: new[1] for old, new in old_to_new.items() if isinstance(new, tuple)}
        cls.renamed_keys = {**getattr(cls, "renamed_keys", {}), **names}
        cls.renamed_values = {**getattr(cls, "renamed_values", {}), **converts}
        init = cls.__init__

        def name(key):
            return f"{cls.__name__}.{key}"

        sections = {new.rpartition(".")[0] for new in names.values() if "." in new}

        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            kwargs = new_names(cls, kwargs, name, name)
            hints = typing.get_type_hints(cls) if sections & set(kwargs) else {}
            for section in sections & set(kwargs):  # a keyword moved into a section
                if isinstance(kwargs[section], dict) and dataclasses.is_dataclass(
                        hints.get(section)):
                    kwargs[section] = from_dict(hints[section], kwargs[section],
                                                source=name(section), prefix=f"{section}.")
            init(self, *args, **kwargs)

        cls.__init__ = __init__
        return cls
    return decorate


def new_names(cls, values, where, name, warn=True):
    """`values` with `cls`'s renamed keys under their new names, each old one
    announced; `where(key)`: where a key was written and its name there,
    `name(key)`: the name to write instead. A dotted new name
    (`section.key`) puts the value into that section (a mapping, made when
    absent, or a dataclass, replaced). `warn=False`: no announcement (a
    config tfbert stored itself under the old names)."""
    renames = getattr(cls, "renamed_keys", {})
    if not any(key in renames for key in values):
        return values
    out, moved, taken = {}, [], {}  # moved: (section, key, value) of dotted names
    for key, value in values.items():
        new = renames.get(key)
        if new is None:
            out[key] = value
            continue
        section, _, inner = new.rpartition(".")
        if new in taken:  # two old names of one setting
            raise ValueError(f"{where(taken[new])} and {where(key)} are one setting, "
                             f"{name(new)}; set {name(new)} only.")
        if new in values or (section and _sets(values.get(section), inner)):
            raise ValueError(f"{where(key)} and {name(new)} are one setting ({key} is its old "
                             f"name); set {name(new)} only.")
        taken[new] = key
        convert = getattr(cls, "renamed_values", {}).get(key)
        now = convert(value) if convert else value
        if section:
            moved.append((section, inner, now))
        else:
            out[new] = now
        meaning = f" ({key}={value!r} is {new}={now!r})" if convert else ""
        if warn:
            # FutureWarning, not DeprecationWarning: users of the scripts see it.
            warnings.warn(f"{where(key)} is deprecated: use {name(new)}{meaning}.",
                          FutureWarning, stacklevel=_outside_tfbert())
    for section, inner, value in moved:
        held = out.get(section)
        if dataclasses.is_dataclass(held) and not isinstance(held, type):
            out[section] = dataclasses.replace(held, **{inner: value})
        elif held is None or isinstance(held, dict):
            out[section] = {**(held or {}), inner: value}
        else:
            raise ValueError(f"{name(section)} must be a mapping, got {held!r}.")
    return out


def _sets(section, key):
    """Whether `section` (a mapping, or a dataclass: other than the default) sets `key`."""
    if isinstance(section, dict):
        return key in section
    if dataclasses.is_dataclass(section) and not isinstance(section, type):
        field = {f.name: f for f in dataclasses.fields(section)}.get(key)
        if field is None:
            return False
        default = (field.default_factory() if field.default_factory is not dataclasses.MISSING
                   else field.default)
        return getattr(section, key) != default
    return False


def _outside_tfbert():
    """The `stacklevel` of the caller's caller's first frame outside tfbert/
    (and generated code): the warning points at the user's line."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(2), 2
    while frame.f_back and (frame.f_code.co_filename.startswith((package, "<"))):
        frame, level = frame.f_back, level + 1
    return level


def renamed_keys(cls, prefix=""):
    """`{"old.dotted.key": "new.dotted.key"}` of `cls` and its nested config
    dataclasses (to read a config stored under the old names)."""
    keys = {f"{prefix}{old}": f"{prefix}{new}"
            for old, new in getattr(cls, "renamed_keys", {}).items()}
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints.get(field.name)):
            keys.update(renamed_keys(hints[field.name], f"{prefix}{field.name}."))
    return keys


def validate(obj):
    """Checks every field of dataclass `obj` (call it from `__post_init__`);
    errors name `Class.field`."""
    hints = typing.get_type_hints(type(obj))
    for field in dataclasses.fields(obj):
        hint = hints.get(field.name)
        if hint is None or dataclasses.is_dataclass(hint):
            continue
        try:
            value = check_value(getattr(obj, field.name), hint, field)
        except ValueError as e:
            raise ValueError(f"{type(obj).__name__}.{field.name}: {e}.") from None
        object.__setattr__(obj, field.name, value)


def from_dict(cls, values, source="config", overridden=(), prefix="", warn=True):
    """Builds dataclass `cls` from a mapping; nested dataclass fields recurse.
    Each value is checked against its annotation and declared range.

    `overridden`: dotted keys that came from `--set` (errors name the flag
    instead of the file); `prefix`: this mapping's key; `warn=False`: old
    names are taken without a FutureWarning (a config tfbert stored itself).
    """
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise TypeError(f"{source}: expected a mapping for {cls.__name__}, got {values!r}.")

    def written_at(name):
        key = f"{prefix}{name}"
        return f"--set {key}" if key in overridden else f"{source}: {name}"

    values = new_names(cls, values, written_at, lambda name: f"{prefix}{name}", warn=warn)
    overridden = set(overridden) | {f"{prefix}{new}" for old, new in
                                    getattr(cls, "renamed_keys", {}).items()
                                    if f"{prefix}{old}" in overridden}
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(f"{source}: unknown key(s) {unknown} for {cls.__name__}; "
                         f"valid keys are {sorted(fields)}.")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for name, value in values.items():
        hint = hints.get(name)
        key = f"{prefix}{name}"
        if dataclasses.is_dataclass(hint) and isinstance(value, dict):
            value = from_dict(hint, value, source=f"{source}:{name}", overridden=overridden,
                              prefix=f"{key}.", warn=warn)
        elif hint is not None and not dataclasses.is_dataclass(hint):
            try:
                value = check_value(value, hint, fields[name])
            except ValueError as e:
                where = (f"--set {key}={_flag_text(value)}" if key in overridden
                         else f"{source}: {name}")
                raise ValueError(f"{where}: {e}.") from None
        kwargs[name] = value
    try:
        return cls(**kwargs)
    except ValueError as e:  # a check across fields (`__post_init__`): name the file too
        if source.split(":")[0] == "config":  # no file: the values came from flags or code
            raise
        raise ValueError(f"{source}: {e}") from None


def _flag_text(value):
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("\n...").strip()


def load(cls, yaml_path=None, overrides=None):
    """`cls` from defaults, then the YAML file, then `overrides`
    (`{"a.b": value}` or nested dicts); later sources win."""
    values = {}
    if yaml_path:
        if not os.path.isfile(yaml_path):
            raise FileNotFoundError(f"Config file not found: {yaml_path}")
        with open(yaml_path, encoding="utf-8") as f:
            loaded = load_yaml(f, source=yaml_path)
        if loaded is not None and not isinstance(loaded, dict):
            raise ValueError(f"{yaml_path}: the top level must be a mapping.")
        values = loaded or {}
    for key, value in (overrides or {}).items():
        _set_dotted(values, key, value)
    return from_dict(cls, values, source=yaml_path or "config", overridden=set(overrides or ()))


def define_flags(cls, names=None):
    """An absl flag per field of `cls` (only `names`, when given), default
    None: a flag not given on the command line leaves the YAML's value."""
    from absl import flags

    define = {bool: flags.DEFINE_boolean, int: flags.DEFINE_integer,
              float: flags.DEFINE_float, str: flags.DEFINE_string}
    for field in dataclasses.fields(cls):
        if names is None or field.name in names:
            define[field.type](field.name, None,
                               f"{cls.__name__}.{field.name} (default {field.default!r}).")


def load_flags(cls, flag_values, names=None, keys=None):
    """`(config, overrides)`: `cls` from the `--config` YAML, then `--set`,
    then the flags `names` (default: one per field) given on the command line.
    `keys`: `{flag: dotted key}` for flags that set a field of a section
    (`batch_size` -> `train.batch_size`); any other flag sets the field it names."""
    overrides = parse_overrides(flag_values.set)
    for name in names or [f.name for f in dataclasses.fields(cls)]:
        value = getattr(flag_values, name)
        if value is not None:
            overrides[(keys or {}).get(name, name)] = value
    return load(cls, flag_values.config, overrides), overrides


def parse_overrides(items):
    """`["a.b=3", "name=x"]` -> `{"a.b": 3, "name": "x"}`; values parse as YAML."""
    overrides = {}
    for item in items or []:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ValueError(f"Override {item!r} must look like key=value.")
        overrides[key.strip()] = load_yaml(text, source=f"--set {item}")
    return overrides


def _set_dotted(values, key, value):
    parts = key.split(".")
    node = values
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ValueError(f"Override {key!r}: {part!r} is not a mapping.")
    node[parts[-1]] = value


# === Call arguments ===
# The same checks for the arguments of library calls (top_k, batch_size, margins, ...):
# one line naming the argument and what it takes, before NumPy, TensorFlow or FAISS
# meet the value. Bools, fractions and strings are not integers here.

def _expected(name, kind, low, high, allow_none, high_open=False, low_open=False):
    kind += " or None" if allow_none else ""
    if low is not None and high is not None:
        return (f"{name} must be in {'(' if low_open else '['}{low}, {high}"
                f"{')' if high_open else ']'} ({kind})")
    if low is not None:
        return f"{name} must be {'>' if low_open else '>='} {low} ({kind})"
    if high is not None:
        return f"{name} must be {'<' if high_open else '<='} {high} ({kind})"
    return f"{name} must be {kind}"


def check_int(value, name, low=None, high=None, allow_none=False):
    """`value` as an int for the argument `name`, or a one-line TypeError
    (not an integer) / ValueError (outside `[low, high]`).

    >>> check_int(2.5, "top_k", 1)
    Traceback (most recent call last):
    TypeError: top_k must be >= 1 (an integer), got 2.5.
    """
    if value is None and allow_none:
        return None
    expected = _expected(name, "an integer", low, high, allow_none)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{expected}, got {value!r:.40}.")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{expected}, got {int(value)}.")
    return int(value)


def check_number(value, name, low=None, high=None, allow_none=False, high_open=False,
                 low_open=False):
    """`value` as a finite float for the argument `name` (in `[low, high]`;
    `high_open` / `low_open` leave out that end), or a one-line TypeError / ValueError.

    >>> check_number(float("nan"), "absolute_margin", allow_none=True)
    Traceback (most recent call last):
    ValueError: absolute_margin must be a finite number or None, got nan.
    """
    if value is None and allow_none:
        return None
    expected = _expected(name, "a finite number", low, high, allow_none, high_open, low_open)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{expected}, got {value!r:.40}.")
    value = float(value)
    below = low is not None and (value <= low if low_open else value < low)
    above = high is not None and (value >= high if high_open else value > high)
    if not math.isfinite(value) or below or above:
        raise ValueError(f"{expected}, got {value!r}.")
    return value


def check_bool(value, name, allow_none=False):
    """`value` as a bool for the argument `name`, or a one-line TypeError
    ("yes", 1 and "false" are not booleans here: a truthy string would read as True)."""
    if value is None and allow_none:
        return None
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False{' or None' if allow_none else ''}, "
                        f"got {value!r:.40}.")
    return value


# === Paths and text files: one rule each for every file and directory argument ===

def check_path(value, name):
    """`value` (a str or `os.PathLike`) as a str path for the argument `name`,
    or a one-line TypeError (not a path) / ValueError (empty).

    >>> check_path(None, "--output_dir")
    Traceback (most recent call last):
    TypeError: --output_dir must be a path (a string), got None.
    """
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a path (a string), got {value!r:.40}.")
    if not value.strip():
        raise ValueError(f"{name} is empty: name a path.")
    return value


def check_file(value, name):
    """`value` as the path of an existing file, or one line naming `name`: not
    a path, no such file (FileNotFoundError), a directory (ValueError)."""
    path = check_path(value, name)
    if os.path.isdir(path):
        raise ValueError(f"{name}: {path} is a directory, not a file.")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{name}: no such file: {path}")
    return path


def check_dir_to_write(value, name):
    """`value` as a directory to write files into (made later when missing),
    or one line naming `name`: not a path, or an existing file. Checked
    before the work, so a long run does not fail at its last step."""
    path = check_path(value, name)
    if os.path.lexists(path) and not os.path.isdir(path):
        raise ValueError(f"{name}: {path} is a file, not a directory: name a directory to write.")
    return path


def check_file_to_write(value, name, suffix):
    """`value` as the path of a file to write, ending in `suffix`, or one line
    naming `name`: not a path, a directory, another extension (Keras' own
    message for that names `model.export`, not the path)."""
    path = check_path(value, name)
    if os.path.isdir(path):
        raise ValueError(f"{name}: {path} is a directory; name a {suffix} file to write.")
    if not path.endswith(suffix):
        raise ValueError(f"{name}: {path} does not end in {suffix}; name a {suffix} file to write.")
    return path


def read_json(path, name):
    """Parses the JSON file `path` (the argument or file `name`): a missing
    file, a directory, bytes that are not UTF-8 and a syntax error are one
    line naming the file."""
    path = check_file(path, name)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start}).") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON: {e}") from None


def read_json_object(path, name):
    """`read_json` of a file that must hold a JSON object (a config, a
    tokenizer file): anything else is one line naming the file."""
    value = read_json(path, name)
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(value).__name__}.")
    return value


def vocab_tokens(path):
    """The tokens of a `vocab.txt`, one a line (a trailing blank line is not
    a token): the one reader of vocabulary files. A missing file, a directory
    or bytes that are not UTF-8 are one line naming the file (and the line)."""
    if os.path.isdir(path):
        raise ValueError(f"Vocabulary file {path} is a directory, not a file.")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Vocabulary file not found: {path}")
    tokens = [line.rstrip("\r\n") for _, line in text_lines(path)]
    while tokens and not tokens[-1]:
        tokens.pop()
    return tokens


def text_lines(path):
    """Yields `(line number, line)` of a UTF-8 text file (a byte-order mark is
    skipped; lines keep their end). Bytes that are not UTF-8 are one ValueError
    naming the file and the line, not Python's bare UnicodeDecodeError."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            try:
                yield number, raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{path}, line {number}: not UTF-8 text ({e.reason} at byte "
                                 f"{e.start} of the line).") from None
