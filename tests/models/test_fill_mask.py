"""FillMask: literal [MASK] in raw strings, top-k, next-sentence scores."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertEncoder, checkpoint
from tfbert.models.fill_mask import FillMask
from tfbert.models.pretrainer import BertPretrainer

VOCAB = pathlib.Path(__file__).parents[1] / "data" / "pretraining" / "vocab.txt"


@pytest.fixture(scope="module")
def ckpt_dir(tmp_path_factory):
    from tfbert import BertConfig
    from tfbert.text.vocab import load_vocab

    config = BertConfig.from_preset("tiny", vocab_size=load_vocab(VOCAB).vocab_size,
                                    num_layers=1, max_position_embeddings=64)
    model = BertPretrainer(BertEncoder(config))
    path = tmp_path_factory.mktemp("ckpt") / "pretrained"
    model.save_checkpoint(str(path), str(VOCAB), lower_case=True)
    return str(path)


def test_fill_mask_scores_each_mask(ckpt_dir):
    fill = FillMask.from_pretrained(ckpt_dir, seq_length=32)
    texts = ["Return the [MASK] of the list.", "[MASK] a file and [MASK] it."]
    results = fill(texts, top_k=4)
    assert [len(r) for r in results] == [1, 2]
    for per_mask in results:
        for candidates in per_mask:
            assert len(candidates) == 4
            probs = [p for _, p in candidates]
            assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1.0
            assert all(isinstance(t, str) for t, _ in candidates)
    # The scores are the model's softmax at the [MASK] position.
    packed = fill.preprocessor(tf.constant(["Return the"]))
    ids = packed["input_word_ids"].numpy()
    n = int(packed["input_mask"].numpy().sum())
    ids[0, n - 1] = fill.vocab.mask_id  # [CLS] return the [MASK]
    tail = fill.preprocessor.tokenize(tf.constant([" of the list."])).merge_dims(1, 2).to_list()[0]
    row = [fill.vocab.cls_id] + ids[0, 1:n].tolist() + tail + [fill.vocab.sep_id]
    x = {
        "input_word_ids": np.array([row + [0] * (32 - len(row))], np.int32),
        "input_mask": np.array([[1] * len(row) + [0] * (32 - len(row))], np.int32),
        "input_type_ids": np.zeros([1, 32], np.int32),
        "masked_lm_positions": np.array([[n - 1]], np.int32),
    }
    probs = tf.nn.softmax(fill.model(x)["mlm_logits"][0, 0]).numpy()
    token, p = results[0][0][0]
    assert p == pytest.approx(float(probs.max()), rel=1e-5)
    assert token == fill.vocab.tokens[int(probs.argmax())]


def test_next_sentence_probability(ckpt_dir):
    fill = FillMask.from_pretrained(ckpt_dir, seq_length=32)
    p = fill.next_sentence_probability(["Open the file.", "A"], ["Read it.", "B"])
    assert p.shape == (2,) and ((p > 0) & (p < 1)).all()


def test_bad_inputs(ckpt_dir, tmp_path):
    fill = FillMask.from_pretrained(ckpt_dir, seq_length=16)
    with pytest.raises(ValueError, match="no \\[MASK\\]"):
        fill(["nothing to fill"])
    with pytest.raises(ValueError, match="seq_length=16"):
        fill(["word " * 40 + "[MASK]"])
    with pytest.raises(ValueError, match="2 first sentences but 1"):
        fill.next_sentence_probability(["a", "b"], ["c"])
    # A checkpoint without an MLM head (e.g. converted all-MiniLM-L6-v2).
    ckpt = checkpoint.read_checkpoint(ckpt_dir)
    checkpoint.save_checkpoint(str(tmp_path / "enc"), ckpt.config, ckpt.encoder_weights(),
                               ckpt.vocab_file, True)
    with pytest.raises(ValueError, match="no masked-LM head"):
        FillMask.from_pretrained(str(tmp_path / "enc"))
