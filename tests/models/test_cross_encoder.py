"""tfbert.CrossEncoder: parity with a transformers/sentence-transformers cross-encoder
(randomly initialised, saved locally) after conversion, predict/rank shapes and order,
the strings-in export reloaded in a fresh process, and one-line errors."""

import json

import numpy as np
import pytest

import tfbert
from tfbert import CrossEncoder
from tfbert.convert import from_huggingface

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

QUERY = "How do I open a file for reading?"
PASSAGES = [
    "Open file and return a corresponding file object.",
    "Return a sorted list of the items in the iterable.",
    "The socket must be bound to an address and listening for connections.",
    "Join one or more path components intelligently.",
    "ok",
]


@pytest.fixture(scope="module")
def hf_cross_encoder(minilm_dir, tmp_path_factory):
    """A random BertForSequenceClassification (num_labels=1) with the real
    uncased tokenizer files, saved as sentence-transformers saves a cross-encoder."""
    out = tmp_path_factory.mktemp("hf_ce") / "ce"
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64,
                                     max_position_embeddings=64, num_labels=1)
    model = transformers.BertForSequenceClassification(config).eval()
    with torch.no_grad():  # larger than the init scale, so the score varies with the text
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(str(out), safe_serialization=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(minilm_dir))
    tokenizer.model_max_length = 64
    tokenizer.save_pretrained(str(out))
    return out


@pytest.fixture(scope="module")
def converted(hf_cross_encoder, tmp_path_factory):
    return from_huggingface(hf_cross_encoder, tmp_path_factory.mktemp("tf_ce") / "ce")


def test_converted_cross_encoder_matches_sentence_transformers(hf_cross_encoder, converted):
    from sentence_transformers import CrossEncoder as STCrossEncoder

    reference = STCrossEncoder(str(hf_cross_encoder), max_length=64, device="cpu")
    ours = CrossEncoder.from_pretrained(converted, seq_length=64)
    pairs = [(QUERY, p) for p in PASSAGES] + [(PASSAGES[1], PASSAGES[2] * 8)]  # one truncated
    want = reference.predict(pairs, batch_size=3)
    got = ours.predict(pairs, batch_size=3)
    assert np.abs(got - want).max() <= 1e-5, np.abs(got - want).max()
    assert np.std(want) > 1e-3  # the scores differ from pair to pair: the test can fail
    logits = ours.predict(pairs, activation=None)
    np.testing.assert_allclose(1 / (1 + np.exp(-logits)), got, atol=1e-6)
    # rank: the same order and scores as sentence-transformers'.
    ref_hits = reference.rank(QUERY, PASSAGES, top_k=3)
    hits = ours.rank(QUERY, PASSAGES, top_k=3, return_documents=True)
    assert [h["corpus_id"] for h in hits] == [h["corpus_id"] for h in ref_hits]
    np.testing.assert_allclose([h["score"] for h in hits], [h["score"] for h in ref_hits],
                               atol=1e-5)
    assert hits[0]["text"] == PASSAGES[hits[0]["corpus_id"]]
    assert len(ours.rank(QUERY, PASSAGES)) == len(PASSAGES)


def test_save_reload_and_export_in_fresh_process(converted, tmp_path, run_python):
    model = CrossEncoder.from_pretrained(converted, seq_length=48)
    saved = model.save_pretrained(str(tmp_path / "saved"))
    again = CrossEncoder.from_pretrained(saved)
    assert again.preprocessor.seq_length == 48
    pairs = [(QUERY, p) for p in PASSAGES]
    want = model.predict(pairs)
    np.testing.assert_allclose(again.predict(pairs), want, atol=1e-6)
    export = model.export(str(tmp_path / "export"))
    out = run_python(f"""
import json, tensorflow as tf, tensorflow_text
m = tf.saved_model.load({export!r})
sig = m.signatures["serving_default"]
r = sig(query=tf.constant({json.dumps([q for q, _ in pairs])}),
        passage=tf.constant({json.dumps([p for _, p in pairs])}))
print(json.dumps({{k: v.numpy().tolist() for k, v in r.items()}}))
""")
    served = json.loads(out.strip().splitlines()[-1])
    assert sorted(served) == ["logits", "score"]
    np.testing.assert_allclose(served["score"], want, atol=1e-5)


