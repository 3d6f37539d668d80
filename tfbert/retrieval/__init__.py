"""Retrieval over sentence embeddings: exact search (`search`), a saved ANN
index (`index`), int8 / binary embeddings with rescoring (`quantization`),
hard-negative mining (`mining`), retrieve-then-rerank (`rerank`) and corpus
encoding with Apache Beam (`corpus_encoding`, the `beam` extra).

The models they use (`SentenceEncoder`, `CrossEncoder`) live in
`tfbert.models`; this package takes them as arguments.
"""
