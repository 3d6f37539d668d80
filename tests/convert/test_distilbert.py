"""Hugging Face DistilBERT -> tfbert (`tfbert.convert.distilbert`): encoder
and MLM head at parity with transformers' own classes on real text (a
WordPiece trained on docstrings, tokenized by tfbert's own preprocessor too),
learned and sinusoidal positions, the named rules for token types and pooler."""

import json
import shutil

import numpy as np
import pytest

from tfbert import BertEncoder, BertPreprocessor, checkpoint
from tfbert.convert import from_huggingface

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("name", ["model", "sinusoidal"])
def test_encoder_parity_from_raw_text(distilbert_dirs, wordpiece_tokenizer_dir, hf_test, name):
    """transformers on its tokenizer's ids; tfbert from raw text through its own
    preprocessor (same ids), single texts and pairs."""
    src, model, out = distilbert_dirs[name]
    ckpt = checkpoint.read_checkpoint(out)
    assert ckpt.huggingface.model_type == "distilbert" and ckpt.huggingface.fresh_pooler
    assert ckpt.lower_case is True and ckpt.config.type_vocab_size == 2
    assert not ckpt.weights["encoder/embeddings/token_type_embeddings/embeddings"].any()
    encoder = BertEncoder.from_pretrained(out)
    preprocessor = BertPreprocessor.from_pretrained(out, seq_length=64)
    texts = hf_test.sentences
    for pairs in (None, texts[::-1]):
        batch = hf_test.batch_of(wordpiece_tokenizer_dir, texts, pairs)
        inputs = preprocessor([np.array(texts)] + ([np.array(pairs)] if pairs else []))
        width = batch["input_ids"].shape[1]
        np.testing.assert_array_equal(np.asarray(inputs["input_word_ids"])[:, :width],
                                      batch["input_ids"])
        with torch.no_grad():
            want = model(**hf_test.torch_inputs(batch)).last_hidden_state.numpy()
        got = np.asarray(encoder(inputs)["sequence_output"])[:, :width]
        diff = hf_test.masked_max_diff(got, want, batch["attention_mask"])
        print(f"DistilBertModel ({name}, {'pairs' if pairs else 'single'}) vs tfbert from raw "
              f"text: {diff:.2e}")
        assert diff <= 1e-5


def test_mlm_logits_parity(distilbert_dirs, wordpiece_tokenizer_dir, hf_test):
    from tfbert.models.pretrainer import BertPretrainer

    src, model, out = distilbert_dirs["mlm"]
    batch = hf_test.batch_of(wordpiece_tokenizer_dir)
    positions = np.array([[1, 2, 3]] * len(batch["input_ids"]), np.int32)
    with torch.no_grad():
        logits = model(**hf_test.torch_inputs(batch)).logits.numpy()
    want = np.take_along_axis(logits, positions[:, :, None], axis=1)
    got = BertPretrainer.from_checkpoint(out)(
        {**hf_test.tfbert_inputs(batch), "masked_lm_positions": positions})
    diff = float(np.abs(np.asarray(got["mlm_logits"]) - want).max())
    print(f"DistilBertForMaskedLM logits vs tfbert: {diff:.2e}")
    assert diff <= 1e-5


def test_classification_heads_are_refused(distilbert_dirs, wordpiece_tokenizer_dir, tmp_path,
                                          hf_test, raises_one_line_from_tfbert):
    """DistilBertForSequenceClassification's pre_classifier is a ReLU, not a
    pooler: its weights are unexpected, named."""
    vocab = len(transformers.AutoTokenizer.from_pretrained(str(wordpiece_tokenizer_dir)))
    hf_test.save_model(transformers.DistilBertForSequenceClassification, hf_test.distilbert_config(vocab),
                       wordpiece_tokenizer_dir, tmp_path / "hf")
    raises_one_line_from_tfbert(
        "classifier", lambda: from_huggingface(tmp_path / "hf", tmp_path / "o"),
        r"does not match its config: unexpected weights \['classifier.bias', "
        r"'classifier.weight', 'pre_classifier.bias', 'pre_classifier.weight'\]")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    (tmp_path / "hf" / "config.json").write_text(json.dumps({**config, "activation": "swish"}))
    raises_one_line_from_tfbert(
        "activation", lambda: from_huggingface(tmp_path / "hf", tmp_path / "o"),
        r"hidden_act 'swish' is not supported")
