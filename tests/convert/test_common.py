"""The converters' shared pieces: target shapes agree with the real encoder."""

import pytest

from tfbert import BertConfig, BertEncoder
from tfbert.convert import common


def test_encoder_weight_shapes_match_bert_encoder():
    config = BertConfig.from_preset("tiny", vocab_size=50, num_layers=3, max_position_embeddings=64)
    encoder = BertEncoder(config)
    want = {name: value.shape for name, value in encoder.get_named_weights().items()}
    assert common.encoder_weight_shapes(config) == want


def test_head_weight_shapes_follow_the_checkpoint_contract():
    config = BertConfig.from_preset("tiny", vocab_size=50)
    shapes = common.head_weight_shapes(config)
    assert shapes["mlm/transform/kernel"] == (128, 128)
    assert shapes["mlm/output_bias"] == (50,)
    assert shapes["nsp/kernel"] == (128, 2)


def test_check_vocab(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\nhello\n\n", encoding="utf-8")  # trailing blank line
    common.check_vocab(vocab, 3)
    with pytest.raises(ValueError, match="has 3 tokens, but the model has 4"):
        common.check_vocab(vocab, 4)
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        common.check_vocab(tmp_path / "missing.txt", 3)


def test_read_json_names_the_file(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="config.json: not valid JSON"):
        common.read_json(bad)


def test_converters_refuse_pre_layer_norm():
    from tfbert.convert.albert import albert_rules
    from tfbert.convert.google import google_rules
    from tfbert.convert.huggingface import huggingface_rules

    config = BertConfig.from_preset("tiny", vocab_size=50, norm_first=True)
    for make_rules in (google_rules, lambda c: huggingface_rules(c, ""),
                       lambda c: albert_rules(c.replace(embedding_size=32), "")):
        with pytest.raises(ValueError, match="norm_first=True .pre-LayerNorm. has no "
                                             "counterpart") as error:
            make_rules(config)
        assert "\n" not in str(error.value)


def test_files_are_checked_before_they_are_read(tmp_path, raises_one_line_from_tfbert):
    check = raises_one_line_from_tfbert
    (tmp_path / "latin1.json").write_bytes('{"caf\xe9": 1}'.encode("latin-1"))
    (tmp_path / "list.json").write_text("[1, 2]")
    check("directory", lambda: common.require_file(tmp_path, "Vocabulary file (vocab.txt)"),
          r"^Vocabulary file \(vocab\.txt\): \S+ is a directory, not a file\.$")
    check("missing", lambda: common.read_json(tmp_path / "config.json", "Hugging Face config"),
          r"^Hugging Face config not found: \S*config\.json$")
    check("not UTF-8", lambda: common.read_json(tmp_path / "latin1.json"),
          r"latin1\.json: not UTF-8 text \(invalid continuation byte at byte \d+\)\.$")
    check("not an object", lambda: common.read_json_object(tmp_path / "list.json"),
          r"list\.json: expected a JSON object, got list\.$")
