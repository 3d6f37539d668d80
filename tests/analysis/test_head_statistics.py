"""tfbert.analysis.head_statistics on the tiny encoder and the hand-annotated
sample: the statistics equal those computed directly from the encoder's
attention for one sentence; the fixed-offset baseline is counted by hand; a
pruned encoder's missing heads are NaN."""

import numpy as np

from tfbert.analysis.conllu import read_conllu
from tfbert.analysis.head_statistics import (attention_encoder, attention_statistics,
                                              punctuation_ids)
from tfbert.analysis.layer_features import sentence_batches


def test_statistics_match_the_attention_of_one_sentence(tiny_pair, analysis_data):
    encoder, pre = tiny_pair
    sentences = read_conllu(str(analysis_data / "syntax_train.conllu"))[:1]
    words = [s.words for s in sentences]  # "The function returns a new list ."
    table = punctuation_ids(pre.vocab.tokens)
    result = attention_statistics(encoder, sentence_batches(pre, words, 8, 512), sentences,
                                  table)
    inputs = pre.bert_pack_inputs([pre.tokenize([" ".join(words[0])])], seq_length=9)
    assert int(inputs["input_mask"].numpy().sum()) == 9  # [CLS] 7 one-piece words [SEP]
    probs = np.stack([p.numpy()[0] for p in attention_encoder(encoder)(inputs)["attention_probs"]])
    stats = {k: np.array(v) for k, v in result["statistics"].items()}
    np.testing.assert_allclose(stats["cls"], probs[..., 0].mean(-1), atol=1e-5)
    np.testing.assert_allclose(stats["sep"], probs[..., 8].mean(-1), atol=1e-5)
    np.testing.assert_allclose(stats["punctuation"], probs[..., 7].mean(-1), atol=1e-5)
    np.testing.assert_allclose(stats["previous"],
                               np.trace(probs, offset=-1, axis1=2, axis2=3) / 9, atol=1e-5)
    entropy = -(probs * np.log(probs)).sum(-1).mean(-1)
    np.testing.assert_allclose(stats["entropy"], entropy, atol=1e-4)
    assert result["tokens"] == 9
    # det: The -> function, a -> list: offset +1 for one, +2 for the other.
    det = result["relations"]["det"]
    assert (det["count"], det["baseline_offset"], det["baseline_accuracy"]) == (2, 1, 0.5)
    amod = result["relations"]["amod"]  # new -> list, offset +1
    assert (amod["baseline_offset"], amod["baseline_accuracy"]) == (1, 1.0)
    assert 1 <= det["layer"] <= 2 and 0 <= det["head"] < 2
    assert len(result["per_layer"]) == 2
    assert max(r["accuracy"] for r in result["relations"].values()) <= 1.0


def test_punctuation_table():
    assert punctuation_ids(["[CLS]", ".", "a", ",", "##."]).tolist() == [
        False, True, False, True, False]


def test_a_pruned_encoder_has_nan_for_its_missing_heads(tiny_pair, analysis_data):
    encoder, pre = tiny_pair
    sentences = read_conllu(str(analysis_data / "syntax_train.conllu"))[:4]
    batches = lambda: sentence_batches(pre, [s.words for s in sentences], 8, 512)
    table = punctuation_ids(pre.vocab.tokens)
    full = attention_statistics(encoder, batches(), sentences, table)
    pruned = attention_statistics(encoder.prune_heads({0: [1]}), batches(), sentences, table)
    for name, values in pruned["statistics"].items():
        assert np.isnan(values[0][1]) and not np.isnan(values[1]).any(), name
        # Layer 0 reads the embeddings: its kept head attends as before.
        assert np.isclose(values[0][0], full["statistics"][name][0][0], atol=1e-5), name
    # The best head of a relation is one the encoder has (layer numbers count from 1).
    assert all((r["layer"], r["head"]) != (1, 1) for r in pruned["relations"].values())
    assert len(pruned["per_layer"]) == 2 and not np.isnan(pruned["per_layer"]).any()
