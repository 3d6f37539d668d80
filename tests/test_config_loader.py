import dataclasses
import json
import warnings

import pytest

from tfbert import BertConfig, config_loader


@dataclasses.dataclass
class Train:
    learning_rate: float = 5e-5
    epochs: int = 3


@dataclasses.dataclass
class Experiment:
    name: str = "run"
    encoder: BertConfig = dataclasses.field(default_factory=BertConfig)
    train: Train = dataclasses.field(default_factory=Train)


def test_yaml_then_overrides(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("name: demo\nencoder: {num_layers: 2, hidden_size: 128, num_heads: 2}\n"
                    "train: {epochs: 4}\n")
    overrides = config_loader.parse_overrides(["train.learning_rate=2e-5", "encoder.num_layers=3"])
    exp = config_loader.load(Experiment, str(path), overrides)
    assert exp.name == "demo"
    assert exp.encoder.num_layers == 3 and exp.encoder.hidden_size == 128
    assert exp.train == Train(learning_rate=2e-5, epochs=4)


def test_unknown_keys_are_errors(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("train: {epoch: 4}\n")
    with pytest.raises(ValueError, match=r"exp\.yaml:train.*unknown key.*epoch"):
        config_loader.load(Experiment, str(path))
    path.write_text("encoder: {hidden: 4}\n")
    with pytest.raises(ValueError, match=r"exp\.yaml:encoder: unknown key\(s\) \['hidden'\] for "
                                         r"BertConfig; valid keys are \['attention_dropout_rate'"):
        config_loader.load(Experiment, str(path))


def test_bad_override_syntax():
    with pytest.raises(ValueError, match="key=value"):
        config_loader.parse_overrides(["epochs"])


def test_exponent_floats_without_a_dot_are_floats(tmp_path):
    # PyYAML's YAML 1.1 rules would read these as strings.
    path = tmp_path / "exp.yaml"
    path.write_text("train: {learning_rate: 3e-5}\nencoder: {layer_norm_eps: 1e-12}\n")
    exp = config_loader.load(Experiment, str(path))
    assert exp.train.learning_rate == 3e-5
    assert exp.encoder.layer_norm_eps == 1e-12
    assert config_loader.load_yaml("x: 1e5x") == {"x": "1e5x"}


# === Values checked while loading, naming the key and where it came from ===

@dataclasses.dataclass
class Checked:
    batch_size: int = config_loader.at_least(1, 32)
    learning_rate: float = config_loader.positive(5e-5)
    warmup: float = config_loader.in_range(0.0, 1.0, 0.1)
    dropout: float = config_loader.in_range(0.0, 1.0, 0.1, high_open=True)
    layers: tuple = (-1,)
    name: str = "run"

    def __post_init__(self):
        config_loader.validate(self)


@dataclasses.dataclass
class Outer:
    train: Checked = dataclasses.field(default_factory=Checked)


@pytest.mark.parametrize("yaml_text, message", [
    ("train: {batch_size: lots}", r"exp\.yaml:train: batch_size: expected an integer, got 'lots'\.$"),
    ("train: {learning_rate: fast}", r"exp\.yaml:train: learning_rate: expected a number, got 'fast'"),
    ("train: {learning_rate: -1}", r"learning_rate: must be > 0, got -1\.0"),
    ("train: {warmup: 1.5}", r"warmup: must be in \[0\.0, 1\.0\], got 1\.5"),
    ("train: {dropout: 1}", r"dropout: must be in \[0\.0, 1\.0\), got 1\.0"),
    ("train: {batch_size: true}", r"batch_size: expected an integer, got True"),
    ("train: {batch_size: 0}", r"batch_size: must be >= 1, got 0"),
    ("train: {layers: 3}", r"layers: expected a list, got 3"),
    ("train: {name: [a]}", r"name: expected a string"),
])
def test_bad_values_name_file_and_key(tmp_path, yaml_text, message):
    path = tmp_path / "exp.yaml"
    path.write_text(yaml_text + "\n")
    with pytest.raises(ValueError, match=message):
        config_loader.load(Outer, str(path))


def test_bad_override_names_the_flag(tmp_path):
    overrides = config_loader.parse_overrides(["train.batch_size=lots"])
    with pytest.raises(ValueError, match=r"^--set train\.batch_size=lots: expected an integer"):
        config_loader.load(Outer, None, overrides)


def test_good_values_are_converted():
    cfg = config_loader.load(Outer, None, {"train.learning_rate": 1, "train.layers": [-2, -1]})
    assert cfg.train.learning_rate == 1.0 and isinstance(cfg.train.learning_rate, float)
    assert cfg.train.layers == (-2, -1)


def test_python_construction_is_checked_too():
    with pytest.raises(ValueError, match=r"^Checked\.warmup: must be in \[0\.0, 1\.0\], got -0\.5\.$"):
        Checked(warmup=-0.5)


@pytest.mark.parametrize("text, where", [
    ("train:\n  batch_size: [1, 2\n", r"exp\.yaml:3:1: YAML syntax error"),
    ("train: {a: 1\n", r"exp\.yaml:2:1: YAML syntax error"),
    ("a: b: c\n", r"exp\.yaml:1:5: YAML syntax error: mapping values are not allowed here\.$"),
])
def test_yaml_syntax_errors_are_one_line(tmp_path, text, where):
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=where) as info:
        config_loader.load(Outer, str(path))
    assert "\n" not in str(info.value)


# === Renamed keys: the old name still works, with a one-line warning ===

@config_loader.renamed(warmup_fraction="warmup_ratio")
@dataclasses.dataclass
class Renamed:
    warmup_ratio: float = config_loader.in_range(0.0, 1.0, 0.1)
    epochs: int = 3

    def __post_init__(self):
        config_loader.validate(self)


@dataclasses.dataclass
class OuterRenamed:
    train: Renamed = dataclasses.field(default_factory=Renamed)


def test_old_name_in_python_yaml_and_set_warns_naming_the_new_key(tmp_path):
    with pytest.warns(FutureWarning, match=r"^Renamed\.warmup_fraction is deprecated: use "
                                           r"Renamed\.warmup_ratio\.$"):
        assert Renamed(warmup_fraction=0.2) == Renamed(warmup_ratio=0.2)
    path = tmp_path / "exp.yaml"
    path.write_text("train: {warmup_fraction: 0.3}\n")
    with pytest.warns(FutureWarning, match=r"exp\.yaml:train: warmup_fraction is deprecated: "
                                           r"use train\.warmup_ratio\.$"):
        assert config_loader.load(OuterRenamed, str(path)).train.warmup_ratio == 0.3
    overrides = config_loader.parse_overrides(["train.warmup_fraction=0.4"])
    with pytest.warns(FutureWarning, match=r"^--set train\.warmup_fraction is deprecated: use "
                                           r"train\.warmup_ratio\.$"):
        assert config_loader.load(OuterRenamed, str(path), overrides).train.warmup_ratio == 0.4


def test_old_name_is_checked_like_the_new_one_and_not_both():
    overrides = config_loader.parse_overrides(["train.warmup_fraction=2"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(ValueError, match=r"^--set train\.warmup_ratio=2: must be in "
                                             r"\[0\.0, 1\.0\], got 2\.0\.$"):
            config_loader.load(OuterRenamed, None, overrides)
    with pytest.raises(ValueError, match=r"^Renamed\.warmup_fraction and Renamed\.warmup_ratio are "
                                         r"one setting \(warmup_fraction is its old name\); set "
                                         r"Renamed\.warmup_ratio only\.$"):
        Renamed(warmup_fraction=0.2, warmup_ratio=0.3)


def test_renamed_keys_of_nested_configs():
    assert config_loader.renamed_keys(OuterRenamed) == {"train.warmup_fraction": "train.warmup_ratio"}


# A flat key that moved into a section: a dotted new name.
@config_loader.renamed(epochs="train.epochs", warmup="train.warmup_ratio",
                       ratio="train.warmup_ratio")
@dataclasses.dataclass
class Moved:
    train: Renamed = dataclasses.field(default_factory=Renamed)
    name: str = ""


def test_a_key_moved_into_a_section(tmp_path):
    path = tmp_path / "flat.yaml"
    path.write_text("epochs: 5\nname: x\n")
    with pytest.warns(FutureWarning, match=r"flat\.yaml: epochs is deprecated: use "
                                           r"train\.epochs\.$"):
        assert config_loader.load(Moved, str(path)) == Moved(train=Renamed(epochs=5), name="x")
    # Beside the section's other keys; --set names the flag.
    overrides = config_loader.parse_overrides(["epochs=7", "train.warmup_ratio=0.2"])
    with pytest.warns(FutureWarning, match=r"^--set epochs is deprecated: use train\.epochs\.$"):
        assert config_loader.load(Moved, None, overrides).train == Renamed(epochs=7,
                                                                           warmup_ratio=0.2)
    with pytest.warns(FutureWarning, match=r"^Moved\.epochs is deprecated: use "
                                           r"Moved\.train\.epochs\.$"):
        assert Moved(epochs=2).train.epochs == 2
    # Errors: the old and the new key, two old names of one key, a value checked as the new key's.
    with pytest.raises(ValueError, match=r"^Moved\.epochs and Moved\.train\.epochs are one "
                                         r"setting"):
        Moved(epochs=2, train=Renamed(epochs=4))
    path.write_text("epochs: 5\ntrain: {epochs: 6}\n")
    with pytest.raises(ValueError, match=r"flat\.yaml: epochs and train\.epochs are one setting"):
        config_loader.load(Moved, str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(ValueError, match=r"^Moved\.warmup and Moved\.ratio are one setting, "
                                             r"Moved\.train\.warmup_ratio; set "
                                             r"Moved\.train\.warmup_ratio only\.$"):
            Moved(warmup=0.1, ratio=0.2)
        with pytest.raises(ValueError, match=r"^Moved\.train: warmup_fraction and "
                                             r"train\.warmup_ratio are one setting"):
            Moved(warmup=0.1, train={"warmup_fraction": 0.2})
        with pytest.raises(ValueError, match=r"^--set train\.warmup_ratio=2: must be in"):
            config_loader.load(Moved, None, {"warmup": 2})
    # A config tfbert stored itself: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert config_loader.from_dict(Moved, {"epochs": 9}, warn=False).train.epochs == 9


# === The renamed keys of tfbert's own configs ===

def test_pretrain_and_train_configs_take_their_old_names(tmp_path):
    from tfbert.runs.pretrain import PretrainConfig
    from tfbert.train.train_config import TrainConfig

    path = tmp_path / "pretrain.yaml"
    path.write_text("mixed_precision: mixed_bfloat16\nepsilon: 1.0e-7\nnum_warmup_steps: 7\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cfg = config_loader.load(PretrainConfig, str(path))
        train = TrainConfig(warmup_fraction=0.2)
    assert (cfg.train.dtype_policy, cfg.train.adam_epsilon, cfg.pretrain.warmup_steps) == (
        "mixed_bfloat16", 1e-7, 7)
    assert train.warmup_ratio == 0.2
    assert sorted(str(w.message) for w in caught) == [
        f"{path}: epsilon is deprecated: use train.adam_epsilon.",
        f"{path}: mixed_precision is deprecated: use train.dtype_policy.",
        f"{path}: num_warmup_steps is deprecated: use pretrain.warmup_steps.",
        "TrainConfig.warmup_fraction is deprecated: use TrainConfig.warmup_ratio."]
    assert all(w.category is FutureWarning for w in caught)


@pytest.mark.parametrize("config_name", ["PretrainConfig", "PretrainingDataConfig"])
def test_use_nsp_is_the_old_name_of_next_sentence_task(tmp_path, config_name):
    from tfbert.data.pretraining.data_config import PretrainingDataConfig
    from tfbert.runs.pretrain import PretrainConfig

    cls = {"PretrainConfig": PretrainConfig, "PretrainingDataConfig": PretrainingDataConfig}[
        config_name]
    # PretrainConfig keeps it in its pretrain: section.
    new = "pretrain.next_sentence_task" if cls is PretrainConfig else "next_sentence_task"
    task_of = ((lambda cfg: cfg.pretrain.next_sentence_task) if cls is PretrainConfig
               else (lambda cfg: cfg.next_sentence_task))
    with pytest.warns(FutureWarning, match=rf"^{config_name}\.use_nsp is deprecated: use "
                                           rf"{config_name}\.{new} \(use_nsp=False "
                                           rf"is {new}='none'\)\.$"):
        assert task_of(cls(use_nsp=False)) == "none"
    path = tmp_path / "pretrain.yaml"
    path.write_text("use_nsp: true\n")
    with pytest.warns(FutureWarning, match=r"pretrain\.yaml: use_nsp is deprecated: use "
                                           rf"{new} \(use_nsp=True is "
                                           rf"{new}='nsp'\)\.$"):
        assert task_of(config_loader.load(cls, str(path))) == "nsp"
    overrides = config_loader.parse_overrides(["use_nsp=false"])
    with pytest.warns(FutureWarning, match=r"^--set use_nsp is deprecated"):
        assert task_of(config_loader.load(cls, None, overrides)) == "none"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(ValueError, match=rf"^{config_name}\.use_nsp and "
                                             rf"{config_name}\.next_sentence_task are one "
                                             "setting"):
            cls(use_nsp=False, next_sentence_task="none")
    assert task_of(cls()) == "nsp"


def test_a_run_stored_under_old_names_resumes(tmp_path):
    from tfbert.runs.finetune import FinetuneConfig
    from tfbert.train.run_config import claim_model_dir

    renamed = config_loader.renamed_keys(FinetuneConfig)
    assert renamed == {"train.warmup_fraction": "train.warmup_ratio"}
    (tmp_path / "run_config.json").write_text('{"train": {"warmup_fraction": 0.1}}')
    claim_model_dir(str(tmp_path), {"train": {"warmup_ratio": 0.1}}, renamed=renamed)
    with pytest.raises(ValueError, match=r"train\.warmup_ratio: 0\.1 -> 0\.2"):
        claim_model_dir(str(tmp_path), {"train": {"warmup_ratio": 0.2}}, renamed=renamed)


def test_path_checkers_name_the_argument(tmp_path, raises_one_line_from_tfbert):
    check = raises_one_line_from_tfbert
    (tmp_path / "a.txt").write_text("x")
    assert config_loader.check_file(tmp_path / "a.txt", "--f") == str(tmp_path / "a.txt")
    assert config_loader.check_dir_to_write(str(tmp_path / "new"), "--o") == str(tmp_path / "new")
    check("None", lambda: config_loader.check_path(None, "--o"),
          r"^--o must be a path \(a string\), got None\.$")
    check("empty", lambda: config_loader.check_path(" ", "--o"), r"^--o is empty: name a path\.$")
    check("missing", lambda: config_loader.check_file(tmp_path / "b.txt", "--f"),
          r"^--f: no such file: \S*b\.txt$")
    check("directory", lambda: config_loader.check_file(tmp_path, "--f"),
          r"^--f: \S+ is a directory, not a file\.$")
    check("file to write into", lambda: config_loader.check_dir_to_write(tmp_path / "a.txt", "--o"),
          r"^--o: \S*a\.txt is a file, not a directory: name a directory to write\.$")
    check("bool", lambda: config_loader.check_bool("yes", "lower_case", allow_none=True),
          r"^lower_case must be True or False or None, got 'yes'\.$")
    check("open low end", lambda: config_loader.check_number(0, "step", 0, 1, low_open=True),
          r"^step must be in \(0, 1\] \(a finite number\), got 0\.0\.$")


def test_json_files_are_one_line_naming_the_file(tmp_path, raises_one_line_from_tfbert):
    check = raises_one_line_from_tfbert
    for name, data in (("cut.json", b'{"a": '), ("latin1.json", b'{"a": "\xe9"}'),
                       ("list.json", b"[1]"), ("ok.json", b'{"a": 1}')):
        (tmp_path / name).write_bytes(data)
    assert config_loader.read_json_object(tmp_path / "ok.json", "--c") == {"a": 1}
    check("truncated", lambda: config_loader.read_json(tmp_path / "cut.json", "--c"),
          r"cut\.json: not valid JSON: Expecting value")
    check("not UTF-8", lambda: config_loader.read_json(tmp_path / "latin1.json", "--c"),
          r"latin1\.json: not UTF-8 text \(invalid continuation byte at byte 7\)\.$")
    check("not an object", lambda: config_loader.read_json_object(tmp_path / "list.json", "--c"),
          r"list\.json: expected a JSON object, got list\.$")
    check("missing", lambda: config_loader.read_json(tmp_path / "no.json", "--c"),
          r"^--c: no such file: ")


def test_text_lines_name_the_line_that_is_not_utf8(tmp_path, raises_one_line_from_tfbert):
    path = tmp_path / "t.txt"
    path.write_bytes(b"\xef\xbb\xbfone\ntwo \xff\n")  # a byte-order mark, then a bad byte
    lines = config_loader.text_lines(path)
    assert next(lines) == (1, "one\n")
    raises_one_line_from_tfbert("not UTF-8", lambda: next(lines),
                                r"t\.txt, line 2: not UTF-8 text \(invalid start byte at byte 4 "
                                r"of the line\)\.$")
