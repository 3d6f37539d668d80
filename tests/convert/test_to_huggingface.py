"""tfbert checkpoint -> Hugging Face directory (`tfbert.convert.to_huggingface`):
transformers' Auto classes and sentence-transformers load what it writes, at
parity with tfbert; Hugging Face -> tfbert -> Hugging Face gives the same
tensors bit for bit (BERT, RoBERTa, DistilBERT, ALBERT; the real
all-MiniLM-L6-v2 as a sentence-transformers directory); heads transformers
has no class for are one line."""

import json

import numpy as np
import pytest
import safetensors.numpy

from tfbert import BertEncoder, checkpoint
from tfbert.convert import from_huggingface, to_huggingface
from fresh_python import python_command

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

BUFFERS = ("position_ids", "token_type_ids")  # index buffers, not weights (skipped by rule)


def weights_of(path):
    tensors = safetensors.numpy.load_file(str(path / "model.safetensors"))
    return {k: v for k, v in tensors.items() if not k.endswith(BUFFERS)}


def assert_same_tensors(src, out):
    want, got = weights_of(src), weights_of(out)
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def round_trip(hf_test, cls, config, tokenizer_dir, root):
    """`cls` saved by transformers -> tfbert -> transformers again: the three
    directories and the original model."""
    model = hf_test.save_model(cls, config, tokenizer_dir, root / "hf")
    ckpt = from_huggingface(root / "hf", root / "tfbert")
    return model, root / "hf", ckpt, to_huggingface(ckpt, root / "back")


def outputs_of(auto_class, path, batch, hf_test, keys):
    model = getattr(transformers, auto_class).from_pretrained(str(path)).eval()
    with torch.no_grad():
        return model(**hf_test.torch_inputs(batch, keys))


BERT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            max_position_embeddings=128)
BERT_KEYS = ("input_ids", "attention_mask", "token_type_ids")


@pytest.fixture(scope="module")
def vocab_size(wordpiece_tokenizer_dir):
    return len(transformers.AutoTokenizer.from_pretrained(str(wordpiece_tokenizer_dir)))


@pytest.mark.parametrize("cls, auto", [
    ("BertModel", "AutoModel"), ("BertForPreTraining", "AutoModelForPreTraining"),
    ("BertForSequenceClassification", "AutoModelForSequenceClassification")])
def test_bert_round_trip_is_bit_exact(wordpiece_tokenizer_dir, vocab_size, tmp_path, hf_test,
                                      cls, auto):
    config = transformers.BertConfig(vocab_size=vocab_size, num_labels=3, **BERT)
    model, src, _, back = round_trip(hf_test, getattr(transformers, cls), config,
                                     wordpiece_tokenizer_dir, tmp_path)
    assert_same_tensors(src, back)
    assert json.loads((back / "config.json").read_text())["architectures"] == [cls]
    batch = hf_test.batch_of(back)  # AutoTokenizer reads the written vocab.txt ...
    assert np.array_equal(batch["input_ids"], hf_test.batch_of(src)["input_ids"])  # same ids
    with torch.no_grad():
        want = model(**hf_test.torch_inputs(batch, BERT_KEYS))
    got = outputs_of(auto, back, batch, hf_test, BERT_KEYS)
    for key in want.keys():
        np.testing.assert_array_equal(got[key].numpy(), want[key].numpy(), err_msg=key)


@pytest.fixture(scope="module")
def bert_checkpoint(wordpiece_tokenizer_dir, vocab_size, tmp_path_factory, hf_test):
    root = tmp_path_factory.mktemp("bert")
    config = transformers.BertConfig(vocab_size=vocab_size, **BERT)
    hf_test.save_model(transformers.BertModel, config, wordpiece_tokenizer_dir, root / "hf")
    return from_huggingface(root / "hf", root / "tfbert")


def randomize_head(model, seed=0):
    layer = model.get_layer(model.head_layer)
    rng = np.random.default_rng(seed)
    layer.kernel.assign(rng.normal(0, 0.5, layer.kernel.shape).astype(np.float32))
    layer.bias.assign(rng.normal(0, 0.5, layer.bias.shape).astype(np.float32))
    return model


