"""Hugging Face RoBERTa -> tfbert (`tfbert.convert.roberta`): encoder, MLM and
sequence-classification heads at parity with transformers' own classes on
real token ids (a byte-level BPE trained on docstrings), the tokenizer files
carried and checked, and clear one-line errors."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertEncoder, checkpoint
from tfbert.convert import from_huggingface

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def batch(bpe_tokenizer_dir, hf_test):
    return hf_test.batch_of(bpe_tokenizer_dir)


def test_roberta_model_encoder_parity(roberta_dirs, batch, hf_test):
    src, model, out = roberta_dirs["RobertaModel"]
    ckpt = checkpoint.read_checkpoint(out)
    assert ckpt.config.max_position_embeddings == 128  # 130 - (pad_token_id + 1)
    assert (ckpt.config.type_vocab_size, ckpt.config.layer_norm_eps) == (1, 1e-5)
    assert ckpt.tokenizer == "byte_level_bpe" and ckpt.lower_case is False
    assert ckpt.huggingface.model_type == "roberta" and not ckpt.huggingface.fresh_pooler
    with torch.no_grad():
        want = model(**hf_test.torch_inputs(batch))
    got = BertEncoder.from_pretrained(out)(hf_test.tfbert_inputs(batch))
    mask = batch["attention_mask"]
    seq = hf_test.masked_max_diff(got["sequence_output"], want.last_hidden_state.numpy(), mask)
    pooled = float(np.abs(np.asarray(got["pooled_output"]) - want.pooler_output.numpy()).max())
    print(f"RobertaModel vs tfbert: sequence_output {seq:.2e}, pooled_output {pooled:.2e}")
    assert seq <= 1e-5 and pooled <= 1e-5


def test_roberta_mlm_logits_parity(roberta_dirs, batch, hf_test):
    from tfbert.models.pretrainer import BertPretrainer

    src, model, out = roberta_dirs["RobertaForMaskedLM"]
    ckpt = checkpoint.read_checkpoint(out)
    assert ckpt.huggingface.fresh_pooler  # RobertaForMaskedLM has no pooler
    assert sorted(ckpt.prefixed_weights("mlm")) == [
        "layer_norm/beta", "layer_norm/gamma", "output_bias", "transform/bias", "transform/kernel"]
    positions = np.array([[1, 2, 3]] * len(batch["input_ids"]), np.int32)
    with torch.no_grad():
        logits = model(**hf_test.torch_inputs(batch)).logits.numpy()
    want = np.take_along_axis(logits, positions[:, :, None], axis=1)
    pretrainer = BertPretrainer.from_checkpoint(out)
    got = pretrainer({**hf_test.tfbert_inputs(batch), "masked_lm_positions": positions})
    diff = float(np.abs(np.asarray(got["mlm_logits"]) - want).max())
    print(f"RobertaForMaskedLM logits vs tfbert: {diff:.2e}")
    assert diff <= 1e-5


# Python docs sentences, the mask at the start, middle and end, glued or spaced.
FILL_MASK = ["Return a new <mask> containing all items from the iterable in ascending order.",
             "<mask> file and return a stream.",
             "Raise ValueError if the value is not <mask>.",
             "Return the number of <mask>s in the list, and<mask> it.<mask>"]


def test_fill_mask_on_converted_roberta(roberta_dirs, bpe_tokenizer_dir,
                                        raises_one_line_from_tfbert):
    """FillMask reads RoBERTa's <mask> (as the source's tokenizer.json has it):
    per mask, the top-5 tokens and probabilities of RobertaForMaskedLM's logits
    on transformers' own encoding; a text without <mask> is one line."""
    import torch
    from tfbert.models.fill_mask import FillMask

    src, model, out = roberta_dirs["RobertaForMaskedLM"]
    fill = FillMask.from_pretrained(out, seq_length=64)
    assert fill.mask_token == "<mask>"
    reference = transformers.AutoTokenizer.from_pretrained(str(src))
    got = fill(FILL_MASK, top_k=5)
    for text, per_mask in zip(FILL_MASK, got):
        enc = reference(text, return_tensors="pt")
        with torch.no_grad():
            logits = model(**enc).logits[0]
        masks = (enc["input_ids"][0] == reference.mask_token_id).nonzero()[:, 0].tolist()
        assert len(per_mask) == len(masks) == text.count("<mask>")
        for candidates, position in zip(per_mask, masks):
            probs = torch.softmax(logits[position], -1)
            top = torch.topk(probs, 5)
            assert [t for t, _ in candidates] == reference.convert_ids_to_tokens(top.indices)
            np.testing.assert_allclose([p for _, p in candidates], top.values.numpy(), atol=1e-5)
    raises_one_line_from_tfbert("no mask", lambda: fill(["Open file.", "Open <mas k> file."]),
                                r"^Fill-mask text has no <mask>: 'Open file\.'$")


