"""Example datasets built from text every machine has: the docstrings of the
Python standard library. Real sentences with labels a reader can check, for
examples, tests and benchmarks that must not download anything.

- `docstring_pairs`: (query, passage) pairs, a function's summary line and
  the rest of its docstring (retrieval, sentence embeddings, reranking);
  `package_docstring_pairs`, the same from installed packages' source.
- `docstring_families`: a 5-class sentence task, which family of
  standard-library modules a docstring sentence comes from (classification,
  distillation with an unlabelled pool).
- `wordnet_senses`: word-sense items from WordNet's example sentences (Debian's
  `wordnet-base`), for `tools/probe.py --task=senses`.
"""