@pytest.mark.parametrize("task", ["text_classifier", "token_classifier", "question_answerer"])
def test_tfbert_task_heads_load_in_transformers(bert_checkpoint, tmp_path, hf_test, task):
    """A head tfbert trains (save_pretrained) -> the Auto class of that task,
    whose logits equal the tfbert model's on real text."""
    from tfbert import QuestionAnswerer, TextClassifier, TokenClassifier

    if task == "text_classifier":
        model = TextClassifier.from_pretrained(bert_checkpoint, num_classes=3,
                                               label_list=["neg", "neu", "pos"])
        auto = "AutoModelForSequenceClassification"
    elif task == "token_classifier":
        model = TokenClassifier.from_pretrained(bert_checkpoint, label_list=["O", "B-X", "I-X"])
        auto = "AutoModelForTokenClassification"
    else:
        model = QuestionAnswerer.from_pretrained(bert_checkpoint, seq_length=64,
                                                 max_query_length=16)
        auto = "AutoModelForQuestionAnswering"
    randomize_head(model).save_pretrained(tmp_path / "tfbert")
    back = to_huggingface(tmp_path / "tfbert", tmp_path / "hf")
    texts = hf_test.sentences
    batch = hf_test.batch_of(back, texts, texts[::-1])
    got = model(hf_test.tfbert_inputs(batch))
    out = outputs_of(auto, back, batch, hf_test, BERT_KEYS)
    mask = batch["attention_mask"]
    if task == "text_classifier":
        diff = float(np.abs(np.asarray(got) - out.logits.numpy()).max())
        assert json.loads((back / "config.json").read_text())["id2label"]["2"] == "pos"
    elif task == "token_classifier":
        diff = hf_test.masked_max_diff(got, out.logits.numpy(), mask)
    else:  # tfbert masks what cannot be an answer; compare where it does not
        allowed = np.asarray(got["start_logits"]) > -1e3
        assert allowed.sum() > 20
        diff = max(float(np.abs(np.asarray(got[f"{k}_logits"]) - out[f"{k}_logits"].numpy())
                         [allowed].max()) for k in ("start", "end"))
    print(f"{task} -> {auto}: max|logits diff| {diff:.2e}")
    assert diff <= 1e-5


@pytest.fixture(scope="module")
def roberta_vocab(bpe_tokenizer_dir):
    return len(transformers.AutoTokenizer.from_pretrained(str(bpe_tokenizer_dir)))


@pytest.mark.parametrize("cls, auto", [
    ("RobertaModel", "AutoModel"), ("RobertaForMaskedLM", "AutoModelForMaskedLM"),
    ("RobertaForSequenceClassification", "AutoModelForSequenceClassification")])
def test_roberta_round_trip_is_bit_exact(bpe_tokenizer_dir, roberta_vocab, tmp_path, hf_test,
                                         cls, auto):
    config = transformers.RobertaConfig(vocab_size=roberta_vocab, type_vocab_size=1,
                                        layer_norm_eps=1e-5, **{**BERT,
                                                                "max_position_embeddings": 130})
    model, src, _, back = round_trip(hf_test, getattr(transformers, cls), config,
                                     bpe_tokenizer_dir, tmp_path)
    assert_same_tensors(src, back)
    batch = hf_test.batch_of(back)  # vocab.json + merges.txt give the source's ids
    assert np.array_equal(batch["input_ids"], hf_test.batch_of(src)["input_ids"])
    with torch.no_grad():
        want = model(**hf_test.torch_inputs(batch))
    got = outputs_of(auto, back, batch, hf_test, ("input_ids", "attention_mask"))
    key = "last_hidden_state" if cls == "RobertaModel" else "logits"
    np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())
    if cls == "RobertaModel":
        assert_special_tokens_travel(src, back, tmp_path)


