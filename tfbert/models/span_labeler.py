"""`BertSpanLabeler`: answer-span start/end logits (SQuAD) on BERT's sequence output."""

import keras

from tfbert.models.encoder_model import EncoderModel

# Logit of positions that can never start or end an answer. Finite (not -inf)
# so softmax cross-entropy and score differences stay NaN-free; the head is
# float32, where -1e4 is far below any real logit.
MASKED_LOGIT = -10000.0


@keras.saving.register_keras_serializable(package="tfbert")
class BertSpanLabeler(EncoderModel):
    """A `BertEncoder` with one dense layer giving a start and an end logit per token.

    Inputs: the encoder's dict of int32 `[batch, seq]` tensors packed as
    `[CLS] question [SEP] context [SEP]` (context has `input_type_ids` 1), or
    with `separator_id`, RoBERTa's `<s> question </s></s> context </s>`.
    Outputs: dict of float32 `[batch, seq]` `start_logits`, `end_logits`.
    Positions other than context tokens and [CLS] get `MASKED_LOGIT`: an
    answer is a context span, and [CLS] is the "no answer in this window"
    target (SQuAD v2.0 null answer; v1.1 training windows without the
    answer). Whether [CLS] may be *predicted* is the task's post-processing.

    Args:
        encoder: a `BertEncoder` (pretrained or fresh).
        dropout: dropout rate before the dense layer (BERT's SQuAD head has
            none, so 0.0 by default).
        initializer_range: stddev of the head's truncated-normal init
            (default: the encoder's).
        separator_id: RoBERTa's `</s>` id: the context is then the tokens
            after the first two separators (its packing has no segment ids);
            None: the tokens of `input_type_ids` 1 (BERT).

    Example:
    >>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=100))
    >>> model = BertSpanLabeler(encoder)
    >>> ids = np.array([[2, 7, 3, 9, 8, 3, 0]], "int32")  # [CLS] q [SEP] c c [SEP] pad
    >>> out = model({"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
    ...              "input_type_ids": np.array([[0, 0, 0, 1, 1, 1, 0]], "int32")})
    >>> (out["start_logits"].numpy()[0] > MASKED_LOGIT).tolist()
    [True, False, False, True, True, False, False]
    """

    def __init__(self, encoder, dropout=0.0, initializer_range=None, separator_id=None,
                 **kwargs):
        self.check_encoder(encoder, "BertSpanLabeler")
        if initializer_range is None:
            initializer_range = encoder.config.initializer_range

        # === Layers ===
        head_dropout = keras.layers.Dropout(dropout, name="span_dropout")
        logits_layer = self.dense_head(2, initializer_range, "span_logits")
        # The pooler gets no gradient from span labels; freezing it keeps the
        # optimizer from tracking it. Note: this sets `trainable` on the encoder passed in.
        encoder.pooler.trainable = False

        # === Functional model ===
        inputs = self.encoder_inputs()
        sequence = encoder(inputs)["sequence_output"]
        logits = logits_layer(head_dropout(sequence))  # [batch, seq, 2]
        # Allowed positions: [CLS] (position 0) and context tokens, i.e.
        # the second text inside the mask, minus the final [SEP] (the last masked-in one).
        mask = inputs["input_mask"]
        # Positions by cumsum: the sequence length is unknown (None) here.
        positions = keras.ops.cumsum(keras.ops.ones_like(mask), axis=1) - 1
        length = keras.ops.sum(mask, axis=1, keepdims=True)
        # keras.ops, not ==/&: KerasTensor comparisons are not overloaded.
        ops = keras.ops
        context = ops.logical_and(
            ops.logical_and(second_text(inputs, separator_id), ops.equal(mask, 1)),
            ops.less(positions, length - 1))
        allowed = ops.logical_or(context, ops.equal(positions, 0))
        start = keras.ops.where(allowed, logits[:, :, 0], MASKED_LOGIT)
        end = keras.ops.where(allowed, logits[:, :, 1], MASKED_LOGIT)
        outputs = {"start_logits": start, "end_logits": end}
        kwargs.setdefault("name", "bert_span_labeler")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.separator_id = separator_id

    def head_config(self):
        return {"dropout": self.dropout, "initializer_range": self.initializer_range,
                "separator_id": self.separator_id}


def second_text(inputs, separator_id=None):
    """bool `[batch, seq]`: the positions of a pair's second text (and what
    follows it): type id 1, or after two `separator_id`s (RoBERTa)."""
    ops = keras.ops
    if separator_id is None:
        return ops.equal(inputs["input_type_ids"], 1)
    is_separator = ops.cast(ops.equal(inputs["input_word_ids"], separator_id), "int32")
    before = ops.cumsum(is_separator, axis=1) - is_separator  # separators before each position
    return ops.greater_equal(before, 2)