def test_roberta_sequence_classification_parity(roberta_dirs, batch, hf_test):
    """classifier.dense + tanh over <s> is BERT's pooler; out_proj the classifier."""
    src, model, out = roberta_dirs["RobertaForSequenceClassification"]
    ckpt = checkpoint.read_checkpoint(out)
    head = ckpt.prefixed_weights("classifier")
    with torch.no_grad():
        want = model(**hf_test.torch_inputs(batch)).logits.numpy()
    pooled = BertEncoder.from_pretrained(out)(hf_test.tfbert_inputs(batch))["pooled_output"]
    got = np.asarray(pooled) @ head["kernel"] + head["bias"]
    diff = float(np.abs(got - want).max())
    print(f"RobertaForSequenceClassification logits vs tfbert: {diff:.2e}")
    assert want.shape == (len(batch["input_ids"]), 3) and diff <= 1e-5


def test_tokenizer_files_travel(roberta_dirs, bpe_tokenizer_dir):
    """vocab.json and merges.txt from tokenizer.json; vocab.txt lists the tokens."""
    src, _, out = roberta_dirs["RobertaModel"]
    model = json.loads((bpe_tokenizer_dir / "tokenizer.json").read_text())["model"]
    vocab = json.loads(open(f"{out}/vocab.json", encoding="utf-8").read())
    assert vocab == model["vocab"]
    merges = open(f"{out}/merges.txt", encoding="utf-8").read().splitlines()[1:]
    assert merges == [" ".join(m) if isinstance(m, list) else m for m in model["merges"]]
    tokens = open(f"{out}/vocab.txt", encoding="utf-8").read().splitlines()
    assert tokens == sorted(vocab, key=vocab.get)


def test_text_classifier_on_strings_and_its_export(roberta_dirs, bpe_tokenizer_dir, hf_test,
                                                  tmp_path, run_python,
                                                  raises_one_line_from_tfbert):
    """A converted RoBERTa reads raw strings: BertPreprocessor.from_pretrained
    tokenizes and packs as RobertaTokenizerFast, so the encoder's output equals
    RobertaModel's; the strings-in export passes the op rule and serves the
    same logits in a fresh process; save_pretrained keeps the tokenizer;
    OpenVINO refuses it in one line."""
    from tfbert import TextClassifier
    from tfbert.export import op_check

    src, model, out = roberta_dirs["RobertaModel"]
    classifier = TextClassifier.from_pretrained(out, num_classes=2, seq_length=32)
    texts = hf_test.sentences
    inputs = classifier.preprocessor(texts)
    reference = transformers.AutoTokenizer.from_pretrained(str(bpe_tokenizer_dir))
    batch = dict(reference(texts, padding="max_length", truncation=True, max_length=32,
                           return_tensors="np"))
    assert inputs["input_word_ids"].numpy().tolist() == batch["input_ids"].tolist()
    assert inputs["input_mask"].numpy().tolist() == batch["attention_mask"].tolist()
    with torch.no_grad():
        want = model(**hf_test.torch_inputs(batch)).last_hidden_state.numpy()
    got = classifier.encoder(inputs)["sequence_output"]
    diff = hf_test.masked_max_diff(got, want, batch["attention_mask"])
    print(f"RobertaModel vs tfbert from strings: sequence_output {diff:.2e}")
    assert diff <= 1e-5
    logits = classifier.predict(texts, verbose=0)
    assert logits.shape == (len(texts), 2)
    export_dir = classifier.export(str(tmp_path / "export"))
    op_check.check_op_rule(export_dir)
    served = run_python(f"""
import json
import tensorflow as tf
m = tf.saved_model.load({export_dir!r})
print(json.dumps(m.signatures["serving_default"](text=tf.constant({texts!r}))["logits"]
                 .numpy().tolist()))
""")
    np.testing.assert_allclose(json.loads(served.strip().splitlines()[-1]), logits, atol=1e-5)
    # save_pretrained keeps the BPE files: the saved classifier reads strings the same.
    saved = classifier.save_pretrained(str(tmp_path / "saved"))
    assert checkpoint.read_checkpoint(saved).tokenizer == "byte_level_bpe"
    again = TextClassifier.from_pretrained(saved)
    np.testing.assert_allclose(again.predict(texts, verbose=0), logits, atol=1e-5)
    # The export carries the BPE files, and OpenVINO rebuilds its tokenizer from them:
    # strings in, the same logits (checked against serving_default on probes first).
    assert {"vocab.json", "merges.txt", "special_tokens.json"} <= set(
        os.listdir(os.path.join(export_dir, "assets")))
    pytest.importorskip("openvino_tokenizers")
    from tfbert.export.openvino import export_openvino
    from tfbert.export.openvino_model import OpenVINOModel

    ir = OpenVINOModel(export_openvino(export_dir, str(tmp_path / "ov" / "1")))
    assert ir.metadata["text"]["tokenizer"] == "byte_level_bpe"
    np.testing.assert_allclose(ir({"text": texts})["logits"], logits, atol=1e-4)


