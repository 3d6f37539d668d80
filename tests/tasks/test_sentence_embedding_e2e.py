"""Sentence embeddings end to end on the real all-MiniLM-L6-v2 (slow).

- Converted MiniLM through `SentenceEncoder` encodes within 1e-5 of
  sentence-transformers, texts longer than 128 and 256 wordpieces included.
- Real (query, passage) pairs from the docstrings of the Python standard
  library (every machine has them): the summary line of a function/class is
  the query, the rest of its first paragraph (or its next paragraph) the
  passage. The ranking loss lifts held-out recall@1 above the untrained
  model. Parity with the same recipe in sentence-transformers/PyTorch is
  measured over 3 seeds by `benchmarks/bench_quality.py` (docs/quality.md,
  the docstring retrieval row), not on one seed here; the loss itself is
  checked against its formula in tests/losses/test_losses.py.
- The cosine loss, on pairs of Unicode letter names scored by a stated rule
  (same letter 1.0, another letter of the script 0.0), lifts Spearman on
  held-out scripts.
- The exported SavedModel, reloaded in a fresh process, returns the same
  embeddings from raw strings.
"""

import inspect
import json
import random
import unicodedata

import numpy as np
import pytest

from tfbert.datasets.docstring_pairs import docstring_pairs, stdlib_objects
from tfbert import SentenceEncoder
from tfbert.tasks.runner import TrainConfig, finetune
from tfbert.tasks.sentence_embedding import SentenceEmbeddingTask

pytestmark = pytest.mark.slow

DEV = 300  # held-out pairs
SEQ = 48  # wordpieces per text in training (queries are ~12, passages ~40)
RECIPE = dict(batch_size=32, learning_rate=1e-4, steps=20)  # a short run that lifts recall


