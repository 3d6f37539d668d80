"""SentenceEmbeddingTask on a tiny random encoder: every loss trains through
`finetune` (TASKS lookup, best epoch kept), dev metrics have the right names,
and the exported SavedModel returns `encode`'s embeddings from raw strings.
The real-model checks (MiniLM, sentence-transformers) are in the slow file."""

import numpy as np
import pytest

from tfbert.config import BertConfig
from tfbert.export.task_model import load_task_model
from tfbert.tasks import get_task
from tfbert.tasks.runner import TrainConfig, finetune

ROWS = [  # (query, passage, score, label, negative): real docstring text, hand-scored
    ("Return the number of items.", "The length of the container is computed.", 4.0, "same"),
    ("Open a file and return a stream.", "The file object is created for reading.", 3.5, "same"),
    ("Remove all items from the queue.", "The file object is created for reading.", 0.5, "other"),
    ("Split the string at whitespace.", "A list of the words is returned.", 4.5, "same"),
    ("Close the socket.", "A list of the words is returned.", 0.0, "other"),
    ("Sort the list in place.", "Items are ordered by their keys.", 4.0, "same"),
    ("Join the thread.", "Wait until the thread terminates.", 5.0, "same"),
    ("Encode the string as bytes.", "Wait until the thread terminates.", 1.0, "other"),
]


@pytest.fixture()
def vocab():
    return "tests/data/pretraining/vocab.txt"  # small vocab: a fast tiny model


@pytest.fixture()
def files(tmp_path):
    path = tmp_path / "pairs.tsv"
    lines = ["query\tpassage\tscore\tlabel\tnegative"]
    for i, (q, p, s, l) in enumerate(ROWS):
        lines.append(f"{q}\t{p}\t{s}\t{l}\t{ROWS[(i + 3) % len(ROWS)][1]}")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def run(tmp_path, files, vocab, loss, export=False, **extra):
    task = get_task("sentence_embedding")({
        "train_file": files, "dev_file": files, "loss": loss, "text_column": "query",
        "text_b_column": "passage", "max_score": 5.0, "seq_length": 16, **extra})
    config = BertConfig.from_preset("tiny", vocab_size=1931, num_layers=1)
    return finetune(task, TrainConfig(batch_size=4, epochs=1, steps_per_epoch=2,
                                      learning_rate=1e-3, jit_compile=False, verbose=0),
                    str(tmp_path / loss), encoder_config=config,
                    vocab_file=vocab,
                    export_dir=str(tmp_path / "export") if export else None)


def test_cosine_task_scores_spearman(files, vocab):
    from tfbert.encoder import BertEncoder
    from tfbert.metrics.retrieval import similarity_spearman
    from tfbert.text.preprocessor import BertPreprocessor

    task = get_task("sentence_embedding")({"loss": "cosine", "text_column": "query",
                                           "text_b_column": "passage", "max_score": 5.0})
    assert task.main_metric == "spearman"
    task.prepare(BertPreprocessor(vocab_file=vocab, seq_length=16))
    model = task.build_model(BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931,
                                                                num_layers=1)))
    dev = task.eval_data(files, 8)
    assert dev[2] == [r[2] / 5 for r in ROWS]
    want = similarity_spearman(model.encode(dev[0]), model.encode(dev[1]), dev[2])
    assert task.evaluate(model, dev) == {"spearman": pytest.approx(want)}


@pytest.mark.parametrize("loss, extra", [("softmax", {}),
                                         ("triplet", {"negative_column": "negative"})])
def test_softmax_and_triplet_train(files, vocab, loss, extra):
    import keras

    from tfbert.encoder import BertEncoder
    from tfbert.text.preprocessor import BertPreprocessor

    task = get_task("sentence_embedding")({"loss": loss, "train_file": files,
                                           "text_column": "query", "text_b_column": "passage",
                                           "seq_length": 16, **extra})
    task.prepare(BertPreprocessor(vocab_file=vocab, seq_length=16))
    if loss == "softmax":
        assert task.label_list == ["other", "same"]
    model = task.build_model(BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931,
                                                                num_layers=1)))
    trainable = task.build_trainable(model, keras.optimizers.Adam(1e-3),
                                     TrainConfig(jit_compile=False))
    history = trainable.fit(task.dataset(files, 4, training=True), steps_per_epoch=2,
                            epochs=2, verbose=0, shuffle=False).history["loss"]
    assert np.isfinite(history).all()


