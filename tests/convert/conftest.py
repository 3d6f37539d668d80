"""Hugging Face directories for the converter tests, written by transformers'
own `save_pretrained` from small random configs, with real tokenizers trained
by HF `tokenizers` on real text (standard-library docstrings): byte-level BPE
for RoBERTa, WordPiece for BERT and DistilBERT. torch, transformers and
tokenizers are test-only references."""

import inspect
import json
import os

import numpy as np
import pytest

SPECIAL_BPE = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
SPECIAL_WORDPIECE = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SENTENCES = [
    "Return a new list containing all items from the iterable in ascending order.",
    "Open file and return a stream.",
    "Café déjà vu: naïve résumé, 1887!",
    "ok",
    "Raise ValueError if the value is not present.",
]


def docstring_texts():
    import collections
    import json as json_module
    import shutil
    import tempfile

    texts = []
    for module in (os, json_module, inspect, tempfile, collections, shutil):
        for _, obj in inspect.getmembers(module):
            doc = inspect.getdoc(obj)
            if doc:
                texts.append(doc)
    return texts


def randomize(model, scale=0.2, seed=0):
    """Weights larger than the init scale, so every nonlinearity matters
    (frozen ones, as DistilBERT's sinusoidal positions, stay as they are)."""
    import torch

    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(torch.randn_like(p) * scale)
    return model.eval()


@pytest.fixture(scope="session")
def bpe_tokenizer_dir(tmp_path_factory):
    """A RoBERTa tokenizer directory (tokenizer.json + tokenizer_config.json, as
    transformers 5 saves it) of a 400-token byte-level BPE trained on docstrings."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import ByteLevelBPETokenizer

    raw = tmp_path_factory.mktemp("bpe_raw")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(docstring_texts(), vocab_size=400, min_frequency=2,
                            special_tokens=SPECIAL_BPE)
    bpe.save_model(str(raw))
    tokenizer = transformers.RobertaTokenizerFast(vocab=str(raw / "vocab.json"),
                                                  merges=str(raw / "merges.txt"))
    out = tmp_path_factory.mktemp("bpe") / "tokenizer"
    tokenizer.save_pretrained(str(out))
    return out


@pytest.fixture(scope="session")
def wordpiece_tokenizer_dir(tmp_path_factory):
    """A BERT tokenizer directory (vocab.txt + tokenizer_config.json) of a
    500-token uncased WordPiece trained on docstrings."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import BertWordPieceTokenizer

    raw = tmp_path_factory.mktemp("wordpiece_raw")
    wordpiece = BertWordPieceTokenizer(lowercase=True)
    wordpiece.train_from_iterator(docstring_texts(), vocab_size=500, min_frequency=2,
                                  special_tokens=SPECIAL_WORDPIECE)
    wordpiece.save_model(str(raw))
    tokenizer = transformers.BertTokenizerFast(tokenizer_object=wordpiece, do_lower_case=True)
    out = tmp_path_factory.mktemp("wordpiece") / "tokenizer"
    tokenizer.save_pretrained(str(out))
    if not (out / "vocab.txt").exists():  # transformers 5 writes tokenizer.json only
        (out / "vocab.txt").write_text((raw / "vocab.txt").read_text(encoding="utf-8"),
                                       encoding="utf-8")
    config = json.loads((out / "tokenizer_config.json").read_text())
    (out / "tokenizer_config.json").write_text(json.dumps({**config, "do_lower_case": True}))
    return out


def save_model(cls, config, tokenizer_dir, out_dir, seed=0):
    """`cls(config)` with random weights, saved by `save_pretrained` beside a
    copy of the tokenizer files; returns the model (eval mode)."""
    import shutil

    model = randomize(cls(config), seed=seed)
    model.save_pretrained(str(out_dir))
    for name in os.listdir(tokenizer_dir):
        shutil.copy(os.path.join(tokenizer_dir, name), os.path.join(out_dir, name))
    return model


def batch_of(tokenizer_dir, texts=SENTENCES, pairs=None):
    """Real token ids of `texts` from the directory's own tokenizer, padded on the right."""
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tokenizer_dir))
    args = (texts, pairs) if pairs else (texts,)
    batch = dict(tokenizer(*args, padding=True, return_tensors="np"))
    assert batch["attention_mask"].min() == 0  # the batch has padding
    assert (batch["input_ids"] != tokenizer.unk_token_id).mean() > 0.9  # real ids
    return batch


