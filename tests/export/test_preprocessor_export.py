"""Standalone preprocessor SavedModel: fresh-process load, identical outputs, op rule."""

import json
import os
import re
import subprocess

import numpy as np
import pytest
import tensorflow as tf
from fresh_python import python_command

from tfbert.export.op_check import check_op_rule
from tfbert.export.preprocessor import export_preprocessor, load_preprocessor
from tfbert.text import BertPreprocessor

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXTS = [
    "Hello, World! The naïve café's crème brûlée.",
    "東京は日本の首都です。 한국어 텍스트",
    "ΟΔΟΣ Straße ﬁne \u200bzero\u00a0width",
    "",
    "   ",
    "x" * 120,
]
PAIRS_B = ["second segment", "b", "", "Ünïcödé", "c", "d"]


@pytest.fixture(scope="module")
def exported(uncased_vocab_file, tmp_path_factory):
    pre = BertPreprocessor(uncased_vocab_file, lower_case=True, seq_length=24)
    path = export_preprocessor(pre, str(tmp_path_factory.mktemp("export") / "preprocessor"))
    return pre, path


def test_layout_and_op_rule(exported):
    _, path = exported
    assert sorted(os.listdir(path)) == ["assets", "fingerprint.pb", "saved_model.pb", "variables"]
    with open(os.path.join(path, "assets", "vocab.txt"), encoding="utf-8") as f:
        assert f.read().splitlines()[101:103] == ["[CLS]", "[SEP]"]
    ops = check_op_rule(path)
    assert "FastWordpieceTokenizeWithOffsets" in ops
    assert not {"RoundRobinTrim", "EagerPyFunc", "RegexSplitWithOffsets"} & set(ops)


def test_fresh_process_gives_identical_outputs(exported, tmp_path):
    pre, path = exported
    script = f"""
import json, sys
import tensorflow as tf
import tensorflow_text  # registers the tokenizer ops
m = tf.saved_model.load({path!r})
texts = tf.constant({TEXTS!r})
b = tf.constant({PAIRS_B!r})
out = {{k: v.numpy().tolist() for k, v in m(texts).items()}}
pairs = {{k: v.numpy().tolist() for k, v in m.signatures["pairs"](text_a=texts, text_b=b).items()}}
ids, starts, limits = m.tokenize_with_offsets(texts)
tok = m.tokenize(texts)
packed = m.bert_pack_inputs([tok, m.tokenize(b)], seq_length=24)
# Ragged rank 1 (merge_dims(-2, -1)) and 2, 1 to 3 segments, any seq_length.
segments = [m.tokenize(texts), m.tokenize(b), m.tokenize(texts[::-1])]
ranked = {{}}
for rank in (1, 2):
    for count in (1, 2, 3):
        segs = [s.merge_dims(-2, -1) if rank == 1 else s for s in segments[:count]]
        for seq_length in (None, 64):
            kw = {{}} if seq_length is None else {{"seq_length": seq_length}}
            key = f"{{rank}}-{{count}}-{{seq_length}}"
            ranked[key] = {{k: v.numpy().tolist() for k, v in m.bert_pack_inputs(segs, **kw).items()}}
# Keras 3: the endpoint as a TFSMLayer (default seq_length).
import keras
layer = keras.layers.TFSMLayer({path!r}, call_endpoint="bert_pack_inputs")
tfsm = layer([segments[0].merge_dims(-2, -1), segments[1].merge_dims(-2, -1)])["input_word_ids"]
print(json.dumps({{"single": out, "pairs": pairs, "tokens": tok.to_list(), "ranked": ranked,
                  "tfsm": tfsm.numpy().tolist(),
                  "starts": starts.to_list(), "limits": limits.to_list(),
                  "packed": packed["input_word_ids"].numpy().tolist(),
                  "special": {{k: int(v) for k, v in m.get_special_tokens_dict().items()}},
                  "signatures": sorted(m.signatures)}}))
"""
    result = subprocess.run([python_command(), "-c", script], capture_output=True, text=True,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])

    texts, b = tf.constant(TEXTS), tf.constant(PAIRS_B)
    for key, value in pre(texts).items():
        assert got["single"][key] == value.numpy().tolist(), key
    for key, value in pre([texts, b]).items():
        assert got["pairs"][key] == value.numpy().tolist(), key
    ids, starts, limits = pre.tokenize_with_offsets(texts)
    assert got["tokens"] == pre.tokenize(texts).to_list() == ids.to_list()
    assert got["starts"] == starts.to_list() and got["limits"] == limits.to_list()
    assert got["packed"] == pre.bert_pack_inputs([pre.tokenize(texts), pre.tokenize(b)])[
        "input_word_ids"].numpy().tolist()
    segments = [pre.tokenize(texts), pre.tokenize(b), pre.tokenize(tf.constant(TEXTS[::-1]))]
    for key, outputs in got["ranked"].items():
        count, seq_length = int(key.split("-")[1]), key.split("-")[2]
        want = pre.bert_pack_inputs(segments[:count], None if seq_length == "None" else 64)
        for name, value in want.items():
            assert outputs[name] == value.numpy().tolist(), (key, name)
    assert got["tfsm"] == pre.bert_pack_inputs(segments[:2])["input_word_ids"].numpy().tolist()
    assert got["special"] == pre.vocab.special_tokens_dict()
    assert got["signatures"] == ["bert_pack_inputs", "pairs", "serving_default", "tokenize",
                                 "tokenize_with_offsets"]


