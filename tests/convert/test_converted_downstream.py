"""The models and tasks on a converted RoBERTa or DistilBERT checkpoint (issue
64 item 3), against transformers' own classes from the same weights: word
alignment for tagging, pairs, sentence embeddings, and one fine-tuning step
(plain SGD, dropout off on both sides) giving transformers' loss before and
after it. Fixtures: tests/convert/conftest.py."""

import json
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

# CoNLL-like words: punctuation at word edges, inner punctuation, accents.
TEXTS = ["Open (the) file, (Reuters), and return a stream.",
         "Café déjà vu: naïve résumé, 1887!",
         "U.S. says it didn't raise ValueError if the value is not present.",
         "ok"]
WORDS = [["Open", "(", "the", ")", "file", ",", "(", "Reuters", ")", ",", "and", "return", "a",
          "stream", "."],
         ["Café", "déjà", "vu", ":", "naïve", "résumé", ",", "1887", "!"],
         ["U.S", ".", "says", "it", "didn't", "raise", "ValueError", "if", "the", "value", "is",
          "not", "present", "."],
         ["ok"]]
LABELS = ["O", "B-X", "I-X"]
LEARNING_RATE = 0.5  # large: the step must move the loss for "after" to mean something
STEP_ATOL = 1e-5  # the losses agree to 2.4e-7 (float32 sums in another order)


def without_dropout(checkpoint_dir, tmp_path):
    """A copy of a tfbert checkpoint whose encoder has no dropout (transformers'
    `eval()` side of the comparison)."""
    out = tmp_path / "no_dropout"
    shutil.copytree(checkpoint_dir, out)
    config = json.loads((out / "config.json").read_text())
    config["encoder"].update(dropout_rate=0.0, attention_dropout_rate=0.0)
    (out / "config.json").write_text(json.dumps(config))
    return str(out)


def assert_same_step(what, model, x, y, torch_model, batch, labels):
    """The loss before and after one plain SGD step on one batch: tfbert's
    `fit(x, y)` (its compile() loss) equals transformers' on `batch`, `labels`
    (dropout off: `eval()`), within 1e-5; the step moves it by over 1e-3."""
    torch_model.eval()
    optimizer = torch.optim.SGD(torch_model.parameters(), lr=LEARNING_RATE)
    theirs = []
    for _ in range(2):
        loss = torch_model(**batch, labels=torch.from_numpy(np.asarray(labels))).loss
        theirs.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.compile(optimizer=keras.optimizers.SGD(LEARNING_RATE))
    ours = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    print(f"{what} loss, before/after one SGD step: tfbert {ours}, transformers {theirs}")
    # The step must move the loss far past the tolerance, or "after" would be
    # "before" again. Far past, not by a fixed amount: with a fresh random head
    # the step's size varies from run to run (0.005 to 0.2 seen).
    assert abs(theirs[1] - theirs[0]) > 100 * STEP_ATOL
    np.testing.assert_allclose(ours, theirs, atol=STEP_ATOL)


def word_labels(reference):
    """`(encoding, tags, labels)`: transformers' encoding of WORDS, a tag id per
    word, and its token labels (the tag on each word's first token by
    `word_ids()`, -100 elsewhere: transformers' token-classification recipe)."""
    tags = [[i % len(LABELS) for i in range(len(w))] for w in WORDS]
    enc = reference(WORDS, is_split_into_words=True, padding=True, return_tensors="pt")
    labels = np.full(enc["input_ids"].shape, -100)
    for row in range(len(WORDS)):
        ids = enc.word_ids(row)
        for position, word in enumerate(ids):
            if word is not None and (position == 0 or ids[position - 1] != word):
                labels[row, position] = tags[row][word]
    return enc, tags, labels


@pytest.fixture(scope="module")
def families(roberta_dirs, distilbert_dirs):
    """{family: (HF directory, tfbert checkpoint, its ...ForTokenClassification,
    reference tokenizer keywords)}."""
    return {"roberta": (*roberta_dirs["RobertaModel"][::2],
                        transformers.RobertaForTokenClassification, {"add_prefix_space": True}),
            "distilbert": (*distilbert_dirs["model"][::2],
                           transformers.DistilBertForTokenClassification, {})}


