"""`BertTokenClassifier`: per-token labels (NER, POS) on BERT's sequence output."""

import keras

from tfbert.models.encoder_model import EncoderModel


@keras.saving.register_keras_serializable(package="tfbert")
class BertTokenClassifier(EncoderModel):
    """A `BertEncoder` with dropout + dense over every token of `sequence_output`.

    Inputs: the encoder's dict of int32 `[batch, seq]` tensors. Output: float32
    logits `[batch, seq, num_classes]`. Which positions carry a label (the
    first wordpiece of each word) is the task's business (`tfbert.tasks.tagging`).

    Example:
    >>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=100))
    >>> model = BertTokenClassifier(encoder, num_classes=9)
    >>> ids = np.array([[2, 7, 9, 3, 0]], "int32")
    >>> model({"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
    ...        "input_type_ids": np.zeros_like(ids)}).shape
    TensorShape([1, 5, 9])
    """

    def __init__(self, encoder, num_classes, dropout=0.1, initializer_range=None, **kwargs):
        self.check_encoder(encoder, "BertTokenClassifier")
        if int(num_classes) < 1:
            raise ValueError(f"num_classes must be >= 1, got {num_classes}.")
        if initializer_range is None:
            initializer_range = encoder.config.initializer_range

        # === Layers ===
        head_dropout = keras.layers.Dropout(dropout, name="token_dropout")
        logits_layer = self.dense_head(num_classes, initializer_range, "logits")

        # The pooler gets no gradient from per-token labels; freezing it keeps
        # the optimizer from tracking (and warning about) it. Note: this sets
        # `trainable` on the encoder passed in.
        encoder.pooler.trainable = False

        # === Functional model ===
        inputs = self.encoder_inputs()
        sequence = encoder(inputs)["sequence_output"]
        logits = logits_layer(head_dropout(sequence))
        kwargs.setdefault("name", "bert_token_classifier")
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.num_classes = int(num_classes)
        self.dropout = dropout
        self.initializer_range = initializer_range

    def head_config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout,
                "initializer_range": self.initializer_range}
