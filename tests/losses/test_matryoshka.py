"""MatryoshkaLoss: the weighted sum of the ranking loss at each truncated dim; trained
through the task (matryoshka_dims) and exported with truncate_dim, reloaded fresh."""

import json

import numpy as np
import pytest

from tfbert import BertConfig, BertEncoder, SentenceEncoder
from tfbert.losses import MatryoshkaLoss, MultipleNegativesRankingLoss
from tfbert.losses.base import cosine_matrix

IDS = np.array([[2, 7, 8, 3], [2, 9, 3, 0], [2, 11, 12, 3]], "int32")
X = {"input_word_ids": IDS, "input_mask": (IDS > 0).astype("int32"), "input_type_ids": 0 * IDS}


def test_loss_is_the_weighted_sum_over_truncated_dims(tiny_config):
    model = SentenceEncoder(BertEncoder(BertConfig.from_preset("tiny", vocab_size=100,
                                                               dropout_rate=0.0)))
    inner = MultipleNegativesRankingLoss(model, scale=20.0)
    loss = MatryoshkaLoss(inner, dims=[128, 64, 16], weights=[1.0, 0.5, 0.25])
    shifted = {k: np.roll(v, 1, axis=0) for k, v in X.items()}
    scores = loss({"anchor": X, "positive": shifted})
    got = float(loss.compute_loss(y_pred=scores))
    a, p = model(X).numpy(), model(shifted).numpy()
    want = 0.0
    for d, w in ((128, 1.0), (64, 0.5), (16, 0.25)):
        s = 20.0 * cosine_matrix(a[:, :d], p[:, :d]).numpy()
        log_softmax = s - np.log(np.exp(s).sum(1, keepdims=True))
        want += w * -np.mean(np.diag(log_softmax))
    assert abs(got - want) < 1e-4
    for bad, message in (({"dims": [0]}, r"in \[1, 128\]"), ({"dims": [200]}, "128"),
                         ({"dims": [64, 32], "weights": [1]}, "2 numbers")):
        with pytest.raises(ValueError, match=message):
            MatryoshkaLoss(inner, **bad)


def test_task_trains_matryoshka_and_exports_truncated(tmp_path, run_python):
    from tfbert.tasks import get_task
    from tfbert.tasks.runner import TrainConfig, finetune

    rows = [("open a file", "Open file and return a stream."),
            ("sort in place", "Sort the list in ascending order."),
            ("wait for a thread", "Wait until the thread terminates."),
            ("empty the queue", "Remove all items from the queue.")]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"anchor": q, "positive": p}) + "\n" for q, p in rows))
    task = get_task("sentence_embedding")({
        "train_file": str(path), "dev_file": str(path), "format": "jsonl", "seq_length": 16,
        "matryoshka_dims": [128, 32], "matryoshka_weights": [1.0, 1.0], "truncate_dim": 32})
    result = finetune(task, TrainConfig(batch_size=4, epochs=1, steps_per_epoch=2,
                                        learning_rate=1e-3, jit_compile=False, verbose=0),
                      str(tmp_path / "run"), vocab_file="tests/data/pretraining/vocab.txt",
                      encoder_config=BertConfig.from_preset("tiny", vocab_size=1931, num_layers=1),
                      export_dir=str(tmp_path / "export"))
    texts = [q for q, _ in rows]
    want = result.model.encode(texts, truncate_dim=32)
    assert want.shape == (4, 32)
    np.testing.assert_allclose(np.linalg.norm(want, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(want, result.model.encode(texts)[:, :32] / np.linalg.norm(
        result.model.encode(texts)[:, :32], axis=1, keepdims=True), atol=1e-6)
    out = run_python(f"""
import json, tensorflow as tf, tensorflow_text
sig = tf.saved_model.load({str(tmp_path / 'export')!r}).signatures["serving_default"]
print(json.dumps(sig(text=tf.constant({json.dumps(texts)}))["embedding"].numpy().tolist()))
""")
    np.testing.assert_allclose(json.loads(out.strip().splitlines()[-1]), want, atol=1e-5)
    with pytest.raises(ValueError, match=r"truncate_dim must be in \[1, 128\]"):
        result.model.encode(texts, truncate_dim=129)
    with pytest.raises(ValueError, match="matryoshka_dims applies to loss=ranking only"):
        get_task("sentence_embedding")({"loss": "cosine", "matryoshka_dims": [32]})
