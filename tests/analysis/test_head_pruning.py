"""tfbert.analysis.head_pruning and `BertEncoder.prune_heads`: a pruned
encoder is the masked encoder (heads gated to 0) to 1e-5 and really smaller;
it saves and loads (.keras, checkpoint) with the same outputs; a pruned
strings-in model exports and serves in a fresh process; the choice of heads
follows the importance; each bad input is one line."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertConfig, BertEncoder, TextClassifier
from tfbert.analysis.head_importance import head_importance, masked_outputs
from tfbert.analysis.head_pruning import (check_fraction, count_heads,
                                          heads_to_prune_by_importance,
                                          heads_to_prune_iteratively, prune_heads)
from tfbert.checkpoint import save_checkpoint

TEXTS = ["Open the file before you read it.", "The queue is empty when no items remain.",
         "A thread can wait for the lock."]
VOCAB = "tests/data/pretraining/vocab.txt"
# The tiny preset with 4 heads of 32 per layer: layer 0 loses two, layer 1 all four.
HEADS = {0: [1, 3], 1: [0, 1, 2, 3]}


def gates_of(heads, layers=2, per_layer=4):
    """The head mask equal to pruning `heads`: 0 for a removed head."""
    gates = np.ones([layers, per_layer], np.float32)
    for layer, indices in heads.items():
        gates[layer, indices] = 0.0
    return tf.constant(gates)


@pytest.fixture(scope="module")
def setup(uncased_vocab_file, tmp_path_factory):
    keras.utils.set_random_seed(0)
    config = BertConfig.from_preset("tiny", num_heads=4, dropout_rate=0.0,
                                    attention_dropout_rate=0.0)
    encoder = BertEncoder(config)
    from tfbert import BertPreprocessor

    pre = BertPreprocessor(vocab_file=uncased_vocab_file, lower_case=True, seq_length=16)
    inputs = pre.bert_pack_inputs([pre.tokenize(TEXTS)], seq_length=16)
    return encoder, inputs


def same_outputs(a, b, inputs, atol=1e-5):
    mask = inputs["input_mask"].numpy()[..., None]
    np.testing.assert_allclose(a["sequence_output"].numpy() * mask,
                               b["sequence_output"].numpy() * mask, atol=atol)
    np.testing.assert_allclose(a["pooled_output"], b["pooled_output"], atol=atol)


def test_pruned_encoder_is_the_masked_encoder_and_smaller(setup):
    encoder, inputs = setup
    before = encoder.get_named_weights()
    pruned = encoder.prune_heads(HEADS)
    assert pruned is not encoder and pruned.config.heads_per_layer == (2, 0)
    assert encoder.config.heads_per_layer is None  # the original is left as it was
    assert all(np.array_equal(v, before[k]) for k, v in encoder.get_named_weights().items())
    assert (count_heads(encoder), count_heads(pruned)) == (8, 2)
    same_outputs(pruned(inputs), masked_outputs(encoder, inputs, gates_of(HEADS)), inputs)
    # The heads mattered: unmasked, the outputs differ.
    assert not np.allclose(pruned(inputs)["pooled_output"], encoder(inputs)["pooled_output"],
                           atol=1e-3)
    # Each head: query, key and value kernels [128, 32] and biases [32], and 32
    # rows of the output projection [32, 128].
    per_head = 3 * (128 * 32 + 32) + 32 * 128
    assert encoder.count_params() - pruned.count_params() == 6 * per_head
    probs = BertEncoder(pruned.config, return_attention_probs=True)(inputs)["attention_probs"]
    assert [p.shape[1] for p in probs] == [2, 0]


def test_pruning_twice_counts_the_layers_current_heads(setup):
    encoder, inputs = setup
    twice = encoder.prune_heads({0: [1, 3]}).prune_heads({0: [0]})  # original head 0 goes
    assert twice.config.heads_per_layer == (1, 4)
    same_outputs(twice(inputs), masked_outputs(encoder, inputs, gates_of({0: [0, 1, 3]})),
                 inputs)


def test_pruned_encoder_saves_and_loads(setup, tmp_path, uncased_vocab_file):
    encoder, inputs = setup
    pruned = encoder.prune_heads(HEADS)
    expected = pruned(inputs)
    path = str(tmp_path / "pruned.keras")
    pruned.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.config.heads_per_layer == (2, 0)
    same_outputs(loaded(inputs), expected, inputs, atol=1e-6)
    save_checkpoint(str(tmp_path / "ckpt"), pruned.config, pruned.get_named_weights(),
                    uncased_vocab_file, True)
    config = json.load(open(tmp_path / "ckpt" / "config.json"))["encoder"]
    assert config["heads_per_layer"] == [2, 0]
    same_outputs(BertEncoder.from_pretrained(str(tmp_path / "ckpt"))(inputs), expected, inputs,
                 atol=1e-6)


def test_pruned_encoder_converts_to_tflite(setup, tmp_path):
    from ai_edge_litert.interpreter import Interpreter

    from tfbert.export.tflite import export_encoder_tflite

    encoder, inputs = setup
    pruned = encoder.prune_heads(HEADS)  # layer 1 has no heads left
    path = export_encoder_tflite(pruned, str(tmp_path / "pruned.tflite"), seq_length=16)
    runner = Interpreter(model_path=path).get_signature_runner("serve")
    ids = {k: v.numpy() for k, v in inputs.items()}
    out = runner(**ids)
    np.testing.assert_allclose(out["pooled_output"], pruned(ids)["pooled_output"], atol=1e-5)


def test_importance_of_a_pruned_encoder(setup):
    encoder, inputs = setup
    classifier = tf.constant(np.random.default_rng(0).normal(size=(128, 2)), tf.float32)

    def loss_of(outputs, y):
        logits = tf.matmul(outputs["pooled_output"], classifier)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))

    batches = [(inputs, tf.constant([0, 1, 1]))]
    pruned = encoder.prune_heads({0: [1, 3], 1: [2]})
    ours = head_importance(pruned, batches, loss_of, normalize=False)
    assert np.isnan(ours[0, 2:]).all() and np.isnan(ours[1, 3:]).all()
    # The kept heads' gradients are the full encoder's with the pruned gates at 0.
    gates = tf.Variable(gates_of({0: [1, 3], 1: [2]}))
    with tf.GradientTape() as tape:
        loss = loss_of(masked_outputs(encoder, inputs, gates), batches[0][1])
    full = np.abs(tape.gradient(loss, gates).numpy())
    np.testing.assert_allclose(ours[0, :2], full[0, [0, 2]], rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(ours[1, :3], full[1, [0, 1, 3]], rtol=1e-4, atol=1e-7)
    normalized = head_importance(pruned, batches, loss_of)
    np.testing.assert_allclose(np.sqrt(np.nansum(normalized**2, axis=1)), 1.0, rtol=1e-6)
    # Iterative pruning names heads in the encoder's own numbering.
    heads = heads_to_prune_iteratively(encoder, batches, loss_of, 0.5, step=0.25)
    assert sum(len(h) for h in heads.values()) == 4
    assert count_heads(prune_heads(encoder, heads)) == 4


def test_heads_by_importance_are_the_global_least_important():
    importance = np.array([[0.9, 0.1, 0.4, 0.3], [0.2, 0.8, np.nan, np.nan]])
    assert heads_to_prune_by_importance(importance, 0.5) == {0: [1, 3], 1: [0]}
    assert heads_to_prune_by_importance(importance, 0.0) == {}
    assert heads_to_prune_by_importance(np.ones([2, 2]), 0.5) == {0: [0, 1]}  # ties: low first


def test_pruned_text_classifier_saves_exports_and_serves(tmp_path, run_python):
    keras.utils.set_random_seed(0)
    model = TextClassifier.from_preset("tiny", vocab_file=VOCAB, num_classes=2, seq_length=32,
                                       label_list=["no", "yes"], pairs=False)
    heads = {0: [0]}
    pruned = model.prune_heads(heads)
    assert isinstance(pruned, TextClassifier) and pruned.encoder.config.heads_per_layer == (1, 2)
    assert model.encoder.config.heads_per_layer is None
    # The pruned model is the original with the head masked.
    ids = model.preprocess((tf.constant(TEXTS),))
    pooled = masked_outputs(model.encoder, ids, gates_of(heads, per_layer=2))["pooled_output"]
    logits = pruned.predict(TEXTS, verbose=0)
    np.testing.assert_allclose(logits, model.get_layer("logits")(pooled), atol=1e-5)

    pruned.save(str(tmp_path / "pruned.keras"))
    loaded = keras.models.load_model(str(tmp_path / "pruned.keras"))
    np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0), logits, atol=1e-6)
    pruned.save_pretrained(str(tmp_path / "ckpt"))
    again = TextClassifier.from_pretrained(str(tmp_path / "ckpt"))
    np.testing.assert_allclose(again.predict(TEXTS, verbose=0), logits, atol=1e-6)

    export_dir = pruned.export(str(tmp_path / "export" / "1"))
    out = run_python(f"""
