"""`BertFeatureExtractor`: hidden states of chosen layers, per token and per sentence."""

import keras
from keras import ops

from tfbert.layers.pooling import check_pooling, pool_tokens
from tfbert.models.encoder_model import EncoderModel

COMBINE = ("concat", "sum", "mean")


@keras.saving.register_keras_serializable(package="tfbert")
class BertFeatureExtractor(EncoderModel):
    """Contextual features from a `BertEncoder` (the BERT paper's feature-based approach).

    Takes the outputs of `layers` (indices into the encoder's layers;
    negative counts from the top, so `(-4, -3, -2, -1)` is the last four),
    combines them per token (`concat`, `sum` or `mean`), and pools them per
    sentence (`tfbert.layers.pooling`: `mean` or `max` over real tokens, or the
    `cls` token).

    Outputs a dict: `token_features` `[batch, seq, D]` (D = hidden size, times
    the number of layers for `concat`) and `sentence_features` `[batch, D]`,
    both float32.

    Example:
    >>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=100))
    >>> extractor = BertFeatureExtractor(encoder, layers=(-2, -1), combine="concat")
    >>> ids = np.array([[2, 7, 9, 3, 0]], "int32")
    >>> out = extractor({"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
    ...                  "input_type_ids": np.zeros_like(ids)})
    >>> out["token_features"].shape, out["sentence_features"].shape
    (TensorShape([1, 5, 256]), TensorShape([1, 256]))
    """

    def __init__(self, encoder, layers=(-4, -3, -2, -1), combine="concat", pooling="mean",
                 **kwargs):
        self.check_encoder(encoder, "BertFeatureExtractor")
        num_layers = encoder.config.num_layers
        layers = [int(i) for i in (layers if isinstance(layers, (list, tuple)) else [layers])]
        if not layers:
            raise ValueError("BertFeatureExtractor needs at least one layer.")
        bad = [i for i in layers if not -num_layers <= i < num_layers]
        if bad:
            raise ValueError(f"Layer indices {bad} are out of range for an encoder with "
                             f"{num_layers} layers (use 0..{num_layers - 1} or negative).")
        if combine not in COMBINE:
            raise ValueError(f"combine must be one of {list(COMBINE)}, got {combine!r}.")
        check_pooling(pooling)

        # === Functional model ===
        inputs = self.encoder_inputs()
        hidden = encoder(inputs)["encoder_outputs"]
        chosen = [hidden[i] for i in layers]
        if combine == "concat":
            tokens = ops.concatenate(chosen, axis=-1) if len(chosen) > 1 else chosen[0]
        else:
            stacked = ops.stack(chosen, axis=0)
            tokens = ops.sum(stacked, axis=0) if combine == "sum" else ops.mean(stacked, axis=0)
        sentence = pool_tokens(tokens, inputs["input_mask"], pooling)
        outputs = {"token_features": tokens, "sentence_features": sentence}
        kwargs.setdefault("name", "bert_feature_extractor")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.layer_indices = layers
        self.combine = combine
        self.pooling = pooling

    @property
    def feature_size(self):
        hidden = self.encoder.config.hidden_size
        return hidden * len(self.layer_indices) if self.combine == "concat" else hidden

    def head_config(self):
        # `layers` is the constructor's name; Keras owns the attribute `layers`.
        return {"layers": list(self.layer_indices), "combine": self.combine,
                "pooling": self.pooling}
