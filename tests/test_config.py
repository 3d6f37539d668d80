import pytest

from tfbert import BertConfig
from tfbert.config import PRESETS


@pytest.mark.parametrize(
    "name,layers,hidden,heads",
    [("tiny", 2, 128, 2), ("mini", 4, 256, 4), ("small", 4, 512, 8),
     ("medium", 8, 512, 8), ("base", 12, 768, 12), ("large", 24, 1024, 16)],
)
def test_presets_have_bert_sizes(name, layers, hidden, heads):
    cfg = BertConfig.from_preset(name)
    assert (cfg.num_layers, cfg.hidden_size, cfg.num_heads) == (layers, hidden, heads)
    assert cfg.intermediate_size == 4 * hidden
    assert cfg.hidden_act == "gelu"
    assert cfg.max_position_embeddings == 512 and cfg.type_vocab_size == 2
    assert cfg.layer_norm_eps == 1e-12 and cfg.initializer_range == 0.02


def test_all_presets_listed_and_loadable():
    assert set(PRESETS) == {"tiny", "mini", "small", "medium", "base", "large"}
    for name in PRESETS:
        BertConfig.from_preset(name)


def test_preset_overrides_and_replace():
    cfg = BertConfig.from_preset("tiny", vocab_size=1000)
    assert cfg.vocab_size == 1000
    assert cfg.replace(hidden_act="gelu_tanh").hidden_act == "gelu_tanh"
    assert cfg.hidden_act == "gelu"  # frozen: replace returns a copy


def test_yaml_round_trip(tmp_path):
    cfg = BertConfig.from_preset("mini", hidden_act="relu")
    path = tmp_path / "c.yaml"
    path.write_text(cfg.to_yaml())
    assert BertConfig.from_yaml(str(path)) == cfg


def test_unknown_key_names_the_key_and_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("hidden_size: 128\nnum_layer: 2\n")
    with pytest.raises(ValueError, match=r"bad\.yaml: unknown key\(s\) \['num_layer'\] for BertConfig"):
        BertConfig.from_yaml(str(path))


def test_hidden_not_divisible_by_heads():
    with pytest.raises(ValueError, match="hidden_size.*divisible.*num_heads"):
        BertConfig(hidden_size=100, num_heads=3)


@pytest.mark.parametrize("field", ["vocab_size", "hidden_size", "num_layers", "num_heads",
                                   "intermediate_size", "max_position_embeddings",
                                   "type_vocab_size"])
def test_non_positive_sizes_name_the_field(field):
    with pytest.raises(ValueError, match=f"^BertConfig.{field}: must be > 0, got 0.$"):
        BertConfig(**{field: 0})


@pytest.mark.parametrize(
    "changes,pattern",
    [({"num_layers": 2.5}, "num_layers: expected an integer, got 2.5"),
     ({"num_layers": True}, "num_layers: expected an integer, got True"),
     ({"hidden_act": "swish"}, "hidden_act: must be one of"),
     ({"dropout_rate": 1.0}, r"dropout_rate: must be in \[0.0, 1.0\), got 1.0"),
     ({"attention_dropout_rate": -0.1}, "attention_dropout_rate: must be in"),
     ({"layer_norm_eps": 0}, "layer_norm_eps: must be > 0, got 0"),
     ({"initializer_range": "0.02"}, "initializer_range: expected a number, got '0.02'")],
)
def test_bad_values(changes, pattern):
    with pytest.raises(ValueError, match=f"^BertConfig.{pattern}"):
        BertConfig(**changes)


def test_bad_value_in_yaml_names_the_file_and_key(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("num_layers: two\n")
    with pytest.raises(ValueError, match=r"c\.yaml: num_layers: expected an integer, got 'two'"):
        BertConfig.from_yaml(str(path))
    path.write_text("hidden_size: 100\nnum_heads: 3\n")
    with pytest.raises(ValueError, match=r"c\.yaml: BertConfig.hidden_size \(100\) must be "
                                         r"divisible by BertConfig.num_heads \(3\)"):
        BertConfig.from_yaml(str(path))


def test_bad_yaml_and_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.yaml"):
        BertConfig.from_yaml(str(tmp_path / "nope.yaml"))
    path = tmp_path / "list.yaml"
    path.write_text("- 1\n- 2\n")
    with pytest.raises(TypeError, match="expected a mapping"):
        BertConfig.from_yaml(str(path))
    with pytest.raises(TypeError, match=r"^c\.json: expected a mapping of BertConfig fields, "
                                        r"got NoneType\.$"):
        BertConfig.from_dict(None, source="c.json")


def test_unknown_preset():
    with pytest.raises(ValueError, match="Unknown preset 'huge'"):
        BertConfig.from_preset("huge")


def test_heads_per_layer_round_trips_and_is_left_out_when_unset():
    config = BertConfig.from_preset("tiny")
    assert "heads_per_layer" not in config.to_dict()  # configs from before it are unchanged
    pruned = config.replace(heads_per_layer=[2, 0])
    assert pruned.heads_per_layer == (2, 0) and pruned.to_dict()["heads_per_layer"] == [2, 0]
    assert BertConfig.from_dict(pruned.to_dict()) == pruned
    assert [pruned.layer_heads(i) for i in range(2)] == [2, 0] and pruned.head_size == 64


@pytest.mark.parametrize("changes,pattern", [
    ({"heads_per_layer": [2]}, "has 1 counts for num_layers=2"),
    ({"heads_per_layer": [2, 3]},
     r"heads_per_layer\[1\] must be an integer in \[0, num_heads=2\], got 3"),
    ({"heads_per_layer": [-1, 2]}, r"heads_per_layer\[0\] must be an integer"),
    ({"heads_per_layer": [1, 1], "share_layers": True}, "cannot be set with share_layers"),
])
def test_bad_heads_per_layer_is_one_line(changes, pattern, raises_one_line_from_tfbert):
    config = BertConfig.from_preset("tiny")
    raises_one_line_from_tfbert(str(changes), lambda: config.replace(**changes), pattern)