def test_sentence_transformers_on_roberta(roberta_dirs, tmp_path, batch, hf_test):
    """A sentence-transformers directory on a RoBERTa body converts, with its
    pooling; tfbert's mean pooling of the converted encoder gives its embeddings."""
    sentence_transformers = pytest.importorskip("sentence_transformers")
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    src = roberta_dirs["RobertaModel"][0]
    word = Transformer(str(src), max_seq_length=64)
    pooling = Pooling(word.get_embedding_dimension(), "mean")
    st = sentence_transformers.SentenceTransformer(modules=[word, pooling], device="cpu")
    st.save(str(tmp_path / "st"))
    out = from_huggingface(tmp_path / "st", tmp_path / "tfbert")
    ckpt = checkpoint.read_checkpoint(out)
    assert (ckpt.sentence.pooling, ckpt.sentence.normalize, ckpt.sentence.seq_length) == (
        "mean", False, 64)
    want = st.encode(hf_test.sentences, convert_to_numpy=True, batch_size=8)
    inputs = hf_test.tfbert_inputs(batch)
    tokens = np.asarray(BertEncoder.from_pretrained(out)(inputs)["sequence_output"])
    mask = inputs["input_mask"][..., None]
    got = (tokens * mask).sum(1) / mask.sum(1)
    diff = float(np.abs(got - want).max())
    print(f"sentence-transformers on RoBERTa vs tfbert mean pooling: {diff:.2e}")
    assert diff <= 1e-5


# -- Bad input: one line each, raised by tfbert ----------------------------
def test_bad_bpe_files_are_one_line(roberta_dirs, tmp_path, raises_one_line_from_tfbert):
    src = roberta_dirs["RobertaModel"][0]
    hf = tmp_path / "hf"
    shutil.copytree(src, hf)
    out = roberta_dirs["RobertaModel"][2]
    (hf / "tokenizer.json").unlink()
    shutil.copy(f"{out}/vocab.json", hf / "vocab.json")
    merges = open(f"{out}/merges.txt", encoding="utf-8").read().splitlines()
    (hf / "merges.txt").write_text("\n".join(merges[:3] + ["Ġtoo many parts"] + merges[3:]))
    check = raises_one_line_from_tfbert
    check("merges line", lambda: from_huggingface(hf, tmp_path / "o"),
          r"merges\.txt:4: a merge is two tokens separated by one space, got 'Ġtoo many parts'")
    (hf / "merges.txt").write_text("\n".join(merges))
    for vocab, pattern in [
        ("[1, 2]", r"vocab\.json: expected a JSON object of token -> id, got list"),
        ('{"a": 0, "b": "1"}', r"vocab\.json: token 'b' maps to '1', not an int id"),
        ('{"a": 0, "b": 0}', r"vocab\.json: tokens 'a' and 'b' share id 0"),
        ('{"a": 0, "b": 5}', r"vocab\.json: token 'b' has id 5; ids must be 0 \.\. 1"),
        ('{"a": 0', r"vocab\.json: not valid JSON"),
    ]:
        (hf / "vocab.json").write_text(vocab)
        check(f"vocab {vocab}", lambda: from_huggingface(hf, tmp_path / "o"), pattern)
    assert not (tmp_path / "o").exists()


def test_unsupported_model_type_names_the_supported(roberta_dirs, tmp_path,
                                                    raises_one_line_from_tfbert):
    hf = tmp_path / "hf"
    shutil.copytree(roberta_dirs["RobertaModel"][0], hf)
    config = json.loads((hf / "config.json").read_text())
    (hf / "config.json").write_text(json.dumps({**config, "model_type": "xlm-roberta"}))
    raises_one_line_from_tfbert(
        "model_type", lambda: from_huggingface(hf, tmp_path / "o"),
        r"config\.json: model_type is 'xlm-roberta'; tfbert converts bert, roberta, "
        r"distilbert, albert\.")
    (hf / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 2}))
    raises_one_line_from_tfbert(
        "positions", lambda: from_huggingface(hf, tmp_path / "o"),
        r"max_position_embeddings=2 leaves no position after pad_token_id \+ 1 = 2")


