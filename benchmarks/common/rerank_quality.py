"""Retrieval quality over seeds: the bi-encoder alone, + tfbert's cross-encoder rerank,
+ sentence-transformers' CrossEncoder rerank; hard negatives against in-batch ones; and
the Matryoshka table. What `benchmarks/bench_rerank.py` runs (its docstring has the
recipe and the commands) and `bench_quality.py`'s `rerank` task includes.
"""

import dataclasses
import json
import os
import shutil
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

RERANK_K = 20
SEQ_LENGTH = 128  # pairs: a summary line and a paragraph (median ~50 wordpieces together)
# XLA off: on a shared 2-core machine each bucket width's compile of the MiniLM train step
# took minutes; the numbers are the same without it (the recipe is lr, batch, epochs).
JIT = os.environ.get("BENCH_RERANK_XLA", "0") == "1"
MATRYOSHKA_DIMS = (384, 256, 128, 64)


class NotEnoughPairs(ValueError):
    """`--extra_train_pairs` asks for more pairs than the installed packages give."""


def build_data(work, checkpoint, train_rows=None, test_rows=300, extra_train_pairs=0):
    """Writes train/test pair files and the mined rows; returns their directory
    (reused when `work` has them built for the same arguments).
    `extra_train_pairs`: that many docstring pairs of the installed tensorflow,
    keras and numpy join the training rows (none repeats a stdlib pair)."""
    from tfbert.datasets.docstring_pairs import docstring_pairs, package_docstring_pairs
    from tfbert import SentenceEncoder
    from tfbert.retrieval.mining import mine_hard_negatives, write_rows

    data = os.path.join(work, "data")
    settings = {"train_rows": train_rows, "test_rows": test_rows,
                "extra_train_pairs": extra_train_pairs}
    done = os.path.join(data, "done.json")
    if os.path.isfile(done):
        with open(done, encoding="utf-8") as f:
            if json.load(f)["settings"] == settings:
                return data
    # Built for other flags (or not finished): build again.
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    pairs = [(q, p) for _, q, p in docstring_pairs()]
    test, train = pairs[:test_rows], pairs[300:][:train_rows]
    if extra_train_pairs:
        extra = package_docstring_pairs(exclude=pairs)
        if len(extra) < extra_train_pairs:
            raise NotEnoughPairs(f"--extra_train_pairs={extra_train_pairs}: the installed "
                                 f"tensorflow, keras and numpy give {len(extra)} pairs")
        extra = extra[:extra_train_pairs]
        train += [(q, p) for _, q, p in extra]
    for name, rows in (("test", test), ("train", train)):
        with open(os.path.join(data, f"{name}.jsonl"), "w", encoding="utf-8") as f:
            f.write("".join(json.dumps({"anchor": q, "positive": p}) + "\n" for q, p in rows))
    model = SentenceEncoder.from_pretrained(checkpoint, seq_length=SEQ_LENGTH)
    mined = mine_hard_negatives(train, encoder=model, num_negatives=3, range_max=30,
                                relative_margin=0.05)
    # Listwise groups are as large as the fewest negatives a row has: keep full rows.
    write_rows([m for m in mined if len(m.negatives) == 3],
               os.path.join(data, "ce_train.jsonl"), "listwise")
    # The bi-encoder's rows: the hardest negative only, one row per query.
    hardest = [dataclasses.replace(m, negatives=m.negatives[:1], scores=m.scores[:1])
               for m in mined]
    write_rows(hardest, os.path.join(data, "bi_mined.jsonl"), "triplet")
    test_mined = mine_hard_negatives(test, encoder=model, num_negatives=3, range_max=30)
    write_rows(test_mined, os.path.join(data, "ce_test.jsonl"), "listwise")
    with open(done, "w", encoding="utf-8") as f:  # written last: the rows above are complete
        json.dump({"settings": settings, "mined_train_rows": len(mined),
                   "train_rows": len(train)}, f)
    return data