import json
import tensorflow as tf, tensorflow_text  # the tokenizer ops
sig = tf.saved_model.load({export_dir!r}).signatures["serving_default"]
print(json.dumps(sig(text=tf.constant({TEXTS!r}))["logits"].numpy().tolist()))
""")
    np.testing.assert_allclose(json.loads(out.strip().splitlines()[-1]), logits, atol=1e-5)


@pytest.mark.parametrize("name,kwargs", [("TokenClassifier", {"label_list": ["O", "B-X"]}),
                                         ("QuestionAnswerer", {}), ("CrossEncoder", {})])
def test_other_strings_models_prune_to_their_own_class(name, kwargs):
    import tfbert

    model = getattr(tfbert, name).from_preset("tiny", vocab_file=VOCAB, seq_length=128, **kwargs)
    pruned = model.prune_heads({1: [0]})
    assert type(pruned) is type(model) and pruned.encoder.config.heads_per_layer == (2, 1)
    head = model.get_layer(model.head_layer)
    np.testing.assert_array_equal(pruned.get_layer(model.head_layer).kernel, head.kernel)


def test_sentence_encoder_and_ids_models_prune_too(setup):
    from tfbert import SentenceEncoder
    from tfbert.models.classifier import BertClassifier

    encoder, inputs = setup
    gates = gates_of(HEADS)
    sentence = SentenceEncoder(encoder, pooling="cls", dense_units=16)
    pruned = sentence.prune_heads(HEADS)
    assert type(pruned) is SentenceEncoder and pruned.encoder.config.heads_per_layer == (2, 0)
    np.testing.assert_array_equal(pruned.get_layer("sentence_dense").kernel,
                                  sentence.get_layer("sentence_dense").kernel)
    classifier = BertClassifier(encoder, num_classes=3, dropout=0.0)
    pruned = classifier.prune_heads(HEADS)
    pooled = masked_outputs(encoder, inputs, gates)["pooled_output"]
    np.testing.assert_allclose(pruned(inputs), classifier.get_layer("logits")(pooled), atol=1e-5)


def test_bad_input_is_one_line(setup, raises_one_line_from_tfbert, tmp_path,
                               uncased_vocab_file):
    encoder, _ = setup
    check = raises_one_line_from_tfbert
    check("layer", lambda: encoder.prune_heads({2: [0]}), r"layer 2 does not exist; .* 0 \.\. 1")
    check("head", lambda: encoder.prune_heads({0: [4]}), r"layer 0 has no head 4; .* 0 \.\. 3")
    check("twice", lambda: encoder.prune_heads({1: [1, 1]}), "layer 1 names a head twice")
    check("not a dict", lambda: encoder.prune_heads([0, 1]), r"takes \{layer: \[head")
    check("emptied layer", lambda: encoder.prune_heads(HEADS).prune_heads({1: [0]}),
          "layer 1 has no heads left")
    check("not a model", lambda: prune_heads("model", {}), "takes a BertEncoder")
    for fraction in (1.0, -0.1, 2, "0.5"):
        check(f"fraction {fraction!r}", lambda: check_fraction(fraction),
              r"fraction must be a number in \[0, 1\)")
    check("importance fraction", lambda: heads_to_prune_by_importance(np.ones([2, 2]), 1),
          r"in \[0, 1\), got 1")
    tiny = BertConfig.from_preset("tiny")
    check("shared prune", lambda: BertEncoder(tiny.replace(share_layers=True)).prune_heads(
        {0: [0]}), "the layers are shared")

    from tfbert.convert import to_huggingface

    pruned = encoder.prune_heads(HEADS)
    save_checkpoint(str(tmp_path / "ckpt"), pruned.config, pruned.get_named_weights(),
                    uncased_vocab_file, True)
    check("to_huggingface", lambda: to_huggingface(str(tmp_path / "ckpt"), str(tmp_path / "hf")),
          "pruned attention heads")


def test_get_config_round_trips(setup):
    encoder, _ = setup
    pruned = encoder.prune_heads(HEADS)
    again = BertEncoder.from_config(pruned.get_config())
    assert again.config == pruned.config and again.config.heads_per_layer == (2, 0)
    assert [b.get_config()["head_size"] for b in again.transformer_layers] == [32, 32]