def test_training_batches_cut_to_bucket_or_longest(files, vocab):
    """While training, batches are cut to their longest text (a bucket width
    under XLA): the embeddings equal those of fixed padding."""
    from tfbert.encoder import BertEncoder
    from tfbert.text.packer import trim_to_bucket, trim_to_longest
    from tfbert.text.preprocessor import BertPreprocessor

    task = get_task("sentence_embedding")({"loss": "ranking", "text_column": "query",
                                           "text_b_column": "passage", "seq_length": 64})
    task.prepare(BertPreprocessor(vocab_file=vocab, seq_length=64))
    model = task.build_model(BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931,
                                                                num_layers=1)))
    widths, embeddings = {}, {}
    for name, trim in (("fixed", None), ("bucket", trim_to_bucket), ("longest", trim_to_longest)):
        task.trim = trim
        x = next(iter(task.dataset(files, 8)))
        widths[name] = x["anchor"]["input_word_ids"].shape[1]
        embeddings[name] = model(x["anchor"], training=False).numpy()
    assert widths["fixed"] == 64 and widths["bucket"] == 16 and widths["longest"] < 16
    np.testing.assert_allclose(embeddings["bucket"], embeddings["fixed"], atol=1e-5)
    np.testing.assert_allclose(embeddings["longest"], embeddings["fixed"], atol=1e-5)


def test_ranking_trains_exports_and_serves(tmp_path, files, vocab):
    result = run(tmp_path, files, vocab, "ranking", export=True, negative_column="negative")
    assert result.main_metric == "recall_at_1"
    assert set(result.dev_scores[0]) == {"recall_at_1", "recall_at_5", "mrr_at_10"}
    texts = ["Close the socket.", "Wait until the thread terminates and return its result."]
    want = result.task.predict(result.model, texts)["embedding"]
    serve = load_task_model(result.export_dir).signatures["serving_default"]
    got = serve(text=np.array(texts))["embedding"].numpy()
    assert got.shape == (2, 128)
    np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # The same model exported to read long texts whole: served = predict.
    windows = get_task("sentence_embedding")({"loss": "ranking", "seq_length": 16,
                                                            "long_text": "windows"})
    windows.prepare(result.task.preprocessor)
    long_texts = [" ".join(texts * 8), texts[0], ""]
    want = windows.predict(result.model, long_texts)["embedding"]
    path = windows.export(result.model, str(tmp_path / "windows_export"))
    got = load_task_model(path).signatures["serving_default"](text=np.array(long_texts))
    np.testing.assert_allclose(got["embedding"].numpy(), want, atol=1e-5)
    assert not np.allclose(want[0], result.task.predict(result.model, long_texts[:1])[
        "embedding"][0], atol=1e-3)


def test_config_errors(files):
    task_class = get_task("sentence_embedding")
    with pytest.raises(ValueError, match="needs task.negative_column"):
        task_class({"loss": "triplet"})
    with pytest.raises(ValueError, match=r"task sentence_embedding: loss: must be one of "
                                         r"\['ranking', 'cosine', 'softmax', 'triplet'\], "
                                         r"got 'contrastive'"):
        task_class({"loss": "contrastive"})
    with pytest.raises(ValueError, match="needs task.dev_file"):
        task_class({"loss": "ranking"}).eval_data("", 8)
    task = task_class({"loss": "cosine", "text_column": "query", "text_b_column": "passage"})
    with pytest.raises(ValueError, match=r"pairs\.tsv, line 2: score 4 .* outside \[0, 1\]"):
        task.read(files)