@pytest.mark.parametrize("family", ["roberta", "distilbert"])
def test_token_classifier_words_and_one_step_as_transformers(families, family, tmp_path):
    """Each word's tag on its first piece: the ids and labelled positions of
    transformers' `is_split_into_words` encoding (RoBERTa: `add_prefix_space`,
    every word a 'Ġ' piece; DistilBERT: '##'); raw strings split into the same
    words (byte offsets into the text), tokenized as those words; one SGD step
    gives XForTokenClassification's loss before and after it, within 1e-5."""
    from tfbert import TokenClassifier

    src, out, hf_class, keywords = families[family]
    reference = transformers.AutoTokenizer.from_pretrained(str(src), **keywords)
    enc, tags, want = word_labels(reference)
    model = TokenClassifier.from_pretrained(without_dropout(out, tmp_path), label_list=LABELS,
                                            seq_length=64, dropout=0.0)
    (inputs, labels, weights), = list(model.text_batches(WORDS, tags, batch_size=8))
    width = enc["input_ids"].shape[1]
    np.testing.assert_array_equal(inputs["input_word_ids"].numpy()[:, :width], enc["input_ids"])
    np.testing.assert_array_equal(np.where(weights.numpy() > 0, labels.numpy(), -100)[:, :width],
                                  want)
    pieces, starts, ends = model.splitter(tf.constant(TEXTS))
    for row, text in enumerate(TEXTS):
        raw = text.encode("utf-8")
        assert [raw[s:e].decode("utf-8") for s, e in zip(starts[row].numpy(),
                                                         ends[row].numpy())] == WORDS[row]
        real = enc["input_ids"][row][enc["attention_mask"][row] > 0].tolist()
        assert pieces[row].flat_values.numpy().tolist() == real[1:-1]
    # One step from the same weights: transformers' head gets tfbert's fresh one.
    torch_model = hf_class.from_pretrained(str(src), num_labels=len(LABELS))
    head = model.get_layer(model.head_layer)
    with torch.no_grad():
        torch_model.classifier.weight.copy_(torch.from_numpy(head.kernel.numpy().T))
        torch_model.classifier.bias.copy_(torch.from_numpy(head.bias.numpy()))
    assert_same_step(f"{family} token classification", model, WORDS, tags, torch_model,
                     {k: enc[k] for k in ("input_ids", "attention_mask")}, want)


def test_tagging_task_labels_first_pieces_as_transformers(roberta_dirs, tmp_path):
    """The tagging task on a converted RoBERTa: a CoNLL file's words and tags
    become transformers' `is_split_into_words` ids (`add_prefix_space`) with
    each tag on the first token of its word (`word_ids()`)."""
    from tfbert import BertPreprocessor
    from tfbert.tasks.tagging import TaggingConfig, TaggingTask

    src, _, out = roberta_dirs["RobertaModel"]
    reference = transformers.AutoTokenizer.from_pretrained(str(src), add_prefix_space=True)
    enc, tags, want = word_labels(reference)
    conll = tmp_path / "train.conll"
    conll.write_text("\n\n".join("\n".join(f"{w} {LABELS[t]}" for w, t in zip(words, row))
                                 for words, row in zip(WORDS, tags)) + "\n")
    task = TaggingTask(TaggingConfig(label_list=LABELS, seq_length=64, bucketing=False))
    task.prepare(BertPreprocessor.from_pretrained(out, seq_length=64))
    (inputs, labels, weights), = list(task.dataset(str(conll), batch_size=8))
    width = enc["input_ids"].shape[1]
    np.testing.assert_array_equal(inputs["input_word_ids"].numpy()[:, :width], enc["input_ids"])
    np.testing.assert_array_equal(np.where(weights.numpy() > 0, labels.numpy(), -100)[:, :width],
                                  want)