def tfbert_inputs(batch):
    ids = batch["input_ids"]
    types = batch.get("token_type_ids", np.zeros_like(ids))
    return {"input_word_ids": ids.astype(np.int32),
            "input_mask": batch["attention_mask"].astype(np.int32),
            "input_type_ids": types.astype(np.int32)}


def torch_inputs(batch, keys=("input_ids", "attention_mask")):
    import torch

    return {k: torch.from_numpy(batch[k]) for k in keys}


def masked_max_diff(got, want, mask):
    """max |got - want| over the real (unmasked) tokens."""
    return float((np.abs(np.asarray(got) - want) * mask[..., None]).max())


@pytest.fixture(scope="session")
def hf_test():
    """The helpers above, for the test modules (pytest imports conftest.py
    files itself: tests cannot import them)."""
    import types

    return types.SimpleNamespace(save_model=save_model, batch_of=batch_of,
                                 tfbert_inputs=tfbert_inputs, torch_inputs=torch_inputs,
                                 masked_max_diff=masked_max_diff, sentences=SENTENCES,
                                 roberta_config=roberta_config,
                                 distilbert_config=distilbert_config,
                                 docstring_texts=docstring_texts, special_bpe=SPECIAL_BPE)


def roberta_config(vocab_size, **kwargs):
    """The released RoBERTa's type_vocab_size and eps, at a tiny size."""
    import transformers

    values = dict(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=64, max_position_embeddings=130,
                  type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0,
                  eos_token_id=2)
    return transformers.RobertaConfig(**{**values, **kwargs})


def distilbert_config(vocab_size, **kwargs):
    import transformers

    return transformers.DistilBertConfig(vocab_size=vocab_size, dim=32, n_layers=2, n_heads=4,
                                         hidden_dim=64, max_position_embeddings=128, **kwargs)


@pytest.fixture(scope="session")
def roberta_dirs(bpe_tokenizer_dir, tmp_path_factory, hf_test):
    """{class name: (HF directory, model, converted tfbert checkpoint)} of
    RobertaModel, RobertaForMaskedLM and RobertaForSequenceClassification (3
    labels). The models are shared: a test that trains one trains a copy."""
    transformers = pytest.importorskip("transformers")
    from tfbert.convert import from_huggingface

    vocab = len(transformers.AutoTokenizer.from_pretrained(str(bpe_tokenizer_dir)))
    config = roberta_config(vocab, num_labels=3)
    dirs = {}
    for seed, cls in enumerate((transformers.RobertaModel, transformers.RobertaForMaskedLM,
                                transformers.RobertaForSequenceClassification)):
        root = tmp_path_factory.mktemp(cls.__name__)
        model = save_model(cls, config, bpe_tokenizer_dir, root / "hf", seed=seed)
        dirs[cls.__name__] = (root / "hf", model, from_huggingface(root / "hf", root / "tfbert"))
    return dirs


@pytest.fixture(scope="session")
def distilbert_dirs(wordpiece_tokenizer_dir, tmp_path_factory, hf_test):
    """{name: (HF directory, model, converted tfbert checkpoint)}: DistilBertModel
    with learned ("model") and sinusoidal positions, DistilBertForMaskedLM ("mlm")."""
    transformers = pytest.importorskip("transformers")
    from tfbert.convert import from_huggingface

    vocab = len(transformers.AutoTokenizer.from_pretrained(str(wordpiece_tokenizer_dir)))
    dirs = {}
    for name, cls, sinusoidal in (("model", transformers.DistilBertModel, False),
                                  ("sinusoidal", transformers.DistilBertModel, True),
                                  ("mlm", transformers.DistilBertForMaskedLM, False)):
        root = tmp_path_factory.mktemp(name)
        config = distilbert_config(vocab, sinusoidal_pos_embds=sinusoidal)
        model = save_model(cls, config, wordpiece_tokenizer_dir, root / "hf")
        dirs[name] = (root / "hf", model, from_huggingface(root / "hf", root / "tfbert"))
    return dirs
