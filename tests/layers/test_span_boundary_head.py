"""SpanBoundaryHead: predictions depend on the boundary tokens and offset only."""

import keras
import numpy as np

from tfbert.layers.span_boundary_head import SpanBoundaryHead


def test_uses_boundaries_and_offset_not_the_span_itself():
    emb = keras.layers.Embedding(30, 8)
    emb.build((None,))
    head = SpanBoundaryHead(emb, hidden_size=8, name="sbo")
    seq = np.random.default_rng(0).normal(size=(1, 6, 8)).astype("float32")
    left, right, offset = (np.array([[1, 1]], "int32"), np.array([[4, 4]], "int32"),
                           np.array([[0, 1]], "int32"))
    out = np.asarray(head(seq, left, right, offset))
    assert out.shape == (1, 2, 30)
    changed = seq.copy()
    changed[0, 2:4] = 0.0  # the masked span's own vectors do not matter
    np.testing.assert_allclose(np.asarray(head(changed, left, right, offset)), out, atol=1e-6)
    assert not np.allclose(out[0, 0], out[0, 1])  # the offset does
    assert "sbo/position_embeddings" in [v.path for v in head.weights]