def assert_special_tokens_travel(src, back, tmp_path):
    """Special tokens in the text (<mask>'s lstrip) read the same after the way
    back; a checkpoint without special_tokens.json (a source with no
    tokenizer.json) gets roberta-base's lstrip <mask>, in tfbert and back."""
    import shutil

    from tfbert import BertPreprocessor

    text = "<s>Return the <mask> of it.</s>  <mask>"

    def ids(path):
        return transformers.AutoTokenizer.from_pretrained(str(path))(
            text, add_special_tokens=False)["input_ids"]

    assert ids(back) == ids(src)
    bare = shutil.copytree(tmp_path / "tfbert", tmp_path / "bare")
    (bare / checkpoint.BPE_SPECIAL_FILE).unlink()
    ours = BertPreprocessor.from_pretrained(bare).tokenize([text]).merge_dims(1, 2).to_list()[0]
    theirs = ids(to_huggingface(bare, tmp_path / "bare_back"))
    assert ours == theirs and len(theirs) == len(ids(src)) - 2  # the two spaces went to <mask>


def test_a_special_token_of_the_users_travels_both_ways(hf_test, tmp_path):
    """A RoBERTa tokenizer with a special token of its own ("<ent>", trained
    into its vocabulary, as `ByteLevelBPETokenizer(special_tokens=...)` makes
    it): tfbert reads it as one piece, and the directory written back names it
    too (vocab.json and merges.txt alone would split it into "<", "ent", ">")."""
    from tokenizers import ByteLevelBPETokenizer

    from tfbert import BertPreprocessor

    raw = tmp_path / "raw"
    raw.mkdir()
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(hf_test.docstring_texts(), vocab_size=400, min_frequency=2,
                            special_tokens=hf_test.special_bpe + ["<ent>"])
    bpe.save_model(str(raw))
    tokenizer = transformers.RobertaTokenizerFast(
        vocab=str(raw / "vocab.json"), merges=str(raw / "merges.txt"),
        extra_special_tokens=["<ent>"])
    tokenizer.save_pretrained(str(tmp_path / "tokenizer"))
    _, src, ckpt, back = round_trip(hf_test, transformers.RobertaModel,
                                    hf_test.roberta_config(len(tokenizer)),
                                    tmp_path / "tokenizer", tmp_path)
    text = "Return <ent> the value.</s> <ent>"

    def ids(path):
        return transformers.AutoTokenizer.from_pretrained(str(path))(
            text, add_special_tokens=False)["input_ids"]

    ent = transformers.AutoTokenizer.from_pretrained(str(src)).convert_tokens_to_ids("<ent>")
    assert ids(src).count(ent) == 2
    ours = BertPreprocessor.from_pretrained(ckpt).tokenize([text]).merge_dims(1, 2).to_list()[0]
    assert ours == ids(src) == ids(back)


@pytest.mark.parametrize("cls, auto, key", [
    ("DistilBertModel", "AutoModel", "last_hidden_state"),
    ("DistilBertForMaskedLM", "AutoModelForMaskedLM", "logits")])
def test_distilbert_round_trip_is_bit_exact(wordpiece_tokenizer_dir, vocab_size, tmp_path,
                                            hf_test, cls, auto, key):
    config = transformers.DistilBertConfig(vocab_size=vocab_size, dim=32, n_layers=2, n_heads=4,
                                           hidden_dim=64, max_position_embeddings=128)
    model, src, _, back = round_trip(hf_test, getattr(transformers, cls), config,
                                     wordpiece_tokenizer_dir, tmp_path)
    assert_same_tensors(src, back)  # no pooler, no token types: dropped again by rule
    batch = hf_test.batch_of(back)
    with torch.no_grad():
        want = model(**hf_test.torch_inputs(batch))
    got = outputs_of(auto, back, batch, hf_test, ("input_ids", "attention_mask"))
    np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())