def test_bpe_checkpoint_missing_a_tokenizer_file(roberta_dirs, tmp_path,
                                                 raises_one_line_from_tfbert):
    from tfbert import BertPreprocessor

    for name in ("merges.txt", "vocab.json"):
        ckpt = tmp_path / name
        shutil.copytree(roberta_dirs["RobertaModel"][2], ckpt)
        (ckpt / name).unlink()
        raises_one_line_from_tfbert(
            name, lambda: BertPreprocessor.from_pretrained(ckpt),
            rf"Not a byte-level BPE checkpoint: \S*{name} is missing \(\S*config\.json says "
            r"tokenizer 'byte_level_bpe'\)")


# -- Extractive QA on RoBERTa's packing: <s> q </s></s> context </s> -----------
QA_CONTEXT = ("Open file and return a stream. Raise OSError upon failure. The file is "
              "opened in text mode unless the mode says binary, and the encoding defaults "
              "to the locale's preferred encoding.")
QA = [("What does open return?", "a stream"), ("What is raised upon failure?", "OSError"),
      ("What does the encoding default to?", "the locale's preferred encoding")]


def qa_columns():
    questions = [q for q, _ in QA]
    answers = [{"text": [a], "answer_start": [QA_CONTEXT.index(a)]} for _, a in QA]
    return (questions, [QA_CONTEXT] * len(QA)), answers


@pytest.mark.parametrize("seq_length, doc_stride", [(128, 128), (32, 8)])
def test_question_answerer_targets_are_the_answer_tokens(roberta_dirs, bpe_tokenizer_dir,
                                                         seq_length, doc_stride):
    """Every window's training target decodes (by transformers' tokenizer) to
    the answer when the window's context holds it, and is <s> (0) when not;
    one window per question at 128, several (doc_stride 8) at 32."""
    from tfbert import QuestionAnswerer

    reference = transformers.AutoTokenizer.from_pretrained(str(bpe_tokenizer_dir))
    qa = QuestionAnswerer.from_pretrained(roberta_dirs["RobertaModel"][2], seq_length=seq_length,
                                          max_query_length=10, doc_stride=doc_stride)
    x, y = qa_columns()
    (inputs, targets), = list(qa.text_batches(x, y, batch_size=64))
    ids = inputs["input_word_ids"].numpy()
    start, end = targets["start_logits"].numpy(), targets["end_logits"].numpy()
    assert len(ids) == qa.num_texts(x) and (len(ids) == 3) == (seq_length == 128)
    labelled = 0
    for row, s, e in zip(ids, start, end):
        seps = np.flatnonzero(row == reference.sep_token_id)  # q </s></s> window </s>
        assert seps[1] == seps[0] + 1
        window = reference.decode(row[seps[1] + 1:seps[2]])
        answer = next(a for q, a in QA if reference.decode(row[1:seps[0]]) in q)
        if answer in window:
            assert reference.decode(row[s:e + 1]).strip() == answer
            labelled += 1
        else:
            assert s == e == 0
    assert labelled >= 3


def test_question_answerer_predicts_the_span_of_its_logits(roberta_dirs, bpe_tokenizer_dir):
    """predict's answer is the best span of the model's logits over the context
    tokens of transformers' own encoding of (question, context), sliced by its offsets."""
    from tfbert import QuestionAnswerer

    reference = transformers.AutoTokenizer.from_pretrained(str(bpe_tokenizer_dir))
    qa = QuestionAnswerer.from_pretrained(roberta_dirs["RobertaModel"][2], seq_length=128,
                                          max_query_length=24, max_answer_length=8)
    x, _ = qa_columns()
    got = qa.predict(x, verbose=0)
    for (question, _), answer in zip(QA, got):
        enc = reference(question, QA_CONTEXT, max_length=128, padding="max_length",
                        truncation="only_second", return_offsets_mapping=True)
        ids = np.array([enc["input_ids"]], np.int32)
        logits = qa({"input_word_ids": ids, "input_mask": np.array([enc["attention_mask"]]),
                     "input_type_ids": np.zeros_like(ids)})
        s_logits, e_logits = (np.asarray(logits[k])[0] for k in ("start_logits", "end_logits"))
        context = [i for i, s in enumerate(enc.sequence_ids()) if s == 1]
        best = max(((s_logits[s] + e_logits[e], s, e) for s in context for e in context
                    if s <= e < s + 8))
        _, s, e = best
        start, end = enc["offset_mapping"][s][0], enc["offset_mapping"][e][1]
        assert (answer["answer"], answer["start"], answer["end"]) == (
            QA_CONTEXT[start:end], start, end)