def bi_encoder_run(data, checkpoint, seed, work, mined, min_steps=None, matryoshka=False,
                   epochs=None):
    from tfbert.tasks.runner import TrainConfig, finetune
    from tfbert.tasks.sentence_embedding import SentenceEmbeddingTask

    task = SentenceEmbeddingTask(dict(
        train_file=os.path.join(data, "bi_mined.jsonl" if mined else "train.jsonl"),
        dev_file=os.path.join(data, "test.jsonl"), format="jsonl",
        negative_column="negative" if mined else None, seq_length=SEQ_LENGTH,
        matryoshka_dims=list(MATRYOSHKA_DIMS) if matryoshka else None))
    kind = "mined" if mined else "matryoshka" if matryoshka else "inbatch"
    model_dir = os.path.join(work, f"bi_{kind}_{seed}")
    shutil.rmtree(model_dir, ignore_errors=True)
    result = finetune(task, TrainConfig(seed=seed, verbose=0, min_steps=min_steps, epochs=epochs,
                                        jit_compile=JIT), model_dir, init_checkpoint=checkpoint)
    return result


def matryoshka(seeds=(0, 1, 2), work=None, hf_dir=None, min_steps=None, train_rows=None,
               test_rows=300):
    """recall@1 at each of `MATRYOSHKA_DIMS` (`encode(truncate_dim=d)`): the in-batch
    bi-encoder against the same recipe trained with the Matryoshka loss, per seed."""
    import keras

    from tfbert.data.pairs import read_pairs
    from tfbert.metrics.retrieval import ranks_of_relevant, recall_at_k

    from benchmarks.common.seed_stats import seed_stats

    work, checkpoint, data = _prepare(work, hf_dir, train_rows, test_rows)
    test = read_pairs(os.path.join(data, "test.jsonl"), "anchor", "positive", format="jsonl")
    queries, passages = list(test.anchor), list(test.positive)
    results = {}
    for seed in seeds:
        for name, with_matryoshka in (("in-batch ranking loss", False),
                                      ("+ Matryoshka loss", True)):
            model = bi_encoder_run(data, checkpoint, seed, work, mined=False,
                                   min_steps=min_steps, matryoshka=with_matryoshka).model
            for d in MATRYOSHKA_DIMS:
                ranks = ranks_of_relevant(model.encode(queries, truncate_dim=d),
                                          model.encode(passages, truncate_dim=d))
                results.setdefault((name, d), []).append(recall_at_k(ranks, 1))
            keras.backend.clear_session()
        print(f"seed {seed}: " + ", ".join(f"{n} {d}: {v[-1]:.4f}"
                                           for (n, d), v in results.items()), flush=True)
    lines = [f"Matryoshka: recall@1 of {len(queries)} docstring queries, seeds "
             f"{','.join(map(str, seeds))}, train.min_steps {min_steps or 'default (300)'}", "",
             "| training | dims | recall@1 mean +- sd | worst |", "|---|---|---|---|"]
    for (name, d), values in results.items():
        mean, sd, worst = seed_stats(values)
        lines.append(f"| {name} | {d} | {mean:.4f} +- {sd:.4f} | {worst:.4f} |")
    return lines


def tfbert_cross_encoder_run(data, checkpoint, seed, work, min_steps=None, epochs=None,
                             pooling="cls"):
    from tfbert.tasks.cross_encoder import CrossEncoderTask
    from tfbert.tasks.runner import TrainConfig, finetune

    task = CrossEncoderTask(dict(train_file=os.path.join(data, "ce_train.jsonl"),
                                 dev_file=os.path.join(data, "ce_test.jsonl"),
                                 seq_length=SEQ_LENGTH, pooling=pooling))
    model_dir = os.path.join(work, f"ce_{seed}")
    shutil.rmtree(model_dir, ignore_errors=True)
    # With the epochs given there is nothing to choose: every row trains and the last
    # epoch is kept, as in the reference's loop (the same rows on both sides).
    holdout = {"validation_fraction": 0.0} if epochs else {}
    result = finetune(task, TrainConfig(seed=seed, verbose=0, min_steps=min_steps, epochs=epochs,
                                        jit_compile=JIT, **holdout),
                      model_dir, init_checkpoint=checkpoint)
    recipe = {k: result.summary[k] for k in ("learning_rate", "batch_size", "epochs")}
    recipe["best_epoch"] = result.best_epoch
    return model_dir, recipe


