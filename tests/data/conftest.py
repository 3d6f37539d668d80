"""A two-source corpus in file order, shared by the local-writer and Beam tests.

First half: the shipped standard-library docstrings (`pretraining/corpus.txt`).
Second half: the Python language reference as every Python installation
ships it (`pydoc_data.topics`, the text `help("assert")` shows). Both are real
text; an example's source is recognised by its token 4-grams that occur in
one source only.
"""

import collections
import pathlib
import re

import numpy as np
import pytest

DATA = pathlib.Path(__file__).parent / "pretraining"
VOCAB = DATA / "vocab.txt"


def reference_documents():
    """Paragraphs of the language reference with >= 2 sentences, one
    sentence per line (code blocks and headings dropped)."""
    import pydoc_data.topics

    docs = []
    for name in sorted(pydoc_data.topics.topics):
        for paragraph in pydoc_data.topics.topics[name].split("\n\n"):
            if paragraph.startswith(" ") or "****" in paragraph or "====" in paragraph:
                continue
            text = " ".join(paragraph.split())
            sentences = [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z\"])", text) if s]
            if len(sentences) >= 2:
                docs.append(sentences)
    return docs


class TwoSources:
    """`path`: the corpus; `source_of(ids)`: 0 (docstrings), 1 (reference) or
    None for a token sequence; `sizes`: documents per source."""

    def __init__(self, path, sizes, ngram_source):
        self.path = path
        self.sizes = sizes
        self._ngram_source = ngram_source

    def source_of(self, ids):
        votes = [self._ngram_source.get(tuple(ids[i:i + 4])) for i in range(len(ids) - 3)]
        votes = [v for v in votes if v is not None]
        if not votes:
            return None
        return int(np.mean(votes) > 0.5)

    def segments(self, x, y):
        """(segment A ids, segment B ids, label) per example of a reader batch,
        with the masked tokens put back."""
        ids = x["input_word_ids"].numpy().copy()
        pos = x["masked_lm_positions"].numpy()
        weights = y["masked_lm_weights"].numpy()
        np.put_along_axis(ids, pos, np.where(weights > 0, y["masked_lm_ids"].numpy(),
                                             np.take_along_axis(ids, pos, axis=1)), axis=1)
        types = x["input_type_ids"].numpy()
        mask = x["input_mask"].numpy()
        labels = y["next_sentence_labels"].numpy()
        out = []
        for row, t, m, label in zip(ids, types, mask, labels):
            a = row[1:][(t[1:] == 0) & (m[1:] == 1)][:-1]  # without [CLS] and its [SEP]
            b = row[(t == 1) & (m == 1)][:-1]
            out.append((a.tolist(), b.tolist(), int(label)))
        return out

    def training_stream(self, files, batch_size=50):
        """The examples in the order training sees them (no reader shuffle:
        the order is the shards' own), as (segment A, segment B, label)."""
        from tfbert.data.pretraining.writer import pretraining_dataset
        from tfbert.text.masking import MaskedLMMasker

        masker = MaskedLMMasker.from_vocab(str(VOCAB), max_predictions=8)
        ds = pretraining_dataset(files, batch_size, masker=masker, seed=0, shuffle_buffer=0,
                                 repeat=False)
        return [ex for x, y in ds for ex in self.segments(x, y)]

    def assert_mixed(self, examples):
        """Every 1,000 consecutive examples hold each source at about its
        global share; random "next" segments come from both halves."""
        sources = [self.source_of(a) for a, _, _ in examples]
        known = [s for s in sources if s is not None]
        assert len(known) > 0.9 * len(examples) and len(known) >= 3000
        share = np.mean(known)
        assert 0.3 < share < 0.7
        shares = self.window_shares(sources)
        assert max(abs(s - share) for s in shares) < 0.06, (share, min(shares), max(shares))
        # NSP: the random B of a first-half A comes from both halves (and vice
        # versa), at about each half's share of the documents (B is drawn by
        # document, so by documents, not by instances).
        document_share = self.sizes[1] / sum(self.sizes)
        for half in (0, 1):
            randoms = [self.source_of(b) for a, b, r in examples if r and self.source_of(a) == half]
            randoms = [s for s in randoms if s is not None]
            assert len(randoms) > 300
            assert abs(np.mean(randoms) - document_share) < 0.1, (half, np.mean(randoms))
        return share, shares

    @staticmethod
    def window_shares(sources, window=1000, step=250):
        """Share of source 1 in each window of `window` consecutive known sources."""
        known = np.array([s for s in sources if s is not None], float)
        return [known[i:i + window].mean() for i in range(0, len(known) - window + 1, step)]


@pytest.fixture(scope="session")
def two_sources(tmp_path_factory):
    from tfbert.text.tokenizer import BertTokenizer

    first = [d.split("\n") for d in (DATA / "corpus.txt").read_text(encoding="utf-8").split("\n\n")]
    first = [d for d in first if d and d[0]]
    second = reference_documents()[:700]
    path = tmp_path_factory.mktemp("two_sources") / "corpus.txt"
    path.write_text("\n\n".join("\n".join(d) for d in first + second) + "\n", encoding="utf-8")

    tokenizer = BertTokenizer(vocab_file=str(VOCAB), lower_case=True)
    seen = collections.defaultdict(set)
    for source, docs in enumerate((first, second)):
        sentences = [s for d in docs for s in d]
        for start in range(0, len(sentences), 1024):
            ragged = tokenizer.tokenize(sentences[start:start + 1024]).merge_dims(1, 2)
            for ids in ragged.to_list():
                for i in range(len(ids) - 3):
                    seen[tuple(ids[i:i + 4])].add(source)
    ngram_source = {g: s.pop() for g, s in seen.items() if len(s) == 1}
    return TwoSources(str(path), (len(first), len(second)), ngram_source)