def test_question_answerer_in_windows_answers_from_the_original_text(roberta_dirs,
                                                                    bpe_tokenizer_dir):
    """A context longer than one window (seq_length 32, doc_overlap 3): the
    answer is the best span, over transformers' own overflowing windows
    (`stride`), of the model's logits, a start counting in the window where it
    has the most context; its text is the original context sliced by the
    tokens' offsets, bytes for characters (accents in the context)."""
    from tfbert import QuestionAnswerer

    reference = transformers.AutoTokenizer.from_pretrained(str(bpe_tokenizer_dir))
    qa = QuestionAnswerer.from_pretrained(roberta_dirs["RobertaModel"][2], seq_length=32,
                                          max_query_length=20, doc_overlap=3,
                                          max_answer_length=4)
    context = QA_CONTEXT.replace("locale's", "locale’s café")  # multi-byte characters
    questions = [q for q, _ in QA]
    assert max(len(reference(q)["input_ids"]) - 2 for q in questions) <= 20  # none cut
    got = qa.predict((questions, [context] * len(questions)), verbose=0)
    for question, answer in zip(questions, got):
        enc = reference(question, context, max_length=32, truncation="only_second", stride=3,
                        return_overflowing_tokens=True, return_offsets_mapping=True,
                        padding="max_length", return_tensors="np")
        assert len(enc["input_ids"]) > 3  # the context takes several windows
        ids = enc["input_ids"].astype(np.int32)
        logits = qa({"input_word_ids": ids, "input_mask": enc["attention_mask"].astype(np.int32),
                     "input_type_ids": np.zeros_like(ids)})
        # google-research's max context: per context token (its character start),
        # the window where min(left, right) + 0.01 * window length is largest.
        best_window = {}
        for w in range(len(ids)):
            positions = [i for i, s in enumerate(enc.sequence_ids(w)) if s == 1]
            for k, i in enumerate(positions):
                score = min(k, len(positions) - 1 - k) + 0.01 * len(positions)
                key = enc["offset_mapping"][w][i][0]
                if key not in best_window or score > best_window[key][0]:
                    best_window[key] = (score, w)
        spans = []
        for w in range(len(ids)):
            start_logits, end_logits = (np.asarray(logits[k])[w]
                                        for k in ("start_logits", "end_logits"))
            positions = [i for i, s in enumerate(enc.sequence_ids(w)) if s == 1]
            offsets = enc["offset_mapping"][w]
            spans += [(start_logits[s] + end_logits[e], offsets[s][0], offsets[e][1])
                      for s in positions for e in positions
                      if s <= e < s + 4 and best_window[offsets[s][0]][1] == w]
        _, start, end = max(spans)
        assert (answer["answer"], answer["start"], answer["end"]) == (
            context[start:end], start, end)


# -- Pairs count RoBERTa's 4 special tokens (<s> a </s></s> b </s>), not BERT's 3 ---------
LONG_B = " ".join([QA_CONTEXT] * 3)


def test_pair_windows_hold_what_transformers_pair_encoding_holds(
        roberta_dirs, bpe_tokenizer_dir, raises_one_line_from_tfbert):
    """Windowed pairs (TextClassifier / ClassificationTask, long_text: windows):
    a long first text keeps what `truncation=True` keeps of it at that
    max_length ((L - 4) // 2 tokens), a short one goes whole before windows
    equal to transformers' overflowing `only_second` windows at `stride`
    = doc_overlap; doc_overlap as large as the smallest window is one line."""
    from tfbert import BertPreprocessor, TextClassifier
    from tfbert.models.text_classifier import text_windows
    from tfbert.tasks.classification import ClassificationConfig, ClassificationTask

    out = roberta_dirs["RobertaModel"][2]
    reference = transformers.AutoTokenizer.from_pretrained(str(bpe_tokenizer_dir))
    long_a, short_a = QA_CONTEXT, QA[0][0]
    for seq_length, overlap in [(32, 13), (33, 14)]:
        pre = BertPreprocessor.from_pretrained(out, seq_length=seq_length)
        spans, inputs = text_windows(pre, (tf.constant([long_a]), tf.constant([LONG_B])),
                                     seq_length, doc_overlap=overlap)
        theirs = reference(long_a, LONG_B, truncation=True, max_length=seq_length)
        assert inputs["input_word_ids"].numpy()[0].tolist() == theirs["input_ids"]
        spans, inputs = text_windows(pre, (tf.constant([short_a]), tf.constant([LONG_B])),
                                     seq_length, doc_overlap=overlap)
        theirs = reference(short_a, LONG_B, truncation="only_second", max_length=seq_length,
                           stride=overlap, return_overflowing_tokens=True,
                           padding="max_length")
        assert inputs["input_word_ids"].numpy().tolist() == theirs["input_ids"]
        assert inputs["input_mask"].numpy().tolist() == theirs["attention_mask"]
    # At 32 the smallest window after a first text of 14 tokens holds 32 - 4 - 14 = 14.
    raises_one_line_from_tfbert(
        "classifier", lambda: TextClassifier.from_pretrained(
            out, seq_length=32, pairs=True, long_text="windows", doc_overlap=14),
        r"^doc_overlap=14 must be < 14, the text wordpieces of a window after the first text "
        r"at seq_length=32\.$")
    task = ClassificationTask(ClassificationConfig(
        seq_length=32, text_b_column="b", label_list=["0", "1"], long_text="windows",
        doc_overlap=14))
    raises_one_line_from_tfbert(
        "task", lambda: task.prepare(pre),
        r"^ClassificationConfig\.doc_overlap: 14 must be < 14, the text wordpieces of a window "
        r"after the first text at seq_length=32\.$")