def test_albert_round_trip_is_bit_exact(wordpiece_tokenizer_dir, vocab_size, tmp_path, hf_test):
    config = transformers.AlbertConfig(vocab_size=vocab_size, embedding_size=16,
                                       num_hidden_groups=1, **BERT)
    model, src, ckpt, back = round_trip(hf_test, transformers.AlbertForPreTraining, config,
                                        wordpiece_tokenizer_dir, tmp_path)
    assert_same_tensors(src, back)
    batch = hf_test.batch_of(back)  # tfbert's ALBERT vocabularies are WordPiece
    with torch.no_grad():
        want = model(**hf_test.torch_inputs(batch, BERT_KEYS))
    got = outputs_of("AutoModelForPreTraining", back, batch, hf_test, BERT_KEYS)
    np.testing.assert_array_equal(got.prediction_logits.numpy(), want.prediction_logits.numpy())


def test_minilm_sentence_transformers_round_trip(minilm_dir, minilm_checkpoint, tmp_path,
                                                 hf_test):
    """The real all-MiniLM-L6-v2: HF -> tfbert -> a sentence-transformers
    directory with the same tensors, which SentenceTransformer loads and
    embeds with exactly as the original (tfbert's own parity with it is
    tests/convert/test_huggingface.py's)."""
    sentence_transformers = pytest.importorskip("sentence_transformers")

    back = to_huggingface(minilm_checkpoint, tmp_path / "st")
    assert_same_tensors(minilm_dir, back)
    modules = json.loads((back / "modules.json").read_text())
    assert [m["path"] for m in modules] == ["", "1_Pooling", "2_Normalize"]
    model = sentence_transformers.SentenceTransformer(str(back), device="cpu")
    assert model.max_seq_length == 256
    got = model.encode(hf_test.sentences, convert_to_numpy=True)
    want = sentence_transformers.SentenceTransformer(str(minilm_dir), device="cpu").encode(
        hf_test.sentences, convert_to_numpy=True)
    print(f"MiniLM round trip: SentenceTransformer(back) vs the original: "
          f"{np.abs(got - want).max():.2e}")
    np.testing.assert_array_equal(got, want)


def test_sentence_encoder_with_dense_layer(bert_checkpoint, tmp_path, hf_test):
    """A SentenceEncoder with cls pooling, a tanh dense layer and no
    normalization -> Pooling + Dense modules SentenceTransformer embeds with
    as tfbert does."""
    sentence_transformers = pytest.importorskip("sentence_transformers")
    ckpt = checkpoint.read_checkpoint(bert_checkpoint)
    encoder, heads = checkpoint.split_heads(ckpt.weights)
    rng = np.random.default_rng(0)
    dense = {"kernel": rng.normal(0, 0.3, (ckpt.config.hidden_size, 8)).astype(np.float32),
             "bias": rng.normal(0, 0.3, 8).astype(np.float32)}
    path = checkpoint.save_checkpoint(
        tmp_path / "tfbert", ckpt.config, encoder, ckpt.vocab_file, True,
        head_weights={**heads, "sentence_dense": dense},
        sentence={"pooling": "cls", "normalize": False, "dense_units": 8, "seq_length": 64})
    back = to_huggingface(path, tmp_path / "st")
    modules = json.loads((back / "modules.json").read_text())
    assert [m["path"] for m in modules] == ["", "1_Pooling", "2_Dense"]
    got = sentence_transformers.SentenceTransformer(str(back), device="cpu").encode(
        hf_test.sentences, convert_to_numpy=True)
    from tfbert import SentenceEncoder

    want = SentenceEncoder.from_pretrained(path).encode(hf_test.sentences)
    diff = float(np.abs(got - want).max())
    print(f"SentenceTransformer (cls + Dense) vs tfbert SentenceEncoder: {diff:.2e}")
    assert got.shape == (len(hf_test.sentences), 8) and diff <= 1e-5


