r"""Retrieval quality over seeds: the bi-encoder alone, + tfbert's cross-encoder rerank,
+ sentence-transformers' CrossEncoder rerank; and hard negatives against in-batch ones.

    python tools/benchmark.py --what=rerank
    python tools/benchmark.py --what=quality                     # runs this too ("rerank")
    python benchmarks/bench_rerank.py --seeds=0,1,2 --work=/tmp/br
    python benchmarks/bench_rerank.py --matryoshka --seeds=0,1,2 --work=/tmp/brm
    python benchmarks/bench_rerank.py --extra_train_pairs=3000 --epochs=1 --seeds=0 --work=/tmp/br2
    python benchmarks/bench_rerank.py --extra_train_pairs=3000 --epochs=1 --ce_pooling=mean ...

Data: the docstring (summary line, rest of the paragraph) pairs of
`tfbert.datasets.docstring_pairs`: queries are summary lines, not copies of the passages.
The first 300 are the test set (300 queries against their 300 passages), the
other 879 train. `--extra_train_pairs=N` adds N pairs made by the same rule from
the installed tensorflow, keras and numpy sources to the training rows
(`package_docstring_pairs`; none repeats a standard-library pair), for a training
set 4-8x larger. Everything starts from all-MiniLM-L6-v2. The rows are built once per
`--work` directory and rebuilt when these flags change.

1. Mining (once, `tfbert.retrieval.mining`): the pretrained MiniLM's most similar train
   passages that are not the positive (ranks 0-30, below 0.95 x the positive's
   score): 3 per query as listwise cross-encoder rows (queries with 3), the
   hardest as the bi-encoder's (anchor, positive, negative) rows.
2. Per seed, with tfbert's recipe defaults (`finetune`, 10% held out chooses
   the epoch):
   - bi-encoder, in-batch negatives only (`sentence_embedding`, ranking loss);
   - bi-encoder, in-batch + the mined negative (same loss, `negative_column`);
   - tfbert cross-encoder (`cross_encoder`, listwise softmax over the positive
     and 3 mined negatives; head on [CLS]'s pooler, `--ce_pooling=mean`: on the
     mean of the token states). With `--epochs` given there is no epoch to
     choose, and it trains on every row, as the reference does;
   - sentence-transformers `CrossEncoder` from the same weights on the same rows,
     the same listwise softmax, at tfbert's chosen learning rate, batch size and
     epochs (torch AdamW, 10% warmup + linear decay, clipping 1, dropout 0.1,
     every row once per epoch, the last epoch kept, as `bench_quality.py`'s references:
     `benchmarks.common.torch_reference.torch_train`).
3. Test: the in-batch bi-encoder retrieves the top 20 of the 300 test passages
   for each query; each cross-encoder reorders those 20 (a gold passage below
   20 keeps its bi-encoder rank). recall@1 and MRR@10 of the gold passage.

`--matryoshka` instead trains the in-batch bi-encoder with and without
`task.matryoshka_dims` (384, 256, 128, 64; equal weights) per seed and reports recall@1
at each `truncate_dim`.

The measurement is `benchmarks.common.rerank_quality` (`bench_quality.py`'s `rerank`
task runs it too); this module is its entry point and its flags.
"""

import os
import sys

if __name__ == "__main__":  # `benchmarks.common` when run as a script
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common.rerank_quality import NotEnoughPairs, matryoshka, run  # noqa: E402


if __name__ == "__main__":
    import argparse

    from tfbert.layers.pooling import POOLING

    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--work", default=None)
    parser.add_argument("--min_steps", type=int, default=None,
                        help="train.min_steps for every run (default: the tasks' 300)")
    parser.add_argument("--ce_min_steps", type=int, default=None,
                        help="train.min_steps of the cross-encoders (default: --min_steps)")
    parser.add_argument("--train_rows", type=int, default=None, help="smoke runs: fewer rows")
    parser.add_argument("--test_rows", type=int, default=300, help="smoke runs: fewer rows")
    parser.add_argument("--extra_train_pairs", type=int, default=0,
                        help="add this many docstring pairs of the installed tensorflow, "
                             "keras and numpy to the training rows")
    parser.add_argument("--epochs", type=int, default=None,
                        help="epochs of every run (default: the recipe's)")
    parser.add_argument("--ce_pooling", choices=POOLING, default="cls",
                        help="tfbert cross-encoder head: on [CLS]'s pooler or the mean of "
                             "the pair's token states (task.pooling)")
    parser.add_argument("--matryoshka", action="store_true",
                        help="instead: recall@1 per truncate_dim with and without the "
                             "Matryoshka loss")
    args = parser.parse_args()
    if args.extra_train_pairs < 0:
        parser.error(f"--extra_train_pairs must be 0 or more, not {args.extra_train_pairs}")
    if args.epochs is not None and args.epochs < 1:
        parser.error(f"--epochs must be 1 or more, not {args.epochs}")
    if args.matryoshka:
        print("\n".join(matryoshka([int(s) for s in args.seeds.split(",")], args.work,
                                    min_steps=args.min_steps, train_rows=args.train_rows,
                                    test_rows=args.test_rows)))
        sys.exit(0)
    try:
        lines = run([int(s) for s in args.seeds.split(",")], args.work,
                    min_steps=args.min_steps, train_rows=args.train_rows,
                    test_rows=args.test_rows, ce_min_steps=args.ce_min_steps,
                    extra_train_pairs=args.extra_train_pairs, epochs=args.epochs,
                    ce_pooling=args.ce_pooling)
    except NotEnoughPairs as e:
        parser.error(str(e))
    print("\n".join(lines))