def test_question_answering_task_counts_four_special_tokens(
        roberta_dirs, bpe_tokenizer_dir, raises_one_line_from_tfbert):
    """QuestionAnsweringTask on RoBERTa: max_query_length and doc_overlap leave
    room for the context beside 4 special tokens (one line naming the key and
    the numbers otherwise); at the limit every window equals transformers'
    overflowing `only_second` encoding of the cut question and the context."""
    from tfbert import BertPreprocessor
    from tfbert.tasks.question_answering import QuestionAnsweringConfig, QuestionAnsweringTask

    reference = transformers.AutoTokenizer.from_pretrained(str(bpe_tokenizer_dir))
    pre = BertPreprocessor.from_pretrained(roberta_dirs["RobertaModel"][2], seq_length=32)
    task = lambda **kw: QuestionAnsweringTask(QuestionAnsweringConfig(seq_length=32, **kw))
    raises_one_line_from_tfbert(
        "max_query_length", lambda: task(max_query_length=28).prepare(pre),
        r"^QuestionAnsweringConfig\.max_query_length: 28 must be in \[1, seq_length - 5 = 27\] "
        r"\(room for the context beside 4 special tokens\)\.$")
    raises_one_line_from_tfbert(
        "doc_overlap", lambda: task(max_query_length=20, doc_overlap=8).prepare(pre),
        r"^QuestionAnsweringConfig\.doc_overlap: 8 must be in \[0, seq_length - 4 - "
        r"max_query_length = 8\)")
    question = " ".join(q for q, _ in QA)  # longer than any max_query_length below
    for settings, stride in [({"max_query_length": 27}, 0),
                             ({"max_query_length": 20, "doc_overlap": 7}, 7)]:
        enc = reference(question, add_special_tokens=False, return_offsets_mapping=True)
        cut = question[:enc["offset_mapping"][settings["max_query_length"] - 1][1]]
        assert reference(cut, add_special_tokens=False)["input_ids"] == enc["input_ids"][
            :settings["max_query_length"]]  # the cut question reads as the first tokens
        w = task(**settings).prepare(pre).windows(tf.constant([question]),
                                                  tf.constant([QA_CONTEXT]))
        theirs = reference(cut, QA_CONTEXT, truncation="only_second", max_length=32,
                           stride=stride, return_overflowing_tokens=True, padding="max_length")
        assert w["inputs"]["input_word_ids"].numpy().tolist() == theirs["input_ids"]


def test_classification_summary_counts_truncated_pairs_as_transformers(
        roberta_dirs, bpe_tokenizer_dir, tmp_path, hf_test):
    """The classification task's summary counts a pair as truncated when
    transformers' encoding of it (4 special tokens) is longer than seq_length."""
    from tfbert import BertPreprocessor
    from tfbert.tasks.classification import ClassificationConfig, ClassificationTask

    reference = transformers.AutoTokenizer.from_pretrained(str(bpe_tokenizer_dir))
    pairs = [(a, b) for a in hf_test.sentences for b in hf_test.sentences[:3]]
    lengths = [len(reference(a, b)["input_ids"]) for a, b in pairs]
    seq_length = lengths[0] - 1  # the first pair is one token too long with 4 specials
    (tmp_path / "train.tsv").write_text("sentence\tb\tlabel\n" + "".join(
        f"{a}\t{b}\t{i % 2}\n" for i, (a, b) in enumerate(pairs)))
    task = ClassificationTask(ClassificationConfig(
        train_file=str(tmp_path / "train.tsv"), text_b_column="b", seq_length=seq_length))
    task.prepare(BertPreprocessor.from_pretrained(roberta_dirs["RobertaModel"][2],
                                                  seq_length=seq_length))
    want = sum(n > seq_length for n in lengths)
    assert 0 < want < len(pairs)
    assert task.summary()["truncated"] == f"{want} of {len(pairs)} (longer than seq_length)"