# -- Refused, one line each ------------------------------------------------
def test_heads_transformers_has_no_class_for(bert_checkpoint, tmp_path,
                                             raises_one_line_from_tfbert):
    ckpt = checkpoint.read_checkpoint(bert_checkpoint)
    encoder, heads = checkpoint.split_heads(ckpt.weights)
    h = ckpt.config.hidden_size
    dense = {"kernel": np.zeros((h, 2), np.float32), "bias": np.zeros(2, np.float32)}
    check = raises_one_line_from_tfbert
    for name, extra, sections, pattern in [
        ("sbo", {"sbo": {"kernel": np.zeros((h, h), np.float32)}}, {},
         r"heads \['sbo'\]: transformers has no Bert class for them"),
        ("two heads", {"classifier": dense, "question_answerer": dense}, {},
         r"heads \['classifier', 'question_answerer'\]: transformers has no Bert class"),
        ("mean pooling", {"classifier": dense}, {"text_classifier": {"pooling": "mean"}},
         r"the classifier reads mean pooling; transformers' ForSequenceClassification"),
    ]:
        path = checkpoint.save_checkpoint(tmp_path / name, ckpt.config, encoder, ckpt.vocab_file,
                                          True, head_weights={**heads, **extra}, **sections)
        check(name, lambda: to_huggingface(path, tmp_path / "out"), pattern)
    assert not (tmp_path / "out").exists()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("keep me")
    check("output dir", lambda: to_huggingface(bert_checkpoint, tmp_path / "notes"),
          r"exists and is not a tfbert checkpoint; refusing to replace it")


def test_export_run_writes_huggingface(bert_checkpoint, tmp_path, capsys):
    """`tools/export.py --format=huggingface` is `tfbert.runs.export.export`."""
    from tfbert.runs.export import ExportConfig, export

    export(ExportConfig(checkpoint_dir=str(bert_checkpoint), format="huggingface",
                        output_dir=str(tmp_path / "hf")))
    assert "as a Hugging Face directory" in capsys.readouterr().out
    model = transformers.AutoModel.from_pretrained(str(tmp_path / "hf"))
    assert type(model).__name__ == "BertModel"


@pytest.mark.slow
def test_tools_convert_roberta_and_export_it_back(bpe_tokenizer_dir, roberta_vocab, tmp_path,
                                                  hf_test):
    """The two tools as a user runs them: RoBERTa in, then back out, bit for bit."""
    import os
    import subprocess

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    config = transformers.RobertaConfig(vocab_size=roberta_vocab, **{
        **BERT, "max_position_embeddings": 130})
    hf_test.save_model(transformers.RobertaForMaskedLM, config, bpe_tokenizer_dir, tmp_path / "hf")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    for tool, args in (("convert_checkpoint.py", ["--source=huggingface",
                                                  f"--input_dir={tmp_path / 'hf'}",
                                                  f"--output_dir={tmp_path / 'tfbert'}"]),
                       ("export.py", [f"--checkpoint_dir={tmp_path / 'tfbert'}",
                                      "--format=huggingface",
                                      f"--output_dir={tmp_path / 'back'}"])):
        proc = subprocess.run([python_command(), os.path.join(repo, "tools", tool), *args],
                              capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert_same_tensors(tmp_path / "hf", tmp_path / "back")


def test_bad_paths_and_export_settings_are_one_line(tmp_path, raises_one_line_from_tfbert):
    """Checked before the checkpoint is read; the graph exports' settings are
    refused with --format=huggingface (it used to ignore them silently)."""
    from tfbert.runs.export import ExportConfig

    check = raises_one_line_from_tfbert
    (tmp_path / "taken").write_text("a file")
    check("checkpoint None", lambda: to_huggingface(None, tmp_path / "out"),
          r"^checkpoint_dir must be a path \(a string\), got None\.$")
    check("output None", lambda: to_huggingface(tmp_path / "ckpt", None),
          r"^output_dir must be a path \(a string\), got None\.$")
    check("output a file", lambda: to_huggingface(tmp_path / "ckpt", tmp_path / "taken"),
          r"output_dir \S*taken exists and is not a directory\.$")
    for flag, value in [("quantization", "float16"), ("seq_length", 64), ("text_input", True),
                        ("representative_file", "train.tsv")]:
        check(flag, lambda: ExportConfig(checkpoint_dir="c", output_dir="o", format="huggingface",
                                         **{flag: value}),
              rf"^--{flag} does not apply to --format=huggingface \(it writes the checkpoint's "
              r"float32 weights and its tokenizer as they are\)\.$")
