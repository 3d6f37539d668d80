"""`BertClassifier`: sentence(-pair) classification or regression on BERT's pooled output."""

import keras

from tfbert.layers.pooling import check_pooling, pool_tokens
from tfbert.models.encoder_model import EncoderModel


@keras.saving.register_keras_serializable(package="tfbert")
class BertClassifier(EncoderModel):
    """A `BertEncoder` with dropout + dense over `pooled_output` ([CLS]), or over
    the mean of the token states.

    Inputs: the encoder's dict of int32 `[batch, seq]` tensors. Output: float32
    logits `[batch, num_classes]` (`num_classes=1` for regression: the output
    is the predicted score).

    Args:
        encoder: a `BertEncoder` (pretrained or fresh).
        num_classes: number of labels (1 for regression).
        dropout: dropout rate before the dense layer (BERT uses 0.1).
        initializer_range: stddev of the head's truncated-normal init
            (default: the encoder's).
        pooling: one of `tfbert.layers.pooling.POOLING`: "cls" (BERT's pooler:
            dense + tanh on [CLS], as transformers' `BertForSequenceClassification`),
            "mean" or "max" over the last layer's real tokens (for an encoder whose
            pooler was never trained, such as a sentence-transformers checkpoint).

    Example:
    >>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=100))
    >>> model = BertClassifier(encoder, num_classes=3)
    >>> ids = np.array([[2, 7, 9, 3, 0]], "int32")
    >>> model({"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
    ...        "input_type_ids": np.zeros_like(ids)}).shape
    TensorShape([1, 3])
    """

    def __init__(self, encoder, num_classes, dropout=0.1, initializer_range=None,
                 pooling="cls", **kwargs):
        self.check_encoder(encoder, "BertClassifier")
        if int(num_classes) < 1:
            raise ValueError(f"num_classes must be >= 1, got {num_classes}.")
        check_pooling(pooling)
        if initializer_range is None:
            initializer_range = encoder.config.initializer_range

        # === Layers ===
        head_dropout = keras.layers.Dropout(dropout, name="classifier_dropout")
        logits_layer = self.dense_head(num_classes, initializer_range, "logits")

        if pooling != "cls":
            # The pooler gets no gradient: freezing it keeps the optimizer from warning.
            encoder.pooler.trainable = False

        # === Functional model ===
        inputs = self.encoder_inputs()
        outputs = encoder(inputs)
        if pooling == "cls":
            pooled = outputs["pooled_output"]  # [CLS] through BERT's pooler
        else:
            pooled = pool_tokens(outputs["sequence_output"], inputs["input_mask"], pooling)
        logits = logits_layer(head_dropout(pooled))
        kwargs.setdefault("name", "bert_classifier")
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.num_classes = int(num_classes)
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.pooling = pooling

    def head_config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout,
                "initializer_range": self.initializer_range, "pooling": self.pooling}