# === Strings-in exports of a converted RoBERTa (byte-level BPE in the graph) ===


def stress_corpus():
    """Every 7th line of the Unicode stress corpus of tests/text/test_tokenizer_parity.py
    (1,057 lines of each kind)."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parents[1] / "text" / "test_tokenizer_parity.py"
    spec = importlib.util.spec_from_file_location("tokenizer_parity", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_corpus()[::7]


def test_tf_hub_export_serves_robertas_ids_and_outputs(roberta_dirs, bpe_tokenizer_dir, tmp_path,
                                                        run_python):
    """tools/export.py's --format=tfhub on a converted RoBERTa: the preprocessor
    (BPE files as assets) gives RobertaTokenizerFast's ids for texts and pairs
    (with <mask> written in the text) in a fresh process, through the TF Hub
    API, its TF Serving signatures and a REST body; the encoder gives the
    in-process encoder's outputs."""
    from tfbert.runs.export import ExportConfig, export

    _, _, out = roberta_dirs["RobertaModel"]
    hub_dir = str(tmp_path / "hub")
    export(ExportConfig(checkpoint_dir=str(out), kind="encoder", format="tfhub",
                        output_dir=hub_dir, seq_length=40))
    texts = ["Open <mask> and return a stream.", "Café déjà vu: naïve résumé, 1887!", "",
             "  two  spaces\tand\nlines ", "東京 ☺ \x00 end", "word " * 50]
    pairs = texts[::-1]
    for part, files in (("preprocessor", ("vocab.json", "merges.txt", "special_tokens.json")),
                        ("encoder", ("vocab.json", "merges.txt"))):
        assert sorted(os.listdir(os.path.join(hub_dir, part, "assets"))) == sorted(files)
    served = json.loads(run_python(f"""
import json
import tensorflow as tf, tensorflow_hub as hub
from tfbert.export import serving
from tfbert.export.preprocessor import load_preprocessor
pre = hub.load({hub_dir + "/preprocessor"!r})  # the TF Hub API, as a TF Hub user loads it
texts, pairs = tf.constant({texts!r}), tf.constant({pairs!r})
tokens = pre.tokenize(texts)
packed = pre.bert_pack_inputs([tokens, pre.tokenize(pairs)], seq_length=tf.constant(24))
encoder = hub.load({hub_dir + "/encoder"!r})
inputs = pre(texts)
outputs = encoder(inputs)
rest = serving.predict(load_preprocessor({hub_dir + "/preprocessor"!r}), {{
    "signature_name": "pairs", "instances": [{{"text_a": a, "text_b": b}}
                                             for a, b in zip({texts!r}, {pairs!r})]}})
print(json.dumps({{"ids": inputs["input_word_ids"].numpy().tolist(),
                  "mask": inputs["input_mask"].numpy().tolist(),
                  "types": inputs["input_type_ids"].numpy().tolist(),
                  "tokens": tokens.merge_dims(1, 2).to_list(),
                  "packed": packed["input_word_ids"].numpy().tolist(),
                  "rest": [row["input_word_ids"] for row in rest["predictions"]],
                  "special": {{k: int(v) for k, v in pre.get_special_tokens_dict().items()}},
                  "sequence": outputs["sequence_output"].numpy().tolist()}}))
""").strip().splitlines()[-1])
    reference = transformers.AutoTokenizer.from_pretrained(str(bpe_tokenizer_dir))

    def want(length, *args):
        return reference(*args, padding="max_length", truncation=True, max_length=length)

    single = want(40, texts)
    assert served["ids"] == single["input_ids"] and served["mask"] == single["attention_mask"]
    assert {v for row in served["types"] for v in row} == {0}
    assert served["tokens"] == reference(texts, add_special_tokens=False)["input_ids"]
    assert served["packed"] == want(24, texts, pairs)["input_ids"]
    assert served["rest"] == want(40, texts, pairs)["input_ids"]
    assert served["special"] == {"vocab_size": len(reference), "start_of_sequence_id": 0,
                                 "end_of_segment_id": 2, "padding_id": 1, "mask_id": 4}
    inputs = {"input_word_ids": np.array(single["input_ids"], np.int32),
              "input_mask": np.array(single["attention_mask"], np.int32),
              "input_type_ids": np.zeros((len(texts), 40), np.int32)}
    want = BertEncoder.from_pretrained(out)(inputs)["sequence_output"]
    np.testing.assert_allclose(served["sequence"], want, atol=1e-5)