def reference_cross_encoder(data, hf_dir, recipe, seed):
    """sentence-transformers' CrossEncoder trained on the same listwise rows."""
    import torch
    from sentence_transformers import CrossEncoder as STCrossEncoder

    from benchmarks.common.torch_reference import torch_train
    from tfbert.data.rerank_rows import read_rerank_rows

    torch.set_num_threads(len(os.sched_getaffinity(0)))
    torch.manual_seed(seed)  # the new head's initial weights
    model = STCrossEncoder(str(hf_dir), num_labels=1, max_length=SEQ_LENGTH, device="cpu")
    rows = read_rerank_rows(os.path.join(data, "ce_train.jsonl"))
    group = 1 + min(len(n) for n in rows.negatives)
    candidates = [[p] + n[:group - 1] for p, n in zip(rows.positive, rows.negatives)]

    def batch_loss(batch):
        queries = [rows.query[r] for r in batch for _ in range(group)]
        passages = [c for r in batch for c in candidates[r]]
        features = model.tokenizer(queries, passages, padding=True, truncation="longest_first",
                                   max_length=SEQ_LENGTH, return_tensors="pt")
        logits = model.model(**features).logits.view(-1, group)
        return torch.nn.functional.cross_entropy(logits, torch.zeros(len(batch), dtype=torch.long))

    torch_train(model.model, len(rows), recipe, seed, batch_loss)
    return model


def ranks_after_rerank(queries, passages, retrieved, score_pairs):
    """1-based rank of passage i for query i: reranked within the top RERANK_K, else
    the bi-encoder's."""
    pairs = [(q, passages[h["corpus_id"]]) for q, hits in zip(queries, retrieved) for h in hits]
    scores = score_pairs(pairs)
    ranks, at = [], 0
    for i, hits in enumerate(retrieved):
        s = scores[at:at + len(hits)]
        at += len(hits)
        ids = [h["corpus_id"] for h in hits]
        if i in ids:
            gold = s[ids.index(i)]
            ranks.append(1 + sum(1 for j, x in enumerate(s) if x >= gold and ids[j] != i))
        else:
            ranks.append(RERANK_K + 1)  # below the reranked window (counts as a miss at 10)
    return ranks


def _prepare(work, hf_dir=None, train_rows=None, test_rows=300, extra_train_pairs=0):
    """`(work, converted MiniLM checkpoint, data directory)`, each built once."""
    from benchmarks.common.minilm import minilm_checkpoint

    work = work or tempfile.mkdtemp(prefix="bench_rerank_")
    os.makedirs(work, exist_ok=True)
    checkpoint = minilm_checkpoint(work, hf_dir)
    return work, checkpoint, build_data(work, checkpoint, train_rows, test_rows,
                                        extra_train_pairs)


