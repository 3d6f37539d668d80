"""pack_inputs / BertPackInputs against tf-text's trimmers, with core ops only."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from tfbert.text import BertPackInputs, pack_inputs


def tf_text_reference(segments, seq_length, truncation):
    budget = seq_length - len(segments) - 1
    trimmer = (tf_text.RoundRobinTrimmer(budget) if truncation == "round_robin"
               else tf_text.WaterfallTrimmer(budget))
    trimmed = trimmer.trim([tf.cast(s, tf.int64) for s in segments])
    ids, types = tf_text.combine_segments(trimmed, start_of_sequence_id=1, end_of_segment_id=2)
    ids, mask = tf_text.pad_model_inputs(ids, seq_length)
    types, _ = tf_text.pad_model_inputs(types, seq_length)
    return ids.numpy(), mask.numpy(), types.numpy()


@pytest.mark.parametrize("truncation", ["round_robin", "waterfall"])
def test_matches_tf_text_trimmers(truncation):
    rng = np.random.default_rng(0)
    for _ in range(60):
        num_segments = int(rng.integers(1, 4))
        seq_length = int(rng.integers(num_segments + 1, 24))
        segments = [
            tf.ragged.constant([rng.integers(5, 99, rng.integers(0, 15)).tolist() for _ in range(4)],
                               dtype=tf.int32, ragged_rank=1)
            for _ in range(num_segments)
        ]
        out = pack_inputs(segments, seq_length, 1, 2, 0, truncation)
        ids, mask, types = tf_text_reference(segments, seq_length, truncation)
        np.testing.assert_array_equal(out["input_word_ids"], ids)
        np.testing.assert_array_equal(out["input_mask"], mask)
        np.testing.assert_array_equal(out["input_type_ids"], types)


def test_layout_and_three_segments():
    a = tf.ragged.constant([[10, 11, 12, 13]])
    b = tf.ragged.constant([[20, 21]])
    c = tf.ragged.constant([[30, 31, 32]])
    out = pack_inputs([a, b, c], 9, 101, 102)
    # budget 5, round robin: a gets 2, b 2, c 1.
    assert out["input_word_ids"].numpy().tolist() == [[101, 10, 11, 102, 20, 21, 102, 30, 102]]
    assert out["input_type_ids"].numpy().tolist() == [[0, 0, 0, 0, 1, 1, 1, 2, 2]]
    waterfall = pack_inputs([a, b, c], 9, 101, 102, truncation="waterfall")
    assert waterfall["input_word_ids"].numpy().tolist() == [[101, 10, 11, 12, 13, 102, 20, 102, 102]]


def test_word_level_segments_and_zero_batch():
    words = tf.ragged.constant([[[5, 6], [7]], [[8]]], ragged_rank=2)
    out = pack_inputs([words], 6, 1, 2)
    assert out["input_word_ids"].numpy().tolist() == [[1, 5, 6, 7, 2, 0], [1, 8, 2, 0, 0, 0]]
    empty = pack_inputs([tf.ragged.constant([], dtype=tf.int32, ragged_rank=1)], 4, 1, 2)
    assert empty["input_word_ids"].shape == (0, 4)


def test_errors():
    a = tf.ragged.constant([[1, 2]])
    with pytest.raises(ValueError, match="at least 3"):
        pack_inputs([a, a], 2, 1, 2)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        pack_inputs([a], 513, 1, 2)
    with pytest.raises(ValueError, match="truncation"):
        pack_inputs([a], 8, 1, 2, truncation="shortest_first")
    with pytest.raises(ValueError, match="layout must be one of"):
        pack_inputs([a], 8, 1, 2, layout="gpt")
    with pytest.raises(ValueError, match="at least 4 for the special tokens"):
        pack_inputs([a, a], 3, 1, 2, layout="roberta")
    with pytest.raises(TypeError, match="integer token ids"):
        pack_inputs([tf.ragged.constant([[1.0]])], 8, 1, 2)
    with pytest.raises(ValueError, match="at least one segment"):
        pack_inputs([], 8, 1, 2)


def test_layer_config_round_trip_and_graph_ops():
    layer = BertPackInputs(seq_length=8, start_of_sequence_id=101, end_of_segment_id=102,
                           truncation="waterfall")
    clone = BertPackInputs.from_config(layer.get_config())
    a, b = tf.ragged.constant([[7, 8, 9]]), tf.ragged.constant([[4, 5, 6]])
    for key, value in layer([a, b]).items():
        np.testing.assert_array_equal(clone([a, b])[key], value)
    # Core ops only: no tf-text trimmer op in the traced graph.
    spec = tf.RaggedTensorSpec([None, None], tf.int32)
    graph = tf.function(lambda x, y: layer([x, y])).get_concrete_function(spec, spec).graph
    ops = {op.type for op in graph.get_operations()}
    assert not any("Trim" in op or "TFText" in op for op in ops), ops


def test_tokenizer_and_packer_in_a_functional_model():
    import keras

    from tfbert.text import BertTokenizer

    tokenizer = BertTokenizer(vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"])
    text = keras.Input(shape=(), dtype="string")
    packed = BertPackInputs(seq_length=6, start_of_sequence_id=2, end_of_segment_id=3)([tokenizer(text)])
    model = keras.Model(text, packed)
    out = model(tf.constant(["hi hi", "x"]))
    assert out["input_word_ids"].numpy().tolist() == [[2, 5, 5, 3, 0, 0], [2, 1, 3, 0, 0, 0]]
