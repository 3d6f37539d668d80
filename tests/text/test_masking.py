"""MaskedLMMasker: 15% / 80-10-10 statistics, special tokens, whole words, spans."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

from tfbert.text.masking import MaskedLMMasker
from tfbert.text.vocab import load_vocab

VOCAB = pathlib.Path(__file__).parents[1] / "data" / "pretraining" / "vocab.txt"


@pytest.fixture(scope="module")
def vocab():
    return load_vocab(VOCAB)


def packed_batch(vocab, batch=512, seq=128, seed=0):
    """[CLS] a [SEP] b [SEP] [PAD]... rows of real vocab ids."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(25, vocab.vocab_size, size=(batch, seq)).astype("int32")
    lengths = rng.integers(seq // 2, seq + 1, size=batch)
    for row, n in enumerate(lengths):
        ids[row, 0] = vocab.cls_id
        ids[row, n // 2] = vocab.sep_id
        ids[row, n - 1] = vocab.sep_id
        ids[row, n:] = vocab.pad_id
    return ids


def test_masking_statistics_on_a_large_batch(vocab):
    masker = MaskedLMMasker.from_vocab(vocab, max_predictions=40)
    ids = packed_batch(vocab)
    out = {k: v.numpy() for k, v in masker(ids, seed=[7, 1]).items()}
    special = np.isin(ids, [vocab.cls_id, vocab.sep_id, vocab.pad_id, vocab.mask_id])
    weights, positions = out["masked_lm_weights"], out["masked_lm_positions"]
    real = weights > 0
    rows = np.nonzero(real)[0]
    cols = positions[real]
    chosen = np.zeros_like(ids, bool)
    chosen[rows, cols] = True
    assert chosen.sum() == real.sum()  # no position listed twice

    assert abs(chosen.sum() / (~special).sum() - 0.15) < 0.01
    assert not (chosen & special).any()
    # Labels are the original ids; unchosen tokens are untouched.
    np.testing.assert_array_equal(out["masked_lm_ids"][real], ids[rows, cols])
    assert (out["masked_lm_ids"][~real] == 0).all()
    np.testing.assert_array_equal(out["input_word_ids"][~chosen], ids[~chosen])
    new = out["input_word_ids"][chosen]
    old = ids[chosen]
    as_mask = np.mean(new == vocab.mask_id)
    unchanged = np.mean(new == old)
    random = np.mean((new != vocab.mask_id) & (new != old))
    assert abs(as_mask - 0.8) < 0.02, as_mask
    assert abs(unchanged - 0.1) < 0.02, unchanged
    assert abs(random - 0.1) < 0.02, random
    # Positions are sorted within a row, padding after the real ones.
    for row in range(8):
        n = int(weights[row].sum())
        assert list(positions[row, :n]) == sorted(positions[row, :n])


def test_same_seed_same_masks_new_seed_new_masks(vocab):
    masker = MaskedLMMasker.from_vocab(vocab)
    ids = packed_batch(vocab, batch=16)
    a = masker(ids, seed=[1, 2])
    b = masker(ids, seed=[1, 2])
    c = masker(ids, seed=[1, 3])
    for key in a:
        np.testing.assert_array_equal(a[key].numpy(), b[key].numpy())
    assert not np.array_equal(a["masked_lm_positions"].numpy(), c["masked_lm_positions"].numpy())


def test_max_predictions_caps_the_budget(vocab):
    masker = MaskedLMMasker.from_vocab(vocab, max_predictions=5)
    out = masker(packed_batch(vocab, batch=32), seed=[0, 0])
    assert out["masked_lm_positions"].shape == (32, 5)
    assert out["masked_lm_weights"].numpy().sum(axis=1).max() == 5


def test_whole_word_masks_all_pieces_of_a_word(vocab):
    masker = MaskedLMMasker.from_vocab(vocab, max_predictions=40, strategy="whole_word")
    ids = packed_batch(vocab, batch=256)
    out = masker(ids, seed=[3, 4])
    chosen = np.zeros_like(ids, bool)
    w = out["masked_lm_weights"].numpy() > 0
    chosen[np.nonzero(w)[0], out["masked_lm_positions"].numpy()[w]] = True
    continuation = np.array([t.startswith("##") for t in vocab.tokens])[ids]
    special = np.isin(ids, [vocab.cls_id, vocab.sep_id, vocab.pad_id])
    inside_word = continuation & ~np.pad(special, [[0, 0], [1, 0]])[:, :-1]
    # Every continuation piece shares its word's decision.
    prev = np.pad(chosen, [[0, 0], [1, 0]])[:, :-1]
    assert inside_word.sum() > 1000
    assert (chosen[inside_word] == prev[inside_word]).all()
    rate = chosen.sum() / (~special).sum()
    assert 0.13 < rate <= 0.155, rate


def test_span_masking_keeps_budget_and_masks_spans(vocab):
    masker = MaskedLMMasker.from_vocab(vocab, max_predictions=40, strategy="span")
    ids = packed_batch(vocab, batch=256)
    out = masker(ids, seed=[5, 6])
    chosen = np.zeros_like(ids, bool)
    w = out["masked_lm_weights"].numpy() > 0
    chosen[np.nonzero(w)[0], out["masked_lm_positions"].numpy()[w]] = True
    special = np.isin(ids, [vocab.cls_id, vocab.sep_id, vocab.pad_id])
    assert not (chosen & special).any()
    rate = chosen.sum() / (~special).sum()
    assert 0.12 < rate <= 0.155, rate
    # Mean run length of chosen tokens: spans, not single tokens.
    starts = chosen & ~np.pad(chosen, [[0, 0], [1, 0]])[:, :-1]
    assert chosen.sum() / starts.sum() > 2.0


def test_runs_inside_tf_data_map(vocab):
    masker = MaskedLMMasker.from_vocab(vocab)
    ds = tf.data.Dataset.from_tensor_slices(packed_batch(vocab, batch=64)).batch(16)
    ds = ds.enumerate().map(lambda i, x: masker(x, seed=tf.stack([tf.constant(0, tf.int64), i])))
    batches = list(ds)
    assert len(batches) == 4
    assert batches[0]["masked_lm_positions"].shape == (16, 20)


def test_bad_arguments_and_vocab_without_mask(tmp_path, vocab):
    with pytest.raises(ValueError, match="strategy"):
        MaskedLMMasker.from_vocab(vocab, strategy="random")
    with pytest.raises(ValueError, match="mask_rate"):
        MaskedLMMasker.from_vocab(vocab, mask_rate=0.0)
    bad = tmp_path / "vocab.txt"
    bad.write_text("\n".join(t for t in vocab.tokens if t != "[MASK]") + "\n")
    with pytest.raises(ValueError, match=r"\[MASK\]") as e:
        MaskedLMMasker.from_vocab(str(bad))
    assert str(bad) in str(e.value)
    with pytest.raises(ValueError, match=r"\[batch, seq\]"):
        MaskedLMMasker.from_vocab(vocab)(tf.constant([1, 2, 3]), seed=[0, 0])


def test_span_boundaries_surround_each_span(vocab):
    masker = MaskedLMMasker.from_vocab(vocab, max_predictions=40, strategy="span")
    ids = packed_batch(vocab, batch=64)
    out = {k: v.numpy() for k, v in masker(ids, seed=[8, 9]).items()}
    w = out["masked_lm_weights"] > 0
    chosen = np.zeros_like(ids, bool)
    chosen[np.nonzero(w)[0], out["masked_lm_positions"][w]] = True
    for row, col in zip(*np.nonzero(w)):
        pos = out["masked_lm_positions"][row, col]
        left = out["masked_lm_span_left"][row, col]
        right = out["masked_lm_span_right"][row, col]
        assert left < pos < right or (pos == ids.shape[1] - 1 == right)
        assert not chosen[row, left] and (right == ids.shape[1] - 1 or not chosen[row, right])
        assert chosen[row, left + 1:right].all()
        assert out["masked_lm_span_offset"][row, col] == pos - left - 1
    assert (out["masked_lm_span_left"][~w] == 0).all()
    assert "masked_lm_span_left" not in MaskedLMMasker.from_vocab(vocab)(ids[:2], seed=[0, 0])
