"""`FillMask`: top-k tokens for the mask tokens (`[MASK]`, RoBERTa's `<mask>`)
in raw strings, and next-sentence scores."""

import numpy as np
import tensorflow as tf


class FillMask:
    """Python API over a pretrained `BertPretrainer` and its preprocessor.

    The mask is the model's own mask token, written in the text: `[MASK]`
    for WordPiece, `<mask>` for a byte-level BPE (a converted RoBERTa). The
    BPE tokenizer maps `<mask>` to its id itself (taking the space before it,
    as transformers' RoBERTa tokenizer); for WordPiece the literal `[MASK]` is
    recognized here only and the text between masks is tokenized normally, so
    tokenization keeps reference parity everywhere else. The candidates are
    vocabulary tokens (`Ġlist` for byte-level BPE).

    Example:
    >>> fill = FillMask.from_pretrained("runs/tiny/pretrained")  # doctest: +SKIP
    >>> fill(["The [MASK] returns a list."], top_k=3)  # doctest: +SKIP
    [[[('function', 0.41), ('method', 0.22), ('module', 0.05)]]]
    >>> fill.next_sentence_probability(["Open the file."], ["Then read it."])  # doctest: +SKIP
    array([0.93], dtype=float32)
    """

    def __init__(self, model, preprocessor):
        self.model = model
        self.preprocessor = preprocessor
        self.vocab = preprocessor.vocab
        self.seq_length = preprocessor.seq_length
        self.mask_token = self.vocab.tokens[self.vocab.mask_id]

    @classmethod
    def from_pretrained(cls, checkpoint_dir, seq_length=128):
        """Loads a tfbert checkpoint dir that has trained `mlm/*` (and, for
        next-sentence scores, `nsp/*`) head weights."""
        from tfbert import checkpoint
        from tfbert.models.pretrainer import BertPretrainer
        from tfbert.text.preprocessor import BertPreprocessor

        ckpt = checkpoint.read_checkpoint(checkpoint_dir)
        if not ckpt.prefixed_weights("mlm"):
            raise ValueError(
                f"{ckpt.weights_path} has no masked-LM head weights (mlm/*); fill-mask needs "
                "a pretrained head (e.g. from tools/pretrain.py, or a converted checkpoint "
                "whose source has one)."
            )
        pair_task = "nsp" if ckpt.prefixed_weights("nsp") else "none"
        model = BertPretrainer.from_checkpoint(checkpoint_dir, next_sentence_task=pair_task)
        preprocessor = BertPreprocessor.from_pretrained(checkpoint_dir, seq_length=seq_length)
        return cls(model, preprocessor)

    def __call__(self, texts, top_k=5):
        """For each text, for each mask token in order: `top_k` `(token, prob)`."""
        texts = _as_list(texts)
        rows = self._ids_with_masks(texts)
        bad = next((t for t, r in zip(texts, rows) if self.vocab.mask_id not in r), None)
        if bad is not None:
            raise ValueError(f"Fill-mask text has no {self.mask_token}: {bad!r}")
        longest = max(len(r) for r in rows) + 2
        if longest > self.seq_length:
            v = self.vocab
            raise ValueError(
                f"A fill-mask text has {longest} tokens with {v.tokens[v.cls_id]}/"
                f"{v.tokens[v.sep_id]}, more than seq_length={self.seq_length}; shorten it or "
                "raise seq_length."
            )
        inputs = self._pack([rows])
        positions = [[i for i, t in enumerate(row) if t == self.vocab.mask_id] for row in
                     inputs["input_word_ids"].tolist()]
        max_masks = max(len(p) for p in positions)
        inputs["masked_lm_positions"] = np.array(
            [p + [0] * (max_masks - len(p)) for p in positions], np.int32
        )
        logits = self.model(inputs)["mlm_logits"].numpy()
        probs = tf.nn.softmax(logits, axis=-1).numpy()
        results = []
        for row, p in enumerate(positions):
            per_mask = []
            for m in range(len(p)):
                best = np.argsort(-probs[row, m])[:top_k]
                per_mask.append([(self.vocab.tokens[i], float(probs[row, m, i])) for i in best])
            results.append(per_mask)
        return results

    def _ids_with_masks(self, texts):
        """Token ids of each text, its mask tokens as the mask id."""
        if self.preprocessor.tokenizer_kind == "byte_level_bpe":  # reads <mask> itself
            return self.preprocessor.tokenize(tf.constant(texts)).merge_dims(1, 2).to_list()
        pieces = [t.split(self.mask_token) for t in texts]
        flat = [piece for p in pieces for piece in p]
        tokenized = self.preprocessor.tokenize(tf.constant(flat)).merge_dims(1, 2).to_list()
        rows, k = [], 0
        for p in pieces:
            ids = []
            for j in range(len(p)):
                if j:
                    ids.append(self.vocab.mask_id)
                ids.extend(tokenized[k + j])
            k += len(p)
            rows.append(ids)
        return rows

    def next_sentence_probability(self, first, second):
        """P(second follows first) for each pair of raw strings, `[batch]`."""
        if self.model.nsp_head is None:
            raise ValueError("This checkpoint has no next-sentence head (nsp/*).")
        first, second = _as_list(first), _as_list(second)
        if len(first) != len(second):
            raise ValueError(f"Got {len(first)} first sentences but {len(second)} second ones.")
        segments = [self.preprocessor.tokenize(tf.constant(s)).merge_dims(1, 2).to_list()
                    for s in (first, second)]
        inputs = self._pack(segments)
        inputs["masked_lm_positions"] = np.zeros([len(first), 1], np.int32)
        logits = self.model(inputs)["nsp_logits"]
        return tf.nn.softmax(logits, axis=-1).numpy()[:, 0]  # label 0 = is next

    def _pack(self, segments):
        ragged = [tf.ragged.constant(s, dtype=tf.int32, ragged_rank=1) for s in segments]
        packed = self.preprocessor.bert_pack_inputs(ragged, seq_length=self.seq_length)
        return {k: v.numpy() for k, v in packed.items()}


def _as_list(texts):
    if isinstance(texts, str):
        return [texts]
    texts = list(texts)
    if not texts or not all(isinstance(t, str) for t in texts):
        raise TypeError("Expected a string or a non-empty list of strings.")
    return texts
