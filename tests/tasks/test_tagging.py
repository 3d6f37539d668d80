"""TaggingTask: word-label alignment to wordpieces, decoding, offsets, errors."""

import os

import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertEncoder, TokenClassifier
from tfbert.tasks.tagging import IGNORE, TaggingConfig, TaggingTask

CONLL = ("-DOCSTART- -X- -X- O\n\n"
         "Angela NNP I-NP B-PER\nMerkel NNP I-NP I-PER\nvisited VBD I-VP O\n"
         "the DT I-NP O\nU.S. NNP I-NP B-LOC\n. . O O\n\n"
         "Reuters NNP I-NP B-ORG\nreported VBD I-VP O\nunbelievably RB O O\nlow JJ I-NP O\n")


@pytest.fixture()
def conll(tmp_path):
    path = tmp_path / "d.conll"
    path.write_text(CONLL, encoding="utf-8")
    return str(path)


def test_labels_on_first_wordpiece_only(conll, make_preprocessor):
    task = TaggingTask(TaggingConfig(train_file=conll, dev_file=conll, seq_length=16))
    pre = make_preprocessor(16)
    task.prepare(pre)
    assert task.label_list == ["O", "B-LOC", "B-ORG", "B-PER", "I-PER"]
    assert task.main_metric == "f1"
    x, labels, weights = next(iter(task.dataset(conll, batch_size=2)))
    tokens = [t.decode() for t in pre.id_to_token(x["input_word_ids"][0]).numpy()]
    # "U.S." is one CoNLL word: four pieces, only the first labelled.
    assert tokens[:12] == ["[CLS]", "angela", "mer", "##kel", "visited", "the", "u", ".", "s",
                           ".", ".", "[SEP]"]
    names = [task.label_list[i] if w else None
             for i, w in zip(labels[0].numpy(), weights[0].numpy())]
    assert names[:12] == [None, "B-PER", "I-PER", None, "O", "O", "B-LOC", None, None, None,
                          "O", None]
    assert weights.numpy().sum() == 6 + 4
    # "unbelievably" splits into several pieces: label on the first.
    tokens = [t.decode() for t in pre.id_to_token(x["input_word_ids"][1]).numpy()]
    first = tokens.index("un")
    assert weights[1, first] == 1 and weights[1, first + 1] == 0


def test_truncation_and_decode(conll, make_preprocessor):
    task = TaggingTask(TaggingConfig(train_file=conll, dev_file=conll, seq_length=6))
    task.prepare(make_preprocessor(6))
    x, labels, weights = next(iter(task.dataset(conll, batch_size=2)))
    assert labels.shape == (2, 6) and weights.numpy()[0].tolist() == [0, 1, 1, 0, 1, 0]
    inputs, ref = task.eval_data(conll, 2)
    assert ref["positions"][0].tolist() == [1, 2, 4, -1, -1, -1]  # mer ##kel
    logits = np.zeros((2, 6, 5))
    logits[0, 1, 3] = logits[0, 2, 4] = logits[1, 1, 2] = 1  # B-PER I-PER / B-ORG
    tags = task.decode(logits, ref["positions"])
    assert tags[0] == ["B-PER", "I-PER", "O", "O", "O", "O"]
    s = task.score(logits, ref)
    # PER and ORG found; LOC was truncated away: P=1, R=2/3.
    assert s["precision"] == 1.0 and s["recall"] == pytest.approx(2 / 3)


def test_pos_tags_scored_by_accuracy(data_dir, make_preprocessor):
    path = os.path.join(data_dir, "ner_dev.conll")
    task = TaggingTask(TaggingConfig(train_file=path, dev_file=path, tag_column=1))
    task.prepare(make_preprocessor(48))
    assert "NNP" in task.label_list and task.main_metric == "accuracy"
    inputs, ref = task.eval_data(path, 16)
    logits = np.zeros((len(ref["tags"]), 48, len(task.label_list)))
    logits[..., task.label_list.index("NNP")] = 1
    s = task.score(logits, ref)
    assert set(s) == {"accuracy"}
    nnp = sum(t == "NNP" for seq in ref["tags"] for t in seq)
    assert s["accuracy"] == pytest.approx(nnp / sum(map(len, ref["tags"])))