def test_serving_signatures_dense(exported):
    pre, path = exported
    loaded = load_preprocessor(path)
    texts = tf.constant(TEXTS[:3])
    parts = loaded.signatures["tokenize"](text=texts)
    ragged = tf.RaggedTensor.from_nested_row_splits(
        parts["token_ids"], [parts["word_row_splits"], parts["piece_row_splits"]]
    )
    assert ragged.to_list() == pre.tokenize(texts).to_list()
    a, b = pre.tokenize(texts).merge_dims(1, 2), pre.tokenize(tf.constant(PAIRS_B[:3])).merge_dims(1, 2)
    packed = loaded.signatures["bert_pack_inputs"](
        ids_a=a.flat_values, row_lengths_a=tf.cast(a.row_lengths(), tf.int32),
        ids_b=b.flat_values, row_lengths_b=tf.cast(b.row_lengths(), tf.int32),
    )
    np.testing.assert_array_equal(packed["input_type_ids"], pre([texts, tf.constant(PAIRS_B[:3])])["input_type_ids"])


@pytest.mark.slow
def test_export_tool_and_check(exported, uncased_vocab_file, tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "vocab.txt").write_bytes(open(uncased_vocab_file, "rb").read())
    (ckpt / "config.json").write_text(json.dumps({"format": "tfbert-checkpoint", "lower_case": True}))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    out_dir = tmp_path / "out"
    run = lambda *args: subprocess.run([python_command(), os.path.join(REPO, "tools", "export.py"), *args],
                                       capture_output=True, text=True, env=env)
    result = run(f"--checkpoint_dir={ckpt}", "--kind=preprocessor", "--format=saved_model",
                 f"--output_dir={out_dir}", "--seq_length=16")
    assert result.returncode == 0, result.stderr[-3000:]
    result = run(f"--check={out_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "FastWordpieceTokenizeWithOffsets" in result.stdout and "op rule: OK" in result.stdout
    assert "serving_default: ['text']" in result.stdout
    result = run(f"--checkpoint_dir={ckpt}", "--kind=preprocessor", "--format=tflite",
                 f"--output_dir={out_dir}")
    assert result.returncode != 0 and "TFLite has no kernels" in result.stderr


def test_seq_length_override(uncased_vocab_file, tmp_path):
    pre = BertPreprocessor(uncased_vocab_file, seq_length=8)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        export_preprocessor(pre, str(tmp_path / "bad"), seq_length=600)
    assert not (tmp_path / "bad").exists()


HUB_TUTORIAL = """
import json, os
import numpy as np
import tensorflow as tf, tensorflow_hub as hub, tensorflow_text, tf_keras
preprocessor = hub.load(PRE)
# TF Hub's "Classify text with BERT" pair example, unchanged but for the paths.
text_inputs = [tf_keras.layers.Input(shape=(), dtype=tf.string) for _ in range(2)]
tokenize = hub.KerasLayer(preprocessor.tokenize)
tokenized_inputs = [tokenize(segment) for segment in text_inputs]
seq_length = 64
bert_pack_inputs = hub.KerasLayer(preprocessor.bert_pack_inputs,
                                  arguments=dict(seq_length=seq_length))
encoder_inputs = bert_pack_inputs(tokenized_inputs)
# TF Model Garden's ragged rank 1 form: wordpieces without the word level.
flat = tf_keras.layers.Lambda(lambda t: t.merge_dims(-2, -1))
flat_inputs = bert_pack_inputs([flat(t) for t in tokenized_inputs])
flat_model = tf_keras.Model(text_inputs, flat_inputs["input_word_ids"])
one = hub.KerasLayer(preprocessor.bert_pack_inputs, arguments=dict(seq_length=32))(
    [flat(tokenize(text_inputs[0]))])
one_model = tf_keras.Model(text_inputs[0], one["input_word_ids"])
encoder = hub.KerasLayer(ENC, trainable=True)
outputs = encoder(encoder_inputs)
model = tf_keras.Model(text_inputs, [outputs["pooled_output"], encoder_inputs["input_type_ids"]])
pooled, types = model([tf.constant(A), tf.constant(B)])
# Three segments, any seq_length, straight on the loaded object.
three = preprocessor.bert_pack_inputs([preprocessor.tokenize(tf.constant(s)) for s in (A, B, C)],
                                      seq_length=20)
print(json.dumps({"pooled": list(pooled.shape), "types": types.numpy().tolist(),
                  "flat": flat_model([tf.constant(A), tf.constant(B)]).numpy().tolist(),
                  "one": one_model(tf.constant(A)).numpy().tolist(),
                  "three": {k: v.numpy().tolist() for k, v in three.items()}}))
"""


def test_tf_hub_tutorial_pairs_and_three_segments(uncased_vocab_file, tmp_path, run_python):
    from tfbert import BertConfig, BertEncoder
    from tfbert.export.encoder import export_encoder

    config = BertConfig.from_preset("tiny", type_vocab_size=3)
    pre = BertPreprocessor(uncased_vocab_file, seq_length=128, max_segments=3)
    pre_dir = export_preprocessor(pre, str(tmp_path / "preprocessor"))
    enc_dir = export_encoder(BertEncoder(config), str(tmp_path / "encoder"),
                             vocab_file=uncased_vocab_file, lower_case=True)
    a, b, c = ["The movie was great!", "Short."], ["I agree.", "Long " * 50], ["Yes", "No"]
    source = f"PRE, ENC = {pre_dir!r}, {enc_dir!r}\nA, B, C = {a!r}, {b!r}, {c!r}\n" + HUB_TUTORIAL
    got = json.loads(run_python(source, env={"TF_USE_LEGACY_KERAS": "1"}).strip().splitlines()[-1])
    assert got["pooled"] == [2, 128]
    want = pre.bert_pack_inputs([pre.tokenize(tf.constant(a)), pre.tokenize(tf.constant(b))],
                                seq_length=64)
    assert got["types"] == want["input_type_ids"].numpy().tolist()
    assert len(got["types"][0]) == 64 and max(got["types"][1]) == 1
    assert got["flat"] == want["input_word_ids"].numpy().tolist()
    assert got["one"] == pre.bert_pack_inputs([pre.tokenize(tf.constant(a))], seq_length=32)[
        "input_word_ids"].numpy().tolist()
    want3 = pre.bert_pack_inputs([pre.tokenize(tf.constant(s)) for s in (a, b, c)], 20)
    for name, values in got["three"].items():
        np.testing.assert_array_equal(values, want3[name])
    assert max(got["three"]["input_type_ids"][0]) == 2


def test_exported_pack_checks_seq_length_in_the_graph(exported):
    _, path = exported
    loaded = load_preprocessor(path)
    tokens = loaded.tokenize(tf.constant(["hello world"]))
    assert loaded.bert_pack_inputs([tokens], seq_length=tf.constant(5))["input_word_ids"].shape == (1, 5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="seq_length exceeds"):
        loaded.bert_pack_inputs([tokens], seq_length=tf.constant(600))


def test_bad_input_at_the_loaded_preprocessor(exported):
    """One line naming the input, the expected dtype/shape and what came."""
    _, path = exported
    loaded = load_preprocessor(path)
    serve = loaded.signatures["serving_default"]
    with pytest.raises(TypeError, match=r"^serving_default: input 'text' must be tf.string "
                                        r"\[batch\]; got int32 \(2,\)\.$"):
        serve(text=tf.constant([1, 2]))
    with pytest.raises(TypeError, match=r"^serving_default takes text \(tf.string \[batch\]\); "
                                        r"got unknown input 'txt'\.$"):
        serve(txt=tf.constant(["a"]))
    with pytest.raises(TypeError, match=r"pairs takes text_a .*, text_b .*; got no input 'text_b'"):
        loaded.signatures["pairs"](text_a=["a"])
    with pytest.raises(ValueError, match=r"input 'text' must be tf.string \[batch\]; got shape \(2, 2\)"):
        serve(text=tf.constant([["a", "b"], ["c", "d"]]))
    assert serve(text=["hello"])["input_word_ids"].shape == (1, 24)  # lists are fine
    with pytest.raises(ValueError, match=r"1-D tf.string batch \[batch\], got shape \(2, 2\)"):
        loaded(tf.constant([["a", "b"], ["c", "d"]]))
    tokens = loaded.tokenize(["hello world"])
    with pytest.raises(ValueError, match=r"list of 1 to 3 segments; got 4"):
        loaded.bert_pack_inputs([tokens] * 4)
    with pytest.raises(TypeError, match=r"segment 0 must be an int RaggedTensor .* got EagerTensor"):
        loaded.bert_pack_inputs([tf.constant([[1, 2]])])
    with pytest.raises(TypeError, match=r"segment 1 must hold integer token ids; got float32"):
        loaded.bert_pack_inputs([tokens, tf.cast(tokens, tf.float32)])
    # Mixed ragged ranks and int64 ids are normalized for Python callers.
    mixed = loaded.bert_pack_inputs([tokens, tf.cast(tokens.merge_dims(-2, -1), tf.int64)])
    assert mixed["input_word_ids"].numpy()[0, :6].tolist() == [101, 7592, 2088, 102, 7592, 2088]


def test_served_signature_checks_rank_in_its_graph(exported):
    """The raw signature (as TF Serving runs it) names the input itself."""
    from tfbert.export.serving import _first_line

    _, path = exported
    raw = tf.saved_model.load(path)
    for name, inputs in (("serving_default", {"text": tf.constant([["a", "b"], ["c", "d"]])}),
                         ("tokenize", {"text": tf.constant("a")}),
                         ("pairs", {"text_a": tf.constant(["a"]), "text_b": tf.constant([["b"]])})):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=rf"{name}: input \w+ must be a 1-D tf.string batch, shape "
                                 r"\(batch,\); got shape\] \[[\d ]*\]"):
            raw.signatures[name](**inputs)
    # What serving.predict (and so a REST client) shows: the first line.
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        raw.signatures["serving_default"](text=tf.constant([["a", "b"]]))
    assert _first_line(error.value.message) == (
        "serving_default: input text must be a 1-D tf.string batch, shape (batch,); "
        "got shape [1 2]")


