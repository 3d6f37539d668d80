"""What the benchmarks share; no benchmark of its own (those are `benchmarks/bench_*.py`).

- `minilm`: all-MiniLM-L6-v2's Hugging Face files and their tfbert conversion.
- `seed_stats`: mean, sample sd and worst seed, as every benchmark reports them.
- `torch_reference`: the PyTorch reference recipe (AdamW, warmup, clipping) and its loop.
- `timing`: a fine-tuning run with its steady-state step times.
- `engines`: the CPU inference engines beside tfbert (ONNX Runtime, OpenVINO,
  LiteRT), the CPU's name and flags, the load average.
- corpora built on any machine with Python: `corpora` (prose sentences, the
  /usr/share/doc documents), `long_docs` (man pages), `squad_docs` (SQuAD v2 of
  the standard library's docs), `passage_corpus` (120,000 passages),
  `docstring_multilabel` (a multi-label set).
- measurements two benchmarks report: `bucketing` (effective tokens/s with
  length bucketing: `bench_bucketing`, `bench_peers`) and `rerank_quality`
  (retrieval + rerank over seeds: `bench_rerank`, `bench_quality`'s `rerank` task).

Modules here never import a `bench_*` module (tests/test_layering.py).
"""
