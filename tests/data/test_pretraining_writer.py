"""Pretraining instances, TFRecords and the dynamic-masking dataset."""

import json
import pathlib
import random

import numpy as np
import pytest
import tensorflow as tf

from tfbert.data.pretraining import writer as pretraining
from tfbert.data.pretraining.writer import InstanceBuilder, pretraining_dataset, write_pretraining_data
from tfbert.text.masking import MaskedLMMasker
from tfbert.text.tokenizer import BertTokenizer

DATA = pathlib.Path(__file__).parent / "pretraining"
CORPUS = DATA / "corpus.txt"
VOCAB = DATA / "vocab.txt"


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(vocab_file=str(VOCAB), lower_case=True)


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    docs = CORPUS.read_text(encoding="utf-8").split("\n\n")[:60]
    path = tmp_path_factory.mktemp("corpus") / "small.txt"
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def written(small_corpus, tokenizer, tmp_path_factory):
    out = tmp_path_factory.mktemp("records")
    meta = write_pretraining_data(small_corpus, str(out), tokenizer, seq_length=64,
                                  num_shards=2, buffer_documents=20, log=lambda *_: None)
    return out, meta


def synthetic_documents(num_docs=40, seed=0):
    """Sentence j of document d is [1000*d + 10*j + k for k ...]: the origin
    of every token is known."""
    rng = random.Random(seed)
    return [[[1000 * d + 10 * j + k for k in range(rng.randint(3, 9))]
             for j in range(rng.randint(1, 12))] for d in range(num_docs)]