def test_text_classifier_one_step_as_roberta_for_sequence_classification(
        roberta_dirs, hf_test, tmp_path):
    """TextClassifier.from_pretrained keeps a converted RobertaForSequenceClassification's
    head (3 labels); one SGD step on raw strings gives its loss before and after."""
    from tfbert import TextClassifier

    src, hf_model, out = roberta_dirs["RobertaForSequenceClassification"]
    model = TextClassifier.from_pretrained(without_dropout(out, tmp_path), dropout=0.0,
                                           seq_length=64)
    assert model.num_classes == 3
    texts, labels = hf_test.sentences, np.array([0, 2, 1, 1, 0])
    reference = transformers.AutoTokenizer.from_pretrained(str(src))
    enc = reference(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = hf_model(**enc).logits.numpy()
    np.testing.assert_allclose(model.predict(texts, verbose=0), logits, atol=1e-5)
    torch_model = transformers.RobertaForSequenceClassification.from_pretrained(str(src))
    assert_same_step("RobertaForSequenceClassification", model, texts, labels, torch_model,
                     dict(enc), labels)


def test_sentence_encoder_and_cross_encoder_on_roberta(roberta_dirs, hf_test,
                                                       raises_one_line_from_tfbert):
    """SentenceEncoder: RobertaModel's normalized mean over the text's tokens.
    CrossEncoder: its head on RobertaModel's pooler over transformers' pair
    encoding (<s> a </s></s> b </s>). A pair that cannot hold 4 special tokens
    is one line, in the model and in the cross-encoder task, before packing."""
    from tfbert import BertEncoder, BertPreprocessor, CrossEncoder, SentenceEncoder
    from tfbert.tasks.classification import ClassificationConfig, ClassificationTask
    from tfbert.tasks.cross_encoder import CrossEncoderConfig, CrossEncoderTask

    src, hf_model, out = roberta_dirs["RobertaModel"]
    texts = hf_test.sentences
    reference = transformers.AutoTokenizer.from_pretrained(str(src))
    enc = reference(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        tokens = hf_model(**enc).last_hidden_state.numpy()
    mask = enc["attention_mask"].numpy()[..., None]
    mean = (tokens * mask).sum(1) / mask.sum(1)
    want = mean / np.linalg.norm(mean, axis=1, keepdims=True)
    got = SentenceEncoder.from_pretrained(out, seq_length=64).encode(texts)
    np.testing.assert_allclose(got, want, atol=1e-5)

    pairs = list(zip(texts, texts[::-1]))
    cross = CrossEncoder(BertEncoder.from_pretrained(out),
                         BertPreprocessor.from_pretrained(out, seq_length=128))
    enc = reference([a for a, _ in pairs], [b for _, b in pairs], padding=True,
                    return_tensors="pt")
    with torch.no_grad():
        pooled = hf_model(**enc).pooler_output.numpy()
    head = cross.get_layer(cross.head_layer)
    logits = pooled @ head.kernel.numpy()[:, 0] + head.bias.numpy()[0]
    np.testing.assert_allclose(cross.predict(pairs, activation=None), logits, atol=1e-5)

    check = raises_one_line_from_tfbert
    short = BertPreprocessor.from_pretrained(out, seq_length=3)
    check("model", lambda: CrossEncoder(BertEncoder.from_pretrained(out), short),
          r"^seq_length=3 must be >= 4 for pairs, the special tokens of <s> a </s></s> b </s>\.$")
    check("task", lambda: CrossEncoderTask(CrossEncoderConfig(seq_length=3)).prepare(short),
          r"^CrossEncoderConfig\.seq_length: 3 must be >= 4 for pairs")
    pairs_task = ClassificationTask(ClassificationConfig(seq_length=3, text_b_column="b",
                                                         label_list=["0", "1"]))
    check("classification", lambda: pairs_task.prepare(short),
          r"^ClassificationConfig\.seq_length: 3 must be >= 4 for pairs")