def test_raw_strings_words_and_offsets(tiny_config, make_preprocessor):
    task = TaggingTask(TaggingConfig(label_list=["O", "B-PER", "I-PER"], seq_length=10))
    task.prepare(make_preprocessor(10))
    text = ["Ürgüp  hosted the U.S. team, didn't it?", "", "(Reuters) said \"Hi!\""]
    pieces, starts, ends = task.text_words(tf.constant(text))
    # Whitespace tokens with edge punctuation split off, as CoNLL tokenizes;
    # inner punctuation stays. Offsets are bytes.
    words = [[t.encode()[s:e].decode() for s, e in zip(ss, ee)]
             for t, ss, ee in zip(text, starts.to_list(), ends.to_list())]
    assert words == [["Ürgüp", "hosted", "the", "U.S", ".", "team", ",", "didn't", "it", "?"],
                     [], ["(", "Reuters", ")", "said", '"', "Hi", "!", '"']]
    assert pieces.to_list()[0][3] == [1057, 1012, 1055]  # u . s
    model = task.build_model(BertEncoder(tiny_config))
    out = task.predict(model, text)
    # Character offsets; words whose first piece does not fit seq_length=10
    # ([CLS] + 8 pieces + [SEP]; ürgüp is 3 pieces) are dropped.
    assert [w for w, _, _, _ in out[0]] == ["Ürgüp", "hosted", "the", "U.S"]
    assert [(s, e) for _, _, s, e in out[0]] == [(0, 5), (7, 13), (14, 17), (18, 21)]
    assert out[1] == [] and len(out[2]) == 8
    assert all(tag in task.label_list for row in out for _, tag, _, _ in row)
    # Tags are the argmax at each word's first piece.
    logits = model(task.preprocessor(tf.constant(["Tom"])))
    assert task.predict(model, ["Tom"])[0][0][1] == task.label_list[int(np.argmax(logits[0, 1]))]
    # The task's model is the strings-in TokenClassifier a user's fit trains:
    # its own predict gives the task's words, tags and offsets.
    assert isinstance(model, TokenClassifier) and model.label_list == task.label_list
    assert [[(w["word"], w["tag"], w["start"], w["end"]) for w in row]
            for row in model.predict(text, verbose=0)] == out


def test_bad_input_errors(tmp_path, conll, make_preprocessor):
    dev = tmp_path / "dev.conll"
    dev.write_text("Paris NNP I-NP B-LOC\nis VBZ I-VP O\n\nRome NNP I-NP B-CITY\n")
    task = TaggingTask(TaggingConfig(train_file=conll, dev_file=str(dev)))
    task.prepare(make_preprocessor())
    with pytest.raises(ValueError, match=r"dev\.conll, line 4: tag 'B-CITY' is not in the label"):
        task.eval_data(str(dev), 8)
    bad = tmp_path / "bad.conll"
    bad.write_text("Paris B-LOC\nis\n")
    with pytest.raises(ValueError, match=r"bad\.conll, line 2: expected 'word ... tag'"):
        TaggingTask(TaggingConfig(train_file=str(bad))).prepare(make_preprocessor())
    assert IGNORE == -1


def test_length_bucketing_same_loss(conll, tiny_config, make_preprocessor):
    """Training batches are cut to a bucket width; the weighted loss and
    accuracy on them equal fixed padding's (cut columns are padding only)."""
    tasks = {}
    for bucketing in (True, False):
        task = TaggingTask(TaggingConfig(train_file=conll, dev_file=conll, seq_length=128,
                                         bucketing=bucketing))
        task.prepare(make_preprocessor(128))
        tasks[bucketing] = task
    model = tasks[True].build_model(BertEncoder(tiny_config))
    results = {}
    for bucketing, task in tasks.items():
        x, labels, weights = next(iter(task.dataset(conll, batch_size=2)))
        logits = model(x, training=False)
        loss = task.loss()(labels, logits, sample_weight=weights)
        hits = (tf.argmax(logits, -1, output_type=tf.int32) == labels).numpy() * weights.numpy()
        results[bucketing] = (labels.shape[1], float(loss), hits.sum(), weights.numpy().sum())
    assert results[True][0] == 16 and results[False][0] == 128
    assert results[True][1] == pytest.approx(results[False][1], abs=1e-5)
    assert results[True][2:] == results[False][2:]