def test_actual_next_pairs_are_continuations_and_random_pairs_are_not():
    docs = synthetic_documents()
    builder = InstanceBuilder(seq_length=40, short_seq_prob=0.1, rng=random.Random(1))
    instances = [i for d in range(len(docs)) for i in builder.from_document(docs, d)]
    labels = [r for _, _, r in instances]
    assert 0.45 < np.mean(labels) < 0.55
    for a, b, is_random in instances:
        assert 1 <= len(a) and 1 <= len(b) and len(a) + len(b) <= 37
        doc_a, doc_b = {t // 1000 for t in a}, {t // 1000 for t in b}
        assert len(doc_a) == 1 and len(doc_b) == 1
        if is_random:
            assert doc_a != doc_b
        else:
            assert doc_a == doc_b and max(a) < min(b)  # B follows A


def test_nsp_label_balance_and_lengths_on_real_text(written):
    out, meta = written
    assert meta["instances"] > 100
    assert abs(meta["random_next"] / meta["instances"] - 0.5) < 0.05
    ds = tf.data.TFRecordDataset(sorted(str(p) for p in out.glob("*.tfrecord")))
    lengths = []
    for raw in ds:
        ex = tf.train.Example.FromString(raw.numpy()).features.feature
        ids = np.array(ex["input_word_ids"].int64_list.value)
        assert len(ids) == 64
        mask = np.array(ex["input_mask"].int64_list.value)
        lengths.append(mask.sum())
        assert ids[0] == 2 and (ids[mask == 0] == 0).all()
    assert np.mean(lengths) > 40  # segments are filled, not one sentence each


def test_output_is_deterministic_for_a_seed(small_corpus, tokenizer, tmp_path):
    def digest(out, seed):
        write_pretraining_data(small_corpus, str(out), tokenizer, seq_length=32,
                               seed=seed, log=lambda *_: None)
        return (out / "pretrain-00000-of-00001.tfrecord").read_bytes()

    assert digest(tmp_path / "a", 1) == digest(tmp_path / "b", 1)
    assert digest(tmp_path / "a", 1) != digest(tmp_path / "c", 2)


def test_two_processes_write_the_same_bytes(small_corpus, tmp_path, run_python):
    """Protocol buffers order a map's entries differently in every process
    unless asked not to: the shards are the same bytes, not only the same examples."""
    source = f"""
import hashlib, tempfile
from tfbert.data.pretraining.writer import write_pretraining_data
from tfbert.text.tokenizer import BertTokenizer
out = tempfile.mkdtemp(dir={str(tmp_path)!r})
write_pretraining_data({small_corpus!r}, out, BertTokenizer(vocab_file={str(VOCAB)!r}),
                       seq_length=32, log=lambda *_: None)
print(hashlib.sha256(open(out + "/pretrain-00000-of-00001.tfrecord", "rb").read()).hexdigest())
"""
    assert run_python(source) == run_python(source)


def test_mlm_only_fills_segments_from_contiguous_text_and_splits_long_lines():
    docs = [[list(range(1, 200))]]  # one line far longer than seq_length
    builder = InstanceBuilder(seq_length=32, short_seq_prob=0.0, use_nsp=False)
    instances = builder.from_document(docs, 0)
    assert [len(a) for a, _, _ in instances] == [30] * 6 + [19]
    assert sum((a for a, _, _ in instances), []) == list(range(1, 200))
    assert all(not b and not r for _, b, r in instances)


def test_nsp_truncates_long_lines_to_seq_length():
    docs = [[list(range(1, 300)), list(range(300, 310))], [list(range(1000, 1400))]]
    builder = InstanceBuilder(seq_length=32, short_seq_prob=0.0, rng=random.Random(0))
    instances = builder.from_document(docs, 0) + builder.from_document(docs, 1)
    assert instances and all(len(a) + len(b) <= 29 for a, b, _ in instances)


def test_one_sentence_documents_give_random_pairs(tokenizer, tmp_path):
    corpus = tmp_path / "one.txt"
    corpus.write_text("\n\n".join(f"Document number {i} has one sentence only." for i in range(30)))
    meta = write_pretraining_data(str(corpus), str(tmp_path / "out"), tokenizer,
                                  seq_length=32, log=lambda *_: None)
    assert meta["instances"] == 30 and meta["random_next"] == 30


def test_bad_corpora_give_clear_errors(tokenizer, tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        write_pretraining_data(str(tmp_path / "missing.txt"), str(tmp_path / "o"), tokenizer)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n  \n")
    with pytest.raises(ValueError, match="no pretraining instances"):
        write_pretraining_data(str(empty), str(tmp_path / "o"), tokenizer, log=lambda *_: None)
    single = tmp_path / "single.txt"
    single.write_text("One document.\nWith two sentences.\n")
    with pytest.raises(ValueError, match="at least 2 documents"):
        write_pretraining_data(str(single), str(tmp_path / "o"), tokenizer, log=lambda *_: None)
    assert not list((tmp_path / "o").glob("*.tfrecord"))


def test_dynamic_dataset_shapes_and_resume_skip(written):
    out, _ = written
    masker = MaskedLMMasker.from_vocab(str(VOCAB), max_predictions=10)
    files = str(out / "*.tfrecord")
    full = list(pretraining_dataset(files, 8, masker=masker, seed=3).take(6))
    x, y = full[0]
    assert x["input_word_ids"].shape == (8, 64) and x["input_word_ids"].dtype == tf.int32
    assert x["masked_lm_positions"].shape == (8, 10)
    assert y["next_sentence_labels"].shape == (8,)
    # A resumed run skipping 4 batches sees exactly batches 4 and 5, same masks.
    resumed = list(pretraining_dataset(files, 8, masker=masker, seed=3, skip_batches=4).take(2))
    for (xa, ya), (xb, yb) in zip(full[4:], resumed):
        for k in xa:
            np.testing.assert_array_equal(xa[k].numpy(), xb[k].numpy())
        for k in ya:
            np.testing.assert_array_equal(ya[k].numpy(), yb[k].numpy())
    # Dynamic masking: the same example gets new masks in a new epoch.
    a = next(iter(pretraining_dataset(files, 8, masker=masker, seed=3, shuffle_buffer=0)))
    b = next(iter(pretraining_dataset(files, 8, masker=masker, seed=4, shuffle_buffer=0)))
    assert not np.array_equal(a[0]["masked_lm_positions"], b[0]["masked_lm_positions"])


def test_static_masks_are_stored_and_read(small_corpus, tokenizer, tmp_path):
    masker = MaskedLMMasker.from_vocab(str(VOCAB), max_predictions=12)
    meta = write_pretraining_data(small_corpus, str(tmp_path), tokenizer, seq_length=64,
                                  masker=masker, log=lambda *_: None)
    assert meta["static_masking"] and meta["max_predictions"] == 12
    x, y = next(iter(pretraining_dataset(str(tmp_path / "*.tfrecord"), 16, seed=0)))
    assert x["masked_lm_positions"].shape == (16, 12)
    w = y["masked_lm_weights"].numpy()
    assert 0.1 < w.sum() / x["input_mask"].numpy().sum() < 0.16
    ids = x["input_word_ids"].numpy()
    pos = x["masked_lm_positions"].numpy()
    picked = np.take_along_axis(ids, pos, axis=1)[w > 0]
    assert np.mean(picked == masker.mask_id) > 0.6


def test_reader_errors(written, tmp_path):
    out, _ = written
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        pretraining_dataset(str(tmp_path / "nothing-here*.tfrecord"), 4)
    with pytest.raises(ValueError, match="no stored masks"):
        pretraining_dataset(str(out / "*.tfrecord"), 4)
    lonely = tmp_path / "x.tfrecord"
    lonely.write_bytes(b"")
    with pytest.raises(FileNotFoundError, match=pretraining.METADATA_FILE):
        pretraining_dataset(str(lonely), 4)
    meta = json.loads((out / pretraining.METADATA_FILE).read_text())
    wrong = MaskedLMMasker(vocab_size=meta["vocab_size"] + 1, mask_id=4, special_ids=[0])
    with pytest.raises(ValueError, match="vocab"):
        pretraining_dataset(str(out / "*.tfrecord"), 4, masker=wrong)


def test_memory_does_not_grow_with_the_corpus(tokenizer, tmp_path):
    import tracemalloc

    docs = CORPUS.read_text(encoding="utf-8").split("\n\n")

    def peak_bytes(num_docs):
        corpus = tmp_path / f"c{num_docs}.txt"
        corpus.write_text("\n\n".join(docs[i % len(docs)] for i in range(num_docs)), encoding="utf-8")
        bounds = dict(seq_length=32, buffer_documents=40, random_next_pool=100,
                      bucket_instances=500, log=lambda *_: None)
        write_pretraining_data(str(corpus), str(tmp_path / "warm"), tokenizer, **bounds)  # trace
        tracemalloc.start()
        meta = write_pretraining_data(str(corpus), str(tmp_path / f"o{num_docs}"), tokenizer,
                                      **bounds)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return peak, meta["instances"]

    # Both corpora cycle through all 600 documents, so the buffers hold the
    # same kinds of documents; only the number of buffers and buckets differs.
    small, small_n = peak_bytes(600)
    large, large_n = peak_bytes(2400)
    assert large_n > 3.5 * small_n
    assert large < 1.2 * small, (small, large)


def test_shards_are_mixed_whatever_the_corpus_order(two_sources, tokenizer, tmp_path):
    meta = write_pretraining_data(two_sources.path, str(tmp_path), tokenizer, seq_length=32,
                                  num_shards=3, dupe_factor=2, bucket_instances=1500, random_next_pool=200,
                                  log=lambda *_: None)
    examples = two_sources.training_stream(str(tmp_path / "*.tfrecord"))
    assert len(examples) == meta["instances"] // 50 * 50
    share, shares = two_sources.assert_mixed(examples)
    print(f"{len(examples)} examples, reference share {share:.3f}, windows of 1000: "
          f"{min(shares):.3f}..{max(shares):.3f}")


def test_sop_pairs_are_consecutive_segments_in_or_out_of_order():
    docs = synthetic_documents(num_docs=300)
    docs.append([[999000 + k for k in range(7)]])  # one sentence: split inside it
    builder = InstanceBuilder(seq_length=40, short_seq_prob=0.1, rng=random.Random(2),
                              next_sentence_task="sop")
    instances = [i for d in range(len(docs)) for i in builder.from_document(docs, d)]
    labels = [r for _, _, r in instances]
    assert len(instances) > 200 and 0.47 < np.mean(labels) < 0.53
    streams = {doc[0][0] // 1000: [t for s in doc for t in s] for doc in docs}
    for a, b, swapped in instances:
        assert a and b and len(a) + len(b) <= 37
        first, second = (b, a) if swapped else (a, b)
        doc = {t // 1000 for t in a + b}
        assert len(doc) == 1  # always the same document, never a random one
        stream = streams[doc.pop()]
        # In order, the two segments are one contiguous run of the document.
        start = stream.index(first[0])
        assert stream[start:start + len(first) + len(second)] == first + second
    assert any(a[0] >= 999000 for a, _, _ in instances)


def test_sop_data_and_the_task_check_of_the_reader(small_corpus, tokenizer, tmp_path):
    meta = write_pretraining_data(small_corpus, str(tmp_path), tokenizer, seq_length=64,
                                  next_sentence_task="sop", log=lambda *_: None)
    assert meta["next_sentence_task"] == "sop" and meta["use_nsp"]
    assert abs(meta["random_next"] / meta["instances"] - 0.5) < 0.03
    masker = MaskedLMMasker.from_vocab(str(VOCAB), max_predictions=8)
    files = str(tmp_path / "*.tfrecord")
    _, y = next(iter(pretraining_dataset(files, 8, masker=masker)))
    assert y["next_sentence_labels"].shape == (8,)
    with pytest.raises(ValueError, match="next_sentence_task=sop; training asks for nsp"):
        pretraining_dataset(files, 8, masker=masker, next_sentence_task="nsp")
    x, y = next(iter(pretraining_dataset(files, 8, masker=masker, use_nsp=False)))
    assert "next_sentence_labels" not in y  # MLM only on pair data is fine
    with pytest.raises(ValueError, match="conflicts"):
        InstanceBuilder(32, use_nsp=False, next_sentence_task="sop")


def test_eval_split_holds_out_whole_documents(small_corpus, tokenizer, tmp_path):
    meta = write_pretraining_data(small_corpus, str(tmp_path), tokenizer, seq_length=64,
                                  eval_fraction=0.2, log=lambda *_: None)
    held = json.loads((tmp_path / "eval" / pretraining.METADATA_FILE).read_text())
    assert held["split"] == "eval" and meta["eval_instances"] == held["instances"] > 10
    assert 0.1 < held["documents"] / (held["documents"] + meta["documents"]) < 0.3
    assert not list(tmp_path.glob(".tmp-*"))  # temporary buckets are gone

    def texts(directory):
        return {tf.train.Example.FromString(r.numpy()).features.feature["input_word_ids"]
                .int64_list.value[1:6].__repr__() for r in tf.data.TFRecordDataset(
                    sorted(str(p) for p in directory.glob("*.tfrecord")))}
    # Held-out documents give no training instance (segment A never shared).
    assert len(texts(tmp_path / "eval") & texts(tmp_path)) < 0.05 * held["instances"]
    # Rewritten without a split: the old one is gone, not evaluated as this run's.
    write_pretraining_data(small_corpus, str(tmp_path), tokenizer, seq_length=64,
                           eval_fraction=0.0, log=lambda *_: None)
    assert not list((tmp_path / "eval").iterdir())


def test_use_nsp_is_a_deprecated_alias_of_next_sentence_task_that_warns_once():
    import warnings

    from tfbert.data.pretraining import instances as pretraining_instances

    pretraining_instances._WARNED.clear()
    with pytest.warns(FutureWarning, match="use_nsp is deprecated: set next_sentence_task"):
        assert InstanceBuilder(32, use_nsp=False).task == "none"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once a process: no second warning
        assert InstanceBuilder(32, use_nsp=False).task == "none"
        assert InstanceBuilder(32, use_nsp=True).task == "nsp"
        assert InstanceBuilder(32, next_sentence_task="sop").task == "sop"


def test_the_summary_accounts_for_every_document(tokenizer, tmp_path):
    """With SOP, a document of one one-token sentence gives no instance; a
    document of characters without tokens is empty. Both are counted, by
    reason, in the summary of pretraining_data.json (as the Beam runner's)."""
    documents = CORPUS.read_text(encoding="utf-8").split("\n\n")[:40]
    documents += ["\u200b"] * 3 + ["The"] * 4  # "the": one token
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(documents) + "\n", encoding="utf-8")
    meta = write_pretraining_data(str(corpus), str(tmp_path / "out"), tokenizer, seq_length=32,
                                  next_sentence_task="sop", eval_fraction=0.1, log=lambda *_: None)
    summary = json.loads((tmp_path / "out" / pretraining.METADATA_FILE).read_text())["summary"]
    assert summary == meta["summary"] and summary["runner"] == "local writer"
    sentences = sum(len([s for s in d.split("\n") if s.strip()]) for d in documents)
    assert summary["files"] == {str(corpus): {"documents": 47, "sentences": sentences}}
    assert summary["documents_read"] == 47
    assert summary["documents_skipped"] == {"empty": 3, "one_sentence": 4, "no_instance": 0}
    assert sum(summary["documents"].values()) == 40 and summary["documents"]["eval"] > 0
    assert summary["instances"] == {"train": meta["instances"], "eval": meta["eval_instances"]}
    assert summary["num_shards"] == {"train": 1, "eval": 1}


def test_records_written_before_the_seq_length_rename_still_read(written, tmp_path, tokenizer):
    """Shards whose pretraining_data.json says `max_seq_length` (the old name)."""
    import shutil

    out, meta = written
    assert meta["seq_length"] == 64 and "max_seq_length" not in meta
    old = tmp_path / "old"
    shutil.copytree(out, old)
    stored = json.loads((old / "pretraining_data.json").read_text())
    stored["max_seq_length"] = stored.pop("seq_length")
    (old / "pretraining_data.json").write_text(json.dumps(stored))
    masker = MaskedLMMasker.from_vocab(tokenizer.vocab, max_predictions=10)
    new_x, _ = next(iter(pretraining_dataset(str(out / "*.tfrecord"), 4, masker=masker, seed=1)))
    old_x, _ = next(iter(pretraining_dataset(str(old / "*.tfrecord"), 4, masker=masker, seed=1)))
    assert old_x["input_word_ids"].shape == (4, 64)
    for name in new_x:
        np.testing.assert_array_equal(old_x[name], new_x[name])


def test_write_pretraining_data_takes_max_seq_length_with_a_warning(small_corpus, tokenizer,
                                                                    tmp_path):
    with pytest.warns(FutureWarning, match=r"^write_pretraining_data: max_seq_length is "
                                           r"deprecated: use seq_length\.$"):
        meta = write_pretraining_data(small_corpus, str(tmp_path), tokenizer, max_seq_length=32,
                                      log=lambda *_: None)
    assert meta["seq_length"] == 32