def run(seeds=(0, 1, 2), work=None, hf_dir=None, min_steps=None, train_rows=None,
        test_rows=300, ce_min_steps=None, extra_train_pairs=0, epochs=None, ce_pooling="cls"):
    import keras
    import numpy as np

    from tfbert import CrossEncoder, SentenceEncoder
    from tfbert.data.pairs import read_pairs
    from tfbert.metrics.retrieval import mrr_at_k, ranks_of_relevant, recall_at_k
    from tfbert.retrieval.search import semantic_search

    from benchmarks.common.minilm import minilm_hf_dir
    from benchmarks.common.seed_stats import seed_stats

    hf_dir = hf_dir or minilm_hf_dir()
    work, checkpoint, data = _prepare(work, hf_dir, train_rows, test_rows, extra_train_pairs)
    test = read_pairs(os.path.join(data, "test.jsonl"), "anchor", "positive", format="jsonl")
    queries, passages = list(test.anchor), list(test.positive)
    metrics = lambda ranks: (recall_at_k(ranks, 1), mrr_at_k(ranks, 10))
    pretrained = SentenceEncoder.from_pretrained(checkpoint, seq_length=SEQ_LENGTH)
    base = metrics(ranks_of_relevant(pretrained.encode(queries), pretrained.encode(passages)))
    results = {k: [] for k in ("inbatch", "mined", "tfbert_ce", "st_ce")}
    per_seed = []
    for seed in seeds:
        start = time.perf_counter()
        bi = bi_encoder_run(data, checkpoint, seed, work, mined=False, min_steps=min_steps,
                            epochs=epochs)
        q_emb, p_emb = bi.model.encode(queries), bi.model.encode(passages)
        results["inbatch"].append(metrics(ranks_of_relevant(q_emb, p_emb)))
        retrieved = semantic_search(q_emb, p_emb, top_k=RERANK_K)
        model_dir, recipe = tfbert_cross_encoder_run(data, checkpoint, seed, work,
                                                      ce_min_steps or min_steps, epochs,
                                                      ce_pooling)
        ce = CrossEncoder.from_pretrained(model_dir)
        results["tfbert_ce"].append(metrics(ranks_after_rerank(
            queries, passages, retrieved, lambda p: ce.predict(p, batch_size=64))))
        print(f"seed {seed}: in-batch {results['inbatch'][-1]}, tfbert CE "
              f"{results['tfbert_ce'][-1]} ({recipe}; {time.perf_counter() - start:.0f} s)",
              flush=True)
        keras.backend.clear_session()
        reference = reference_cross_encoder(data, hf_dir, recipe, seed)
        results["st_ce"].append(metrics(ranks_after_rerank(
            queries, passages, retrieved,
            lambda p: np.asarray(reference.predict(p, batch_size=64)))))
        print(f"seed {seed}: in-batch {results['inbatch'][-1]}, tfbert CE "
              f"{results['tfbert_ce'][-1]}, ST CE {results['st_ce'][-1]} "
              f"({time.perf_counter() - start:.0f} s)", flush=True)
        keras.backend.clear_session()  # the mined-negatives bi-encoder last: least needed
        mined = bi_encoder_run(data, checkpoint, seed, work, mined=True, min_steps=min_steps,
                               epochs=epochs)
        results["mined"].append(metrics(ranks_of_relevant(mined.model.encode(queries),
                                                          mined.model.encode(passages))))
        keras.backend.clear_session()
        line = (f"seed {seed}: recall@1 in-batch {results['inbatch'][-1][0]:.4f}, mined "
                f"{results['mined'][-1][0]:.4f}, + tfbert CE {results['tfbert_ce'][-1][0]:.4f}, "
                f"+ ST CE {results['st_ce'][-1][0]:.4f} (CE recipe lr {recipe['learning_rate']:g}, "
                f"batch {recipe['batch_size']}, epochs {recipe['epochs']}, chosen "
                f"{recipe['best_epoch']}; {time.perf_counter() - start:.0f} s)")
        print(line, flush=True)
        per_seed.append(line)
    rows = [("MiniLM pretrained, no training (1 run)", [base]),
            ("bi-encoder, in-batch negatives", results["inbatch"]),
            ("bi-encoder, in-batch + mined hard negative", results["mined"]),
            (f"in-batch bi-encoder + tfbert cross-encoder ({ce_pooling} pooling) rerank "
             f"(top {RERANK_K})",
             results["tfbert_ce"]),
            (f"in-batch bi-encoder + sentence-transformers CrossEncoder rerank (top {RERANK_K})",
             results["st_ce"])]
    lines = [f"Retrieval: {len(queries)} docstring queries against their {len(passages)} "
             f"passages, seeds {','.join(map(str, seeds))}, train.min_steps "
             f"{min_steps or 'default (300)'} (cross-encoders "
             f"{ce_min_steps or min_steps or 'default (300)'}), epochs "
             f"{epochs or 'the recipe'}, {extra_train_pairs} package docstring pairs added "
             "to the training rows", "",
             "| system | recall@1 mean +- sd | recall@1 worst | MRR@10 mean +- sd | MRR@10 worst |",
             "|---|---|---|---|---|"]
    for name, values in rows:
        r1 = seed_stats([v[0] for v in values])
        mrr = seed_stats([v[1] for v in values])
        lines.append(f"| {name} | {r1[0]:.4f} +- {r1[1]:.4f} | {r1[2]:.4f} | "
                     f"{mrr[0]:.4f} +- {mrr[1]:.4f} | {mrr[2]:.4f} |")
    return lines + [""] + per_seed