def write_tsv(path, header, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\t".join(header) + "\n")
        f.writelines("\t".join(str(c) for c in r) + "\n" for r in rows)
    return str(path)


@pytest.fixture(scope="module")
def minilm_ckpt(minilm_checkpoint):
    return minilm_checkpoint  # converted once per run (tests/conftest.py)


@pytest.fixture(scope="module")
def pairs():
    rows = docstring_pairs()
    assert len(rows) > 1000, len(rows)
    return rows


def test_encode_matches_sentence_transformers(minilm_ckpt, minilm_dir):
    from sentence_transformers import SentenceTransformer

    docs = sorted({inspect.getdoc(o) for _, _, o in stdlib_objects()
                   if (inspect.isclass(o) or inspect.isfunction(o)) and inspect.getdoc(o)},
                  key=len)
    texts = docs[-6:] + docs[len(docs) // 2:len(docs) // 2 + 20] + ["Hi", "Open the file."]
    model = SentenceEncoder.from_pretrained(minilm_ckpt)
    assert model.preprocessor.seq_length == 256  # sentence_bert_config.json
    counts = model.token_counts(texts)
    assert (counts > 128).sum() >= 6 and (counts > 256).sum() >= 3  # truncated at 256
    reference = SentenceTransformer(str(minilm_dir), device="cpu").encode(texts, batch_size=7)
    got = model.encode(texts, batch_size=7)
    print(f"max |tfbert - sentence-transformers| = {np.abs(got - reference).max():.2e}")
    np.testing.assert_allclose(got, reference, atol=1e-5)


SERVE = """
import json, numpy as np, tensorflow as tf
from tfbert.export.task_model import load_task_model
serve = load_task_model(PATH).signatures["serving_default"]
print(json.dumps(serve(text=tf.constant(TEXTS))["embedding"].numpy().tolist()))
"""


def test_ranking_loss_lifts_recall_and_the_export_serves(minilm_ckpt, pairs, tmp_path, run_python):
    """Over a minute: MiniLM trains 20 steps and encodes the 300 held-out
    queries and passages before and after, then the export is served in a
    fresh process; no smaller model or set shows recall rising."""
    dev, train = pairs[:DEV], pairs[DEV:]
    header = ("query", "passage")
    task = SentenceEmbeddingTask({
        "train_file": write_tsv(tmp_path / "train.tsv", header, [r[1:] for r in train]),
        "dev_file": write_tsv(tmp_path / "dev.tsv", header, [r[1:] for r in dev]),
        "loss": "ranking", "text_column": "query", "text_b_column": "passage",
        "seq_length": SEQ})
    untrained = SentenceEncoder.from_pretrained(minilm_ckpt, seq_length=SEQ)
    before = task.evaluate(untrained, task.eval_data(task.config.dev_file, 64))["recall_at_1"]
    # No XLA: compiling MiniLM costs more than these few steps save.
    train_config = TrainConfig(batch_size=RECIPE["batch_size"],
                               learning_rate=RECIPE["learning_rate"], epochs=1,
                               steps_per_epoch=RECIPE["steps"], jit_compile=False, seed=0,
                               verbose=0)
    result = finetune(task, train_config, str(tmp_path / "run"), init_checkpoint=minilm_ckpt,
                      export_dir=str(tmp_path / "export"))
    after = result.dev_scores[-1]["recall_at_1"]
    print(f"held-out recall@1 ({DEV} queries): untrained {before:.3f}, tfbert {after:.3f}")
    # 0.360 -> 0.433 when measured (docs/sentence_embeddings.md): 22 of 300 queries.
    assert after >= before + 0.03

    # The export, in a fresh process, embeds raw strings like the trained model.
    texts = [r[1] for r in dev[:5]] + [dev[0][2]]
    want = result.task.predict(result.model, texts)["embedding"]
    source = f"PATH = {result.export_dir!r}\nTEXTS = {texts!r}\n" + SERVE
    got = np.array(json.loads(run_python(source).strip().splitlines()[-1]))
    np.testing.assert_allclose(got, want, atol=1e-5)


def letter_names():
    """`{script: [(name, letter)]}` for the Unicode letters with a case:
    "cyrillic small letter che with diaeresis" -> ("...", "che")."""
    out = {}
    for code in range(0x20, 0x3000):
        words = unicodedata.name(chr(code), "").lower().split()
        if "letter" not in words or not {"small", "capital"} & set(words):
            continue
        rest = words[words.index("letter") + 1:]
        letter = " ".join(rest[:rest.index("with")] if "with" in rest else rest)
        if letter:
            out.setdefault(words[0], []).append((" ".join(words), letter))
    return out


def letter_pairs(names, scripts, count, seed):
    """The stated rule, on real Unicode character names: two names of the same
    letter (any case, any diacritics) score 1.0; two names of different
    letters of the same script score 0.0. Half and half."""
    rng = random.Random(seed)
    rows = []
    while len(rows) < count:
        pool = names[rng.choice(scripts)]
        name, letter = rng.choice(pool)
        if len(rows) % 2 == 0:
            same = [n for n, l in pool if l == letter and n != name]
            if same:
                rows.append((name, rng.choice(same), 1.0))
        else:
            other, other_letter = rng.choice(pool)
            if other_letter != letter:
                rows.append((name, other, 0.0))
    return rows


def cosine_stats(model, rows):
    """Spearman of cosine against the rule's scores."""
    from tfbert.metrics.retrieval import similarity_spearman

    u, v = model.encode([r[0] for r in rows]), model.encode([r[1] for r in rows])
    return similarity_spearman(u, v, np.array([r[2] for r in rows]))


def test_cosine_loss_lifts_held_out_spearman(minilm_ckpt, tmp_path):
    """Over a minute (MiniLM trains 30 steps and encodes 1,360 pairs before and
    after): cosine loss on scored pairs of Unicode letter names: trained on Latin,
    Greek and Coptic, scored on held-out scripts (Cyrillic, Armenian,
    Georgian, Glagolitic). MiniLM starts by rating "small letter che" and
    "small letter ze" alike; 30 steps teach it the rule, and the held-out
    Spearman rises to the ceiling: against half-1, half-0 scores a perfect
    ranking has Spearman sqrt(3)/2 = 0.866 (measured 0.807 -> 0.866; another
    sample of pairs 0.724 -> 0.866)."""
    names = letter_names()
    header = ("text", "text_b", "score")
    train_rows = letter_pairs(names, ["latin", "greek", "coptic"], 30 * 32, seed=1)
    dev_rows = letter_pairs(names, ["cyrillic", "armenian", "georgian", "glagolitic"], 400, seed=2)
    task = SentenceEmbeddingTask({
        "train_file": write_tsv(tmp_path / "train.tsv", header, train_rows),
        "dev_file": write_tsv(tmp_path / "dev.tsv", header, dev_rows),
        "loss": "cosine", "text_column": "text", "text_b_column": "text_b",
        "score_column": "score", "seq_length": 24})
    untrained = SentenceEncoder.from_pretrained(minilm_ckpt, seq_length=24)
    before_train, before_dev = cosine_stats(untrained, train_rows), cosine_stats(untrained, dev_rows)
    result = finetune(task, TrainConfig(batch_size=32, learning_rate=1e-4, epochs=1,
                                        steps_per_epoch=30, jit_compile=False, seed=0, verbose=0),
                      str(tmp_path / "run"), init_checkpoint=minilm_ckpt)
    after_train, after_dev = cosine_stats(result.model, train_rows), cosine_stats(result.model, dev_rows)
    print(f"cosine loss: trained pairs Spearman {before_train:.3f} -> {after_train:.3f}, "
          f"held-out scripts {before_dev:.3f} -> {after_dev:.3f} "
          f"(task dev score {result.best_score:.3f})")
    assert after_train > before_train + 0.05
    assert after_dev > before_dev + 0.03
    assert after_dev > 0.85  # near the ceiling: held-out pairs nearly all ranked right
    assert result.best_score == pytest.approx(after_dev, abs=1e-3)
