"""OpenVINO export (tfbert.export.openvino): the strings-in IR against the
SavedModel it was built from, and the tokenizer against tfbert's line by line.

Needs the `openvino` extra (`pip install -e ".[openvino]"`); skipped without
it. The MiniLM parity tests are slow (exports of the real 6-layer model)."""

import importlib.util
import json
import os
import pathlib
import shutil
import subprocess

import keras
import numpy as np
import pytest
import tensorflow as tf

pytest.importorskip("openvino")
pytest.importorskip("openvino_tokenizers")

from tfbert import BertConfig, BertEncoder, BertPreprocessor  # noqa: E402
from tfbert.export.openvino import export_openvino  # noqa: E402
from tfbert.export.openvino_model import OpenVINOModel, infer  # noqa: E402
from tfbert.export.task_model import export_task_model, load_task_model  # noqa: E402
from tfbert.tasks.classification import ClassificationConfig, ClassificationTask  # noqa: E402
from fresh_python import python_command

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
LABELS = ["negative", "neutral", "positive"]


def stress_corpus():
    """The Unicode stress corpus of tests/text/test_tokenizer_parity.py (7,395 lines)."""
    spec = importlib.util.spec_from_file_location(
        "tokenizer_parity", HERE.parent / "text" / "test_tokenizer_parity.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_corpus()


def classification_export(path, preprocessor, encoder, **config):
    task = ClassificationTask(ClassificationConfig(label_list=LABELS, **config)).prepare(
        preprocessor)
    model = task.build_model(encoder)
    task.export(model, path)
    return path


def saved_model_outputs(path, texts):
    signature = load_task_model(path).signatures["serving_default"]
    out = signature(**{k: tf.constant(v) for k, v in texts.items()})
    return {k: v.numpy() for k, v in out.items()}


def max_abs_diffs(got, want):
    """Max abs difference per float output; string and int outputs must be equal."""
    diffs = {}
    for name, expected in want.items():
        if expected.dtype == object:
            assert got[name].tolist() == [s.decode() for s in expected], name
        elif expected.dtype.kind == "i":
            diffs[name] = float(np.mean(got[name] != expected))  # share that differs
        else:
            diffs[name] = float(np.abs(got[name] - expected).max())
    return diffs


# === The tokenizer, line by line ===


def test_tokenizer_ids_match_tfbert_on_the_stress_corpus(uncased_vocab_file):
    import openvino as ov

    from tfbert.export.openvino_tokenizer import tokenizer_model
    from tfbert.text import BertTokenizer

    lines = stress_corpus()
    ours = BertTokenizer(vocab_file=uncased_vocab_file, lower_case=True)
    request = ov.Core().compile_model(
        tokenizer_model(uncased_vocab_file, True, seq_length=None), "CPU").create_infer_request()
    differing = []
    for start in range(0, len(lines), 256):
        batch = lines[start:start + 256]
        want = ours.tokenize_flat(tf.constant(batch)).to_list()
        got = infer(request, [np.array(batch)], len(batch))
        for i, (ids, mask, expected) in enumerate(zip(got["input_ids"], got["attention_mask"],
                                                      want)):
            if ids[mask == 1].tolist()[1:-1] != expected:  # without [CLS] ... [SEP]
                differing.append(batch[i])
    # The two gaps of a per-character table (as --tflite_tokenizer=exact):
    # - final sigma: the reference lower-cases a word-final Σ to ς (str.lower's
    #   context rule), the table maps Σ to σ everywhere (the Greek line, plain,
    #   NFD and upper-cased);
    # - word length: the reference makes a word of over 100 *characters* [UNK],
    #   openvino-tokenizers' WordPiece over 100 *bytes*: ж (2 bytes) x 98..100.
    final_sigma = [line for line in lines if line.startswith(("ΟΔΟΣ Σ ΣΑ.Σ", "ΟΔΟΣ Σ ΣΑ.Σ"))]
    long_words = ["ж" * n for n in (98, 99, 100)]
    assert len(final_sigma) == 3
    assert sorted(differing) == sorted(final_sigma + long_words), differing[:5]
    print(f"\nOpenVINO tokenizer: {len(lines) - len(differing)} of {len(lines)} stress-corpus "
          "lines give tfbert's ids")


# === Parity of the IR with the SavedModel (the real MiniLM weights) ===


@pytest.fixture(scope="module")
def minilm_exports(minilm_checkpoint, tmp_path_factory):
    """SavedModels of a MiniLM classifier (text), a pair classifier (text,
    text_b) and a sentence-embedding model, each with its fp32 IR."""
    from tfbert.tasks.sentence_embedding import SentenceEmbeddingConfig, SentenceEmbeddingTask

    tmp = tmp_path_factory.mktemp("openvino")
    encoder = BertEncoder.from_pretrained(minilm_checkpoint)
    preprocessor = BertPreprocessor.from_pretrained(minilm_checkpoint, seq_length=128)
    paths = {
        "text": classification_export(str(tmp / "text" / "1"), preprocessor, encoder),
        "pairs": classification_export(str(tmp / "pairs" / "1"), preprocessor, encoder,
                                       text_b_column="sentence2"),
    }
    task = SentenceEmbeddingTask(SentenceEmbeddingConfig(seq_length=128)).prepare(preprocessor)
    model = task.build_model(encoder)
    paths["embedding"] = task.export(model, str(tmp / "embedding" / "1"))
    irs = {name: export_openvino(path, str(tmp / f"{name}_ov" / "1")) for name, path in paths.items()}
    return paths, irs


@pytest.fixture(scope="module")
def sentences(docstring_rows):
    """400 real sentences (standard-library docstrings) and 6 long texts of
    several passages each (over 128 wordpieces: truncated)."""
    texts = [t for pair in docstring_rows for t in pair]
    long_texts = [" ".join(texts[i:i + 12]) for i in range(0, 72, 12)]
    return texts + long_texts


@pytest.mark.slow
@pytest.mark.parametrize("name", ["text", "pairs", "embedding"])
def test_fp32_outputs_match_the_saved_model(minilm_exports, sentences, name):
    """The first of these takes minutes: `minilm_exports` writes three MiniLM
    SavedModels and converts each; parity on the real model and 400 real
    texts is the claim (the tiny model's checks follow below)."""
    paths, irs = minilm_exports
    texts = {"text": sentences}
    if name == "pairs":
        texts["text_b"] = sentences[1:] + sentences[:1]
    model = OpenVINOModel(irs[name])
    assert model.input_names == sorted(texts) and model.precision == "fp32"
    got = {}
    for start in range(0, len(sentences), 64):
        part = model({k: v[start:start + 64] for k, v in texts.items()})
        got = {k: np.concatenate([got[k], v]) if k in got else v for k, v in part.items()}
    want = saved_model_outputs(paths[name], texts)
    assert sorted(got) == sorted(want)
    diffs = max_abs_diffs(got, want)
    print(f"\n{name}: {len(sentences)} texts, fp32 max abs diff {diffs}")
    assert all(d <= 1e-5 for d in diffs.values()), diffs


@pytest.mark.slow
def test_pairs_that_normalize_to_nothing_are_answered(minilm_exports):
    """Issue 66: a batch of pairs whose every text normalizes to nothing made
    OpenVINO's tokenizer fail ("Broadcast ... cannot be broadcasted"), as did
    an empty batch of pairs; both are answered as the SavedModel answers."""
    paths, irs = minilm_exports
    model = OpenVINOModel(irs["pairs"])
    texts = {"text": ["", " ", "\ue000"], "text_b": ["", "\ue000", " "]}
    got = model(texts)
    assert max(max_abs_diffs(got, saved_model_outputs(paths["pairs"], texts)).values()) < 1e-5
    assert {k: v.shape[0] for k, v in model({"text": [], "text_b": []}).items()} == dict.fromkeys(
        ["label", "label_id", "logits", "probabilities"], 0)


@pytest.mark.slow
def test_bf16_and_int8_figures(minilm_exports, sentences, tmp_path):
    """bf16 (inference hint) and int8 (NNCF, calibrated on other docstring
    texts) against the fp32 SavedModel; the figures docs/export.md quotes."""
    from tfbert.datasets.docstring_pairs import docstring_pairs

    paths, irs = minilm_exports
    calibration = [q for _, q, _ in docstring_pairs()[200:500]]
    int8 = export_openvino(paths["embedding"], str(tmp_path / "int8" / "1"), precision="int8",
                           calibration_texts=calibration)
    want = saved_model_outputs(paths["embedding"], {"text": sentences})["embedding"]
    print(f"\nfp32 SavedModel: docstring query -> passage recall@1 {recall_at_1(want):.3f}")
    for label, model in (("bf16", OpenVINOModel(irs["embedding"], precision="bf16")),
                         ("int8", OpenVINOModel(int8))):
        got = model({"text": sentences})["embedding"]
        cosine = np.sum(got * want, axis=1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
        print(f"\n{label}: embedding max abs diff {np.abs(got - want).max():.2g}, "
              f"cosine to fp32 min {cosine.min():.4f} mean {cosine.mean():.4f}, "
              f"recall@1 {recall_at_1(got):.3f}")
        assert cosine.min() > (0.99 if label == "bf16" else 0.9)
    metadata = json.load(open(os.path.join(int8, "tfbert_openvino.json")))
    assert metadata["precision"] == "int8"
    assert os.path.getsize(os.path.join(int8, "model.bin")) < 0.5 * os.path.getsize(
        os.path.join(irs["embedding"], "model.bin"))


def recall_at_1(embeddings, pairs=200):
    """Share of the docstring queries (even rows) whose nearest passage (odd
    rows) by cosine is their own: the embeddings' accuracy on real pairs."""
    unit = embeddings[:2 * pairs] / np.linalg.norm(embeddings[:2 * pairs], axis=1, keepdims=True)
    scores = unit[0::2] @ unit[1::2].T
    return float(np.mean(np.argmax(scores, axis=1) == np.arange(pairs)))


# === Small exports: layout, loading, bad input ===


@pytest.fixture(scope="module")
def tiny(uncased_vocab_file, tmp_path_factory):
    """A tiny random classifier export and its IR."""
    tmp = tmp_path_factory.mktemp("tiny")
    encoder = BertEncoder(BertConfig.from_preset("tiny", dropout_rate=0.0))
    preprocessor = BertPreprocessor(vocab_file=uncased_vocab_file, seq_length=32)
    saved = classification_export(str(tmp / "saved" / "1"), preprocessor, encoder)
    return saved, export_openvino(saved, str(tmp / "ov" / "1"))


def test_export_writes_a_versioned_ir_atomically(tiny):
    saved, ir = tiny
    assert sorted(os.listdir(ir)) == ["model.bin", "model.xml", "tfbert_openvino.json"]
    assert sorted(os.listdir(os.path.dirname(ir))) == ["1"]  # no temporary left
    export_openvino(saved, ir)  # over an existing version: replaced whole
    assert sorted(os.listdir(os.path.dirname(ir))) == ["1"]
    metadata = json.load(open(os.path.join(ir, "tfbert_openvino.json")))
    assert metadata["inputs"] == ["text"]
    assert metadata["outputs"] == ["label", "label_id", "logits", "probabilities"]
    assert metadata["text"] == {"tokenizer": "wordpiece", "lower_case": True, "seq_length": 32,
                                "truncation": "round_robin"}


def test_the_encoder_converts_into_openvinos_fused_ops(tiny):
    """The encoder is written in the forms OpenVINO fuses: each layer norm is
    one MVN and each GELU one Gelu (tfbert.layers.layer_norm,
    tfbert.layers.activations), not a dozen elementwise ops, and each
    attention one ScaledDotProductAttention (the mask an added bias, no
    `where`: tfbert.layers.transformer_block) (docs/cpu_speed.md, tfbert's
    export on OpenVINO)."""
    import collections

    import openvino as ov

    _, ir = tiny
    layers = BertConfig.from_preset("tiny").num_layers
    model = ov.Core().read_model(os.path.join(ir, "model.xml"))
    converted = collections.Counter(op.get_type_name() for op in model.get_ops())
    assert converted["MVN"] == 2 * layers + 1, converted  # embeddings + two per layer
    assert converted["Gelu"] == layers and not converted["Erf"], converted
    assert converted["ScaledDotProductAttention"] == layers, converted
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    runtime = collections.Counter(op.get_rt_info()["layerType"].astype(str)
                                  for op in compiled.get_runtime_model().get_ops())
    assert runtime["MVN"] == 2 * layers + 1, dict(runtime)


def test_empty_batch_empty_and_invalid_utf8_strings(tiny):
    saved, ir = tiny
    model = OpenVINOModel(ir)
    assert {k: v.shape[0] for k, v in model({"text": []}).items()} == dict.fromkeys(
        ["label", "label_id", "logits", "probabilities"], 0)
    texts = [b"caf\xc3\xa9 \xff\xfe ok", b"", b"   ", "\ue000\U000f0000".encode()]
    # The served signature (tools/predict.py) drops invalid bytes, as the SavedModel does;
    # the Python call takes text, as the strings-in models do: such bytes are one line.
    served = model.signatures["serving_default"](text=tf.constant(texts))
    got = {k: v.numpy() for k, v in served.items()}
    got["label"] = np.array([s.decode() for s in got["label"]], object)
    want = saved_model_outputs(saved, {"text": texts})
    assert max(max_abs_diffs(got, want).values()) < 1e-5
    valid = texts[1:]
    got = model({"text": valid})
    assert max(max_abs_diffs(got, saved_model_outputs(saved, {"text": valid})).values()) < 1e-5
    with pytest.raises(ValueError, match=r"^inputs\['text'\]\[0\] is bytes that are not UTF-8 "
                                         r"text \(invalid start byte at byte 6\): decode it "
                                         r"first\.$"):
        model({"text": texts})


def test_a_pruned_model_converts_at_parity(uncased_vocab_file, tmp_path):
    """Layers with their own head counts, one of them emptied (its attention is
    its output bias alone): the IR answers as the pruned SavedModel does, as
    closely as an unpruned tiny random model's IR does on these lines (its logits
    differ by up to 3e-4 on the stress corpus: float32 sums in another order)."""
    keras.utils.set_random_seed(0)
    encoder = BertEncoder(BertConfig.from_preset("tiny", dropout_rate=0.0))
    pruned = encoder.prune_heads({0: [1], 1: [0, 1]})
    assert pruned.config.heads_per_layer == (1, 0)
    preprocessor = BertPreprocessor(vocab_file=uncased_vocab_file, seq_length=32)
    saved = classification_export(str(tmp_path / "saved" / "1"), preprocessor, pruned)
    ir = export_openvino(saved, str(tmp_path / "ov" / "1"))
    texts = {"text": stress_corpus()[:40]}
    diffs = max_abs_diffs(OpenVINOModel(ir)(texts), saved_model_outputs(saved, texts))
    assert diffs["label_id"] == 0 and diffs["logits"] < 1e-3, diffs


def test_fresh_process_loads_and_answers_a_rest_body(tiny, run_python):
    saved, ir = tiny
    out = run_python(
        "import json\n"
        "from tfbert.export.openvino_model import OpenVINOModel\n"
        "from tfbert.export.serving import predict\n"
        f"model = OpenVINOModel({ir!r})\n"
        "print(json.dumps(predict(model, {'instances': [{'text': 'A wonderful film.'}]})))\n")
    row = json.loads(out.strip().splitlines()[-1])["predictions"][0]
    want = saved_model_outputs(saved, {"text": ["A wonderful film."]})
    assert row["label"] == want["label"][0].decode()
    np.testing.assert_allclose(row["probabilities"], want["probabilities"][0], atol=1e-5)


@pytest.mark.slow
def test_tools_export_and_predict(tiny, tmp_path):
    saved, _ = tiny
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    ir = str(tmp_path / "sentiment" / "1")
    run = lambda *args: subprocess.run([python_command(), *args], capture_output=True, text=True,
                                       env=env, cwd=REPO, timeout=300)
    done = run("tools/export.py", "--format=openvino", f"--saved_model_dir={saved}",
               f"--output_dir={ir}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"to {ir}" in done.stdout
    answers = [json.loads(run("tools/predict.py", f"--saved_model_dir={d}", "--text=A fine film.",
                              "--text=Dull.").stdout) for d in (saved, ir)]
    assert [r["label"] for r in answers[0]["predictions"]] == [
        r["label"] for r in answers[1]["predictions"]]
    np.testing.assert_allclose([r["logits"] for r in answers[0]["predictions"]],
                               [r["logits"] for r in answers[1]["predictions"]], atol=1e-5)
    bad = run("tools/export.py", "--format=openvino", f"--saved_model_dir={saved}",
              f"--output_dir={tmp_path / 'x'}", "--precision=int8")
    assert bad.returncode == 1 and bad.stderr.strip().splitlines()[-1] == (
        "export: error: precision='int8' needs calibration_texts (e.g. --representative_file: "
        "real sentences like the ones the model will serve).")
    assert "Traceback" not in bad.stderr


def test_call_errors_are_one_line(tiny):
    """Each batch is checked as the strings-in models check theirs
    (`text_data.text_column`), before OpenVINO sees it."""
    model = OpenVINOModel(tiny[1])
    with pytest.raises(ValueError, match=r"^inputs\['text'\] must be one text per example "
                                         r"\(rank 1\); inputs\['text'\]\[0\] is a list\.$"):
        model({"text": [["a", "b"], ["c", "d"]]})
    with pytest.raises(TypeError, match=r"^inputs\['text'\] is one string; pass a list"):
        model({"text": "a"})
    with pytest.raises(ValueError, match=r"inputs must be \['text'\]; missing \[\], "
                                         r"unexpected \['text_b'\]"):
        model({"text": ["a"], "text_b": ["b"]})
    with pytest.raises(TypeError, match=r"^inputs\['text'\]\[1\] is an int \(3\), not a string"):
        model({"text": ["a", 3]})
    # None is refused too (it once answered a label: the search for a bad item
    # returned None, which read as "no bad item").
    with pytest.raises(TypeError, match=r"^inputs\['text'\]\[1\] is NoneType \(None\), not "
                                        r"str\.$"):
        model({"text": ["fine", None]})
    with pytest.raises(TypeError, match=r"^inputs\['text'\] is None, not a list of texts\.$"):
        model({"text": None})  # once "got shape ()"
    with pytest.raises(TypeError, match=r"^inputs\['text'\] is a set, whose order is arbitrary"):
        model({"text": {"b", "a"}})  # once "got shape ()"
    with pytest.raises(ValueError, match=r"cannot load the model on 'TPU': Device with \"TPU\" "
                                         r"name is not registered"):
        OpenVINOModel(tiny[1], device="TPU")  # once the name of a C++ source file


def test_loading_a_truncated_or_foreign_bin_is_one_line(tiny, tmp_path):
    _, ir = tiny
    copy = shutil.copytree(ir, tmp_path / "copy")
    data = (copy / "model.bin").read_bytes()
    (copy / "model.bin").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"model\.bin has [\d,]+ bytes, the export wrote "
                                         r"[\d,]+ \(truncated\)\.$"):
        OpenVINOModel(copy)
    # The same size, other weights: a model.bin of another model.
    (copy / "model.bin").write_bytes(data[:-4] + b"\0\0\0\1")
    with pytest.raises(ValueError, match="is not the file this export wrote"):
        OpenVINOModel(copy)
    os.remove(copy / "tfbert_openvino.json")  # a plain IR, not written by tfbert
    with pytest.raises(ValueError, match="is not a tfbert OpenVINO export"):
        OpenVINOModel(copy)


def test_a_directory_that_is_no_export_is_one_line(tmp_path):
    """Checked before OpenVINO reads anything (no export needed)."""
    with pytest.raises(TypeError, match=r"^OpenVINO export directory must be a path \(a string\), "
                                        r"got None\.$"):
        OpenVINOModel(None)
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ValueError, match=r"afile is a file, not an OpenVINO export directory\.$"):
        OpenVINOModel(tmp_path / "afile")
    meta = tmp_path / "tfbert_openvino.json"
    for text, match in (('{"format": "tfbert-openvino-1", "fi', r"not valid JSON: "),
                        ("[1]", r"expected a JSON object, got list"),
                        ('{"format": "tfbert-openvino-1"}', r"is not a tfbert-openvino-1 metadata"),
                        ('{"format": "tfbert-openvino-1", "files": {"model.bin": 3}}',
                         r"is not a tfbert-openvino-1 metadata")):
        meta.write_text(text)
        with pytest.raises(ValueError, match=match) as info:
            OpenVINOModel(tmp_path)
        assert "\n" not in str(info.value)


def test_export_refusals_are_one_line(tiny, uncased_vocab_file, tmp_path):
    saved, _ = tiny
    with pytest.raises(ValueError, match="precision must be one of"):
        export_openvino(saved, str(tmp_path / "a"), precision="fp16")
    with pytest.raises(FileNotFoundError, match="no saved_model.pb"):
        export_openvino(str(tmp_path), str(tmp_path / "a"))
    # Issue 66: named, before the conversion (os.fspath's TypeError; a file after 16 s).
    with pytest.raises(TypeError, match=r"^saved_model_dir must be a path \(a string\), got "
                                        r"None\.$"):
        export_openvino(None, str(tmp_path / "a"))
    (tmp_path / "taken").write_text("")
    with pytest.raises(ValueError, match=r"^output_dir: .*taken is a file, not a directory"):
        export_openvino(saved, str(tmp_path / "taken"))
    with pytest.raises(TypeError, match=r"^calibration_texts is one string"):
        export_openvino(saved, str(tmp_path / "a"), precision="int8", calibration_texts="abc")
    with pytest.raises(ValueError, match=r"^calibration_texts\[0\] must be 1 string\(s\) "
                                         r"\(text\); got None\.$"):  # once NoneType not iterable
        export_openvino(saved, str(tmp_path / "a"), precision="int8",
                        calibration_texts=[None] * 40)
    # A SavedModel that is not a tfbert task export.
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def double(x):
        return {"y": x * 2}

    module = tf.Module()
    module.double = double
    tf.saved_model.save(module, str(tmp_path / "plain"), signatures={"serving_default": double})
    with pytest.raises(ValueError, match="is not a tfbert strings-in task export"):
        export_openvino(str(tmp_path / "plain"), str(tmp_path / "a"))
    assert not os.path.exists(tmp_path / "a")


def test_an_op_without_a_conversion_rule_is_named(uncased_vocab_file, tmp_path):
    encoder = BertEncoder(BertConfig.from_preset("tiny", dropout_rate=0.0))
    preprocessor = BertPreprocessor(vocab_file=uncased_vocab_file, seq_length=16)
    task = ClassificationTask(ClassificationConfig(label_list=LABELS)).prepare(preprocessor)
    model = task.build_model(encoder)
    # A head with an op OpenVINO's TensorFlow frontend has no rule for (Igamma).
    head = lambda logits: {"logits": logits, "score": tf.math.igamma(2.0, tf.abs(logits))}
    path = export_task_model(str(tmp_path / "odd"), lambda t: head(task.text_logits(model, t)),
                             lambda ids: head(model(ids)), track=[model, preprocessor])
    with pytest.raises(ValueError, match=r"^OpenVINO cannot convert the \w+ export's "
                                         r"serving_ids: no conversion rule for Igamma\.$"):
        export_openvino(path, str(tmp_path / "ov"))


@pytest.mark.slow
def test_tagging_and_windowed_exports_are_refused(uncased_vocab_file, tmp_path):
    from tfbert.tasks.tagging import TaggingConfig, TaggingTask

    encoder = BertEncoder(BertConfig.from_preset("tiny", dropout_rate=0.0))
    preprocessor = BertPreprocessor(vocab_file=uncased_vocab_file, seq_length=16)
    tagging = TaggingTask(TaggingConfig(label_list=["O", "B-PER"])).prepare(preprocessor)
    tagging.export(tagging.build_model(encoder), str(tmp_path / "tagging"))
    with pytest.raises(ValueError, match=r"serving_default outputs \['end', 'num_words', "
                                         r"'start', 'tags', 'words'\] come from the tokenizer"):
        export_openvino(str(tmp_path / "tagging"), str(tmp_path / "ov"))
    windows = classification_export(str(tmp_path / "windows"), preprocessor, encoder,
                                    long_text="windows")
    with pytest.raises(ValueError, match="on the text longer than seq_length only: an export "
                                         "with long_text=windows"):
        export_openvino(windows, str(tmp_path / "ov"))
