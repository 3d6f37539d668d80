"""tfbert.analysis.layer_features: the stored vectors are the encoder's own
(layer 0 = embeddings, a word = the mean or first of its pieces), in input
order whatever the batching; a sentence too long is one line."""

import numpy as np
import pytest

from tfbert.analysis.layer_features import LayerFeatures

SENTENCES = [["Unpacking", "archives", "is", "slow", "."], ["Open", "it", "."],
             ["The", "tokenizer", "splits", "unbelievably", "long", "words", "."]]


@pytest.fixture(scope="module")
def reference(tiny_pair):
    """Each sentence alone through the encoder: per-piece layer outputs and pieces per word."""
    encoder, pre = tiny_pair
    out = []
    for words in SENTENCES:
        pieces = [pre.tokenize([w]).flat_values.numpy() for w in words]
        ids = np.concatenate([[pre.vocab.cls_id], *pieces, [pre.vocab.sep_id]])[None].astype(
            "int32")
        inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
                  "input_type_ids": np.zeros_like(ids)}
        layers = [encoder.embeddings(ids, inputs["input_type_ids"]).numpy()[0]]
        layers += [t.numpy()[0] for t in encoder(inputs)["encoder_outputs"]]
        out.append((np.stack(layers, 1), [len(p) for p in pieces]))
    return out


@pytest.mark.parametrize("pooling", ["mean", "first"])
def test_vectors_are_the_encoders_pooled_pieces(tiny_pair, reference, tmp_path, pooling):
    features = LayerFeatures.extract(tiny_pair, SENTENCES, tmp_path / "f", pooling=pooling,
                                     batch_size=2)
    assert features.vectors.dtype == np.float16
    assert features.vectors.shape == (15, 3, 128) and features.num_sentences == 3
    assert max(n for _, counts in reference for n in counts) > 1  # some word has 2+ pieces
    for i, (per_piece, counts) in enumerate(reference):
        start = 1 + np.concatenate([[0], np.cumsum(counts)[:-1]])
        expected = np.stack([per_piece[s:s + n].mean(0) if pooling == "mean" else per_piece[s]
                             for s, n in zip(start, counts)])
        np.testing.assert_allclose(features.sentence(i), expected, atol=2e-2, rtol=2e-3)
    # Reopened from disk: the same memory-mapped arrays.
    again = LayerFeatures(tmp_path / "f")
    np.testing.assert_array_equal(again.vectors, features.vectors)


def test_a_sentence_too_long_names_itself(tiny_pair, tmp_path, raises_one_line_from_tfbert):
    long = ["word"] * 600
    raises_one_line_from_tfbert(
        "long", lambda: LayerFeatures.extract(tiny_pair, [["short"], long], tmp_path / "f",
                                              names=["a.conllu, line 1", "a.conllu, line 9"]),
        r"a\.conllu, line 9: 600 wordpieces, more than the encoder's 510")
    assert not (tmp_path / "f").exists()  # nothing half-written
