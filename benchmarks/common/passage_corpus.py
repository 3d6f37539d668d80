"""At least 100,000 real passages for the index benchmark, built on any machine with
Python: the sentences of the standard library's docstrings, of the language reference
(`pydoc_data`) and of the text files under /usr/share/doc (the pretraining-payoff
benchmark's sources and sentence splitter), each distinct sentence of 5 to 80 words
once, in source order.

    >>> passages = passage_corpus(2000)   # the first 2,000
    >>> len(passages), len(set(passages))
    (2000, 2000)
"""

import functools

from benchmarks.common.corpora import share_doc_documents
from tfbert.datasets.docstring_families import sentences_of, stdlib_docstrings


@functools.lru_cache(maxsize=2)
def passage_corpus(limit=120_000):
    """The first `limit` distinct sentences (fewer if the sources run out)."""
    import pydoc_data.topics

    def documents():
        for _, docstrings in stdlib_docstrings():
            yield from docstrings
        for name in sorted(pydoc_data.topics.topics):
            yield pydoc_data.topics.topics[name]
        for sentences in share_doc_documents(max_bytes=10 ** 9):
            yield "\n\n".join(sentences)

    seen = {}
    for text in documents():
        for sentence in sentences_of(text):
            if 5 <= len(sentence.split()) <= 80:
                seen.setdefault(sentence, None)
                if len(seen) >= limit:
                    return list(seen)
    return list(seen)