def test_openvino_bpe_tokenizer_gives_tfberts_ids_on_the_stress_corpus(roberta_dirs):
    """openvino-tokenizers' BPE pieces built from the checkpoint's files (as an
    export's assets hold them) pack as tfbert does, texts and pairs truncated
    longest-first, on every line of the Unicode stress corpus but those that end
    in NUL (openvino-tokenizers drops a text's last NUL; tfbert and transformers
    keep it as byte-level BPE's token for byte 0)."""
    pytest.importorskip("openvino_tokenizers")
    import openvino as ov

    from tfbert import BertPreprocessor
    from tfbert.export.openvino_model import infer
    from tfbert.export.openvino_tokenizer import bpe_tokenizer_model
    from tfbert.export.text_settings import BPE_ASSETS

    out = str(roberta_dirs["RobertaModel"][2])
    settings = {"seq_length": 48, **{k: os.path.join(out, f) for k, f in BPE_ASSETS.items()}}
    preprocessor = BertPreprocessor.from_pretrained(out, seq_length=48)
    lines = stress_corpus()
    differing = []
    for segments in (1, 2):
        request = ov.Core().compile_model(bpe_tokenizer_model(settings, segments),
                                          "CPU").create_infer_request()
        for start in range(0, len(lines), 512):
            batch = [lines[start:start + 512], lines[start + 1:start + 513]][:segments]
            batch[-1] = batch[-1] + lines[:len(batch[0]) - len(batch[-1])]
            want = preprocessor([tf.constant(b) for b in batch])
            got = infer(request, [np.array(b) for b in batch], len(batch[0]))
            for i, (ids, mask) in enumerate(zip(want["input_word_ids"].numpy(),
                                                want["input_mask"].numpy())):
                if got["input_ids"][i][got["attention_mask"][i] == 1].tolist() != ids[mask == 1].tolist():
                    differing.append(tuple(b[i] for b in batch))
    ends_in_nul = [row for row in differing if any(text.endswith("\x00") for text in row)]
    assert differing == ends_in_nul and len(differing) <= 6, differing[:5]
    print(f"\nOpenVINO BPE tokenizer: {2 * len(lines) - len(differing)} of {2 * len(lines)} "
          f"texts and pairs give tfbert's ids (the others end in NUL)")


def test_tflite_and_bad_export_inputs_are_one_line(roberta_dirs, tmp_path,
                                                   raises_one_line_from_tfbert):
    """TFLite cannot hold byte-level BPE: refused in one line naming the op,
    from Python and from the tool's settings, before any conversion; and
    other bad export inputs of a BPE checkpoint are one line each."""
    from tfbert import BertPreprocessor
    from tfbert.export import tflite
    from tfbert.export.encoder import export_encoder
    from tfbert.export.preprocessor import export_preprocessor
    from tfbert.runs.export import ExportConfig, export

    _, _, out = roberta_dirs["RobertaModel"]
    preprocessor = BertPreprocessor.from_pretrained(out, seq_length=16)
    encoder = BertEncoder.from_pretrained(out)
    refusal = r"^TFLite cannot tokenize byte-level BPE \(RoBERTa\): LiteRT has no kernel for HashTableV2"
    raises_one_line_from_tfbert("tflite", lambda: tflite.export_text_tflite(
        preprocessor, encoder, str(tmp_path / "m.tflite")), refusal)
    raises_one_line_from_tfbert("tflite tool", lambda: export(ExportConfig(
        checkpoint_dir=str(out), kind="encoder", format="tflite", text_input=True,
        output_dir=str(tmp_path / "tfl"))), refusal)
    assert not (tmp_path / "m.tflite").exists() and not (tmp_path / "tfl").exists()
    raises_one_line_from_tfbert("seq_length", lambda: export_preprocessor(
        preprocessor, str(tmp_path / "pre"), seq_length=600), r"max_position_embeddings")
    raises_one_line_from_tfbert("merges", lambda: export_encoder(
        encoder, str(tmp_path / "enc"), vocab_file=os.path.join(out, "vocab.json"),
        merges_file=str(tmp_path / "merges.txt")), r"^Merges file not found: .*merges\.txt$")
    raises_one_line_from_tfbert("three segments", lambda: preprocessor(
        [["a"], ["b"], ["c"]]), r"RoBERTa's packing takes a text or a pair")
