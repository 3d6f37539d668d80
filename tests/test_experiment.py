import dataclasses

import pytest

from tfbert import BertConfig, experiment


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
    overrides = experiment.parse_overrides(["train.learning_rate=2e-5", "encoder.num_layers=3"])
    exp = experiment.load(Experiment, str(path), overrides)
    assert exp.name == "demo"
    assert exp.encoder.num_layers == 3 and exp.encoder.hidden_size == 128
    assert exp.train == Train(learning_rate=2e-5, epochs=4)


def test_unknown_keys_are_errors(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("train: {epoch: 4}\n")
    with pytest.raises(ValueError, match=r"exp\.yaml:train.*unknown key.*epoch"):
        experiment.load(Experiment, str(path))
    path.write_text("encoder: {hidden: 4}\n")
    with pytest.raises(ValueError, match="unknown BertConfig key.*hidden"):
        experiment.load(Experiment, str(path))


def test_bad_override_syntax():
    with pytest.raises(ValueError, match="key=value"):
        experiment.parse_overrides(["epochs"])


def test_exponent_floats_without_a_dot_are_floats(tmp_path):
    # PyYAML's YAML 1.1 rules would read these as strings.
    path = tmp_path / "exp.yaml"
    path.write_text("train: {learning_rate: 3e-5}\nencoder: {layer_norm_eps: 1e-12}\n")
    exp = experiment.load(Experiment, str(path))
    assert exp.train.learning_rate == 3e-5
    assert exp.encoder.layer_norm_eps == 1e-12
    assert experiment.load_yaml("x: 1e5x") == {"x": "1e5x"}