def test_mean_pooling_head_saves_reloads_and_exports(converted, tmp_path, run_python):
    base = CrossEncoder.from_pretrained(converted, seq_length=48)
    model = CrossEncoder.from_encoder(base.model.encoder, base.preprocessor, pooling="mean")
    pairs = [(QUERY, p) for p in PASSAGES]
    want = model.predict(pairs, activation=None)
    assert np.std(want) > 1e-3 and np.abs(want - base.predict(pairs, activation=None)).max() > 1e-3
    saved = model.save_pretrained(str(tmp_path / "saved"))
    assert json.loads((tmp_path / "saved" / "config.json").read_text())["cross_encoder"] == {
        "seq_length": 48, "pooling": "mean"}
    again = CrossEncoder.from_pretrained(saved)
    assert again.model.pooling == "mean"
    np.testing.assert_allclose(again.predict(pairs, activation=None), want, atol=1e-5)
    export = again.export(str(tmp_path / "export"))
    out = run_python(f"""
import json, tensorflow as tf, tensorflow_text
sig = tf.saved_model.load({export!r}).signatures["serving_default"]
r = sig(query=tf.constant({json.dumps([q for q, _ in pairs])}),
        passage=tf.constant({json.dumps([p for _, p in pairs])}))
print(json.dumps(r["logits"].numpy().tolist()))
""")
    np.testing.assert_allclose(json.loads(out.strip().splitlines()[-1]), want, atol=1e-5)
    # A config naming a pooling this version does not have: one line.
    config = json.loads((tmp_path / "saved" / "config.json").read_text())
    config["cross_encoder"]["pooling"] = "avg"
    (tmp_path / "saved" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"config.json:cross_encoder: pooling: must be one of "
                                         r"\['cls', 'mean', 'max'\], got 'avg'") as e:
        CrossEncoder.from_pretrained(saved)
    assert "\n" not in str(e.value)


def test_bad_input_is_one_clear_line(converted, tmp_path):
    model = CrossEncoder.from_pretrained(converted, seq_length=32)
    cases = [
        (lambda: model.predict([]), ValueError, "empty list of pairs"),
        (lambda: model.predict([("q", "")]), ValueError, "pair 0: empty passage"),
        (lambda: model.predict([("", "p")]), ValueError, "pair 0: empty query"),
        (lambda: model.predict(["q p"]), TypeError, r"pair 0 must be \(query, passage\)"),
        (lambda: model.predict("q"), TypeError, "list of"),
        (lambda: model.rank("", ["p"]), ValueError, "empty query"),
        (lambda: model.rank("q", "p"), TypeError, "one str"),
        (lambda: model.rank("q", ["p"], top_k=0), ValueError, "top_k must be >= 1"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message) as e:
            call()
        assert "\n" not in str(e.value)
    # A sentence encoder checkpoint has no classifier head.
    encoder_only = tfbert.SentenceEncoder.from_pretrained(converted).save_pretrained(
        str(tmp_path / "bi"))
    with pytest.raises(ValueError, match="no classifier head.*not a cross-encoder"):
        CrossEncoder.from_pretrained(encoder_only)
    with pytest.raises(FileNotFoundError, match="not found"):
        CrossEncoder.from_pretrained(str(tmp_path / "missing"))


def test_three_label_classifier_is_not_a_cross_encoder(tmp_path, minilm_dir):
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1,
                                     num_attention_heads=4, intermediate_size=64,
                                     max_position_embeddings=64, num_labels=3)
    transformers.BertForSequenceClassification(config).save_pretrained(str(tmp_path / "hf"))
    (tmp_path / "hf" / "vocab.txt").write_text((minilm_dir / "vocab.txt").read_text())
    out = from_huggingface(tmp_path / "hf", tmp_path / "out")
    with pytest.raises(ValueError, match="3 outputs; a cross-encoder scores with one"):
        CrossEncoder.from_pretrained(out)