@pytest.fixture()
def small_filesystem(tmp_path):
    """A real 12 MB tmpfs (root only): room for one preprocessor export, not two."""
    mount = tmp_path / "small"
    mount.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", str(mount)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_export_tool_on_a_full_filesystem(exported, uncased_vocab_file, small_filesystem, tmp_path):
    """One line naming the directory and the space needed; no partial export
    or temporary directory; the earlier export at that path intact."""
    import hashlib
    import shutil

    _, path = exported
    out_dir = small_filesystem / "preprocessor"
    shutil.copytree(path, out_dir)  # the earlier export

    def digest():
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(out_dir.rglob("*")) if p.is_file()}

    before = digest()
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "vocab.txt").write_bytes(open(uncased_vocab_file, "rb").read())
    (ckpt / "config.json").write_text(json.dumps({"format": "tfbert-checkpoint", "lower_case": True}))
    result = subprocess.run(
        [python_command(), os.path.join(REPO, "tools", "export.py"), f"--checkpoint_dir={ckpt}",
         "--kind=preprocessor", f"--output_dir={out_dir}", "--seq_length=24"],
        capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 1, result.stderr[-3000:]
    errors = [l for l in result.stderr.splitlines() if l.startswith("export: ")]
    assert "Traceback" not in result.stderr and len(errors) == 1, result.stderr[-3000:]
    assert re.fullmatch(rf"export: error: Cannot write {re.escape(str(out_dir))}: no space left on "
                        r"device \(the export needs \d+\.\d MB; \d+\.\d MB free there\)\.",
                        errors[0]), errors[0]
    assert os.listdir(small_filesystem) == ["preprocessor"]
    assert digest() == before
