"""`BertPretrainer`: encoder + masked-LM head + next-sentence head + losses."""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from tfbert.checkpoint import assign_weights
from tfbert.data.pretraining.instances import fold_use_nsp, next_sentence_task_or_use_nsp
from tfbert.encoder import INPUT_NAMES, BertEncoder
from tfbert.layers.mlm_head import MaskedLMHead
from tfbert.layers.nsp_head import NextSentenceHead
from tfbert.layers.span_boundary_head import SpanBoundaryHead

MLM_HEAD = "mlm"
NSP_HEAD = "nsp"
SBO_HEAD = "sbo"
SPAN_INPUTS = ("masked_lm_span_left", "masked_lm_span_right", "masked_lm_span_offset")


@keras.saving.register_keras_serializable(package="tfbert")
class BertPretrainer(keras.Model):
    """BERT pretraining model: masked LM (+ next sentence prediction).

    Inputs: a dict with the encoder inputs (`input_word_ids`, `input_mask`,
    `input_type_ids`) and `masked_lm_positions` `[batch, max_predictions]`.
    Outputs: `mlm_logits` `[batch, max_predictions, vocab]` and, with a
    pair task, `nsp_logits` `[batch, 2]`, all float32.

    Targets for `fit` (the `y` dict): `masked_lm_ids`, `masked_lm_weights`
    (1.0 real prediction, 0.0 padding) and, with NSP, `next_sentence_labels`
    (0 = actual next, 1 = random). The loss is the masked-LM cross-entropy
    averaged over real predictions only, plus the NSP cross-entropy. Metrics:
    `mlm_loss`, `mlm_accuracy`, `nsp_loss`, `nsp_accuracy`.

    `next_sentence_task`: the pair task, "nsp" (the default), "sop" or
    "none". "sop" trains ALBERT's sentence-order prediction instead (label
    1 = the two consecutive segments are swapped) with the same binary head
    (checkpoint name `nsp/*`); its metrics are `sop_loss` and
    `sop_accuracy`. "none" trains the masked LM only. (The `use_nsp`
    attribute says whether the binary head exists; as an argument, `use_nsp`
    is the old name of `next_sentence_task`, False being "none", accepted
    with a FutureWarning.)

    The MLM decoder is the encoder's word-embedding variable itself (tied).

    `use_sbo=True` adds SpanBERT's span boundary objective: inputs
    `masked_lm_span_left/right/offset` (from `MaskedLMMasker(strategy="span")`),
    output `sbo_logits`, and its cross-entropy over the same real predictions
    is added to the loss (metric `sbo_loss`).

    Example:
    >>> from tfbert import BertConfig
    >>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=100))
    >>> model = BertPretrainer(encoder)
    >>> ids = np.array([[2, 4, 9, 3, 0]], "int32")
    >>> out = model({"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
    ...              "input_type_ids": np.zeros_like(ids),
    ...              "masked_lm_positions": np.array([[1, 0]], "int32")})
    >>> out["mlm_logits"].shape, out["nsp_logits"].shape
    (TensorShape([1, 2, 100]), TensorShape([1, 2]))
    """

    def __init__(self, encoder, use_nsp=None, use_sbo=False, next_sentence_task=None, **kwargs):
        if isinstance(encoder, dict):
            encoder = keras.saving.deserialize_keras_object(encoder)
        super().__init__(**kwargs)
        config = encoder.config
        self.next_sentence_task = next_sentence_task_or_use_nsp(next_sentence_task, use_nsp)
        use_nsp = self.next_sentence_task != "none"  # the binary pair head

        # === Layers ===
        self.encoder = encoder
        self.use_nsp = use_nsp
        self.use_sbo = use_sbo
        # Heads are built here, outside any name scope, so their variable
        # paths are exactly `mlm/...` and `nsp/...` (the checkpoint names).
        self.mlm_head = MaskedLMHead(
            encoder.embeddings.word_embeddings,
            hidden_size=config.hidden_size,
            hidden_act=config.hidden_act,
            initializer_range=config.initializer_range,
            layer_norm_eps=config.layer_norm_eps,
            embedding_size=config.embedding_size,
            dtype=encoder.dtype_policy,
            name=MLM_HEAD,
        )
        self.mlm_head.build()
        self.nsp_head = None
        if not use_nsp:
            # Only NSP reads the pooler; frozen, it gets no "missing gradient"
            # warnings or optimizer slots, and keeps its loaded values.
            encoder.pooler.trainable = False
        if use_nsp:
            self.nsp_head = NextSentenceHead(
                initializer_range=config.initializer_range,
                dtype=encoder.dtype_policy,
                name=NSP_HEAD,
            )
            self.nsp_head.build((None, config.hidden_size))

        self.sbo_head = None
        if use_sbo and config.factorized_embeddings:
            raise ValueError("use_sbo needs embedding_size = hidden_size: the span boundary "
                             "head's decoder is tied to H-wide word embeddings.")
        if use_sbo:
            self.sbo_head = SpanBoundaryHead(
                encoder.embeddings.word_embeddings,
                hidden_size=config.hidden_size,
                hidden_act=config.hidden_act,
                initializer_range=config.initializer_range,
                layer_norm_eps=config.layer_norm_eps,
                dtype=encoder.dtype_policy,
                name=SBO_HEAD,
            )
            self.sbo_head.build()

        # === Metrics ===
        self.mlm_loss_tracker = keras.metrics.Mean(name="mlm_loss")
        self.mlm_accuracy = keras.metrics.Mean(name="mlm_accuracy")
        if use_sbo:
            self.sbo_loss_tracker = keras.metrics.Mean(name="sbo_loss")
        if use_nsp:
            task = self.next_sentence_task
            self.nsp_loss_tracker = keras.metrics.Mean(name=f"{task}_loss")
            self.nsp_accuracy = keras.metrics.Mean(name=f"{task}_accuracy")

    @property
    def config(self):
        return self.encoder.config

    def call(self, inputs, training=None):
        encoder_inputs = {name: inputs[name] for name in INPUT_NAMES}
        outputs = self.encoder(encoder_inputs, training=training)
        result = {
            "mlm_logits": self.mlm_head(outputs["sequence_output"], inputs["masked_lm_positions"])
        }
        if self.use_nsp:
            result["nsp_logits"] = self.nsp_head(outputs["pooled_output"])
        if self.use_sbo:
            result["sbo_logits"] = self.sbo_head(
                outputs["sequence_output"], *(inputs[name] for name in SPAN_INPUTS)
            )
        return result

    def mlm_model(self):
        """A functional model with TF Hub's BERT `mlm` signature, for export:
        inputs `input_word_ids`, `input_mask`, `input_type_ids`,
        `masked_lm_positions`; outputs the encoder's outputs plus
        `mlm_logits` `[batch, num_positions, vocab]`. Shares this model's
        variables."""
        names = INPUT_NAMES + ("masked_lm_positions",)
        inputs = {n: keras.Input(shape=(None,), dtype="int32", name=n) for n in names}
        outputs = dict(self.encoder({n: inputs[n] for n in INPUT_NAMES}))
        outputs["mlm_logits"] = self.mlm_head(
            outputs["sequence_output"], inputs["masked_lm_positions"]
        )
        return keras.Model(inputs, outputs, name="mlm")

    # -- Losses and metrics ------------------------------------------------
    def _objective_losses(self, y, y_pred):
        """`{"mlm": ..., "sbo": ..., "nsp": ...}` scalar losses (present heads)."""
        weights = ops.cast(y["masked_lm_weights"], "float32")

        def masked_token_loss(logits):
            ce = keras.losses.sparse_categorical_crossentropy(
                y["masked_lm_ids"], logits, from_logits=True
            )
            # Mean over real predictions only; padding positions weigh 0.
            return ops.sum(ce * weights) / ops.maximum(ops.sum(weights), 1.0)

        losses = {"mlm": masked_token_loss(y_pred["mlm_logits"])}
        if self.use_sbo:
            losses["sbo"] = masked_token_loss(y_pred["sbo_logits"])
        if self.use_nsp:
            losses["nsp"] = ops.mean(
                keras.losses.sparse_categorical_crossentropy(
                    y["next_sentence_labels"], y_pred["nsp_logits"], from_logits=True
                )
            )
        return losses

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        loss = sum(self._objective_losses(y, y_pred).values())
        if self.losses:
            loss = loss + ops.sum(self.losses)
        # Keras sums replica gradients; scale each replica's mean loss down.
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        return loss / replicas if replicas > 1 else loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        losses = self._objective_losses(y, y_pred)
        weights = ops.cast(y["masked_lm_weights"], "float32")
        correct = ops.cast(
            ops.equal(ops.argmax(y_pred["mlm_logits"], axis=-1), ops.cast(y["masked_lm_ids"], "int64")),
            "float32",
        )
        self.mlm_loss_tracker.update_state(losses["mlm"])
        self.mlm_accuracy.update_state(correct, sample_weight=weights)
        if self.use_sbo:
            self.sbo_loss_tracker.update_state(losses["sbo"])
        if self.use_nsp:
            nsp_correct = ops.cast(
                ops.equal(
                    ops.argmax(y_pred["nsp_logits"], axis=-1),
                    ops.cast(ops.reshape(y["next_sentence_labels"], [-1]), "int64"),
                ),
                "float32",
            )
            self.nsp_loss_tracker.update_state(losses["nsp"])
            self.nsp_accuracy.update_state(nsp_correct)
        return self.get_metrics_result()

    # -- Named weights: the checkpoint hand-off ----------------------------
    def head_weights(self):
        """`{"mlm": {name: array}, "nsp": {...}}` (and `"sbo"`) with the
        checkpoint names (`transform/kernel`, ..., `output_bias`; `kernel`, `bias`)."""
        return {name: _own_weights(head) for name, head in self._heads().items()}

    def set_head_weights(self, head_weights, source="weights"):
        """Assigns head weights from `{"mlm": {...}, "nsp": {...}}`; a head
        that is absent keeps its fresh initialization. Errors name the
        missing, unexpected or mis-shaped weight."""
        heads = self._heads()
        for name, weights in head_weights.items():
            if name not in heads:
                continue
            variables = {
                f"{name}/{_relative_path(v, heads[name])}": v for v in _own_variables(heads[name])
            }
            assign_weights(variables, {f"{name}/{k}": w for k, w in weights.items()}, source,
                           f"{name} head")

    def _heads(self):
        heads = {MLM_HEAD: self.mlm_head, NSP_HEAD: self.nsp_head, SBO_HEAD: self.sbo_head}
        return {name: head for name, head in heads.items() if head is not None}

    def save_checkpoint(self, out_dir, vocab_file, lower_case, source="tfbert pretraining"):
        """Writes a tfbert checkpoint directory with encoder and head weights."""
        from tfbert import checkpoint

        return checkpoint.save_checkpoint(
            out_dir,
            self.config,
            self.encoder.get_named_weights(),
            vocab_file,
            lower_case,
            head_weights=self.head_weights(),
            source=source,
        )

    @classmethod
    def from_checkpoint(cls, checkpoint_dir, use_nsp=None, use_sbo=False, dtype=None,
                        config_overrides=None, next_sentence_task=None):
        """Encoder weights from a tfbert checkpoint dir; head weights too
        when the checkpoint has them (else fresh heads)."""
        from tfbert import checkpoint

        ckpt = checkpoint.read_checkpoint(checkpoint_dir)
        config = ckpt.config.replace(**config_overrides) if config_overrides else ckpt.config
        if config.norm_first != ckpt.config.norm_first:
            kind = "pre" if ckpt.config.norm_first else "post"
            raise ValueError(f"{checkpoint_dir} holds {kind}-LayerNorm weights; norm_first "
                             "cannot change when continuing from them (the blocks compute "
                             "differently).")
        encoder = BertEncoder.from_checkpoint(ckpt, config, dtype=dtype)
        model = cls(encoder, use_nsp=use_nsp, use_sbo=use_sbo,
                    next_sentence_task=next_sentence_task)
        heads = {h: ckpt.prefixed_weights(h) for h in (MLM_HEAD, NSP_HEAD, SBO_HEAD)}
        model.set_head_weights({h: w for h, w in heads.items() if w}, source=ckpt.weights_path)
        return model

    def get_config(self):
        return {
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "use_sbo": self.use_sbo,
            "next_sentence_task": self.next_sentence_task,
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config, custom_objects=None):
        # Saved before next_sentence_task was the one name: use_nsp beside it.
        return super().from_config(fold_use_nsp(config), custom_objects=custom_objects)


def _own_variables(head):
    """The head's variables without the tied word embeddings."""
    return [v for v in head.weights if v.path.startswith(head.name + "/") or "/" + head.name + "/" in v.path]


def _relative_path(variable, head):
    path = variable.path
    return path[path.index(head.name + "/") + len(head.name) + 1:]


def _own_weights(head):
    return {_relative_path(v, head): np.asarray(v.numpy()) for v in _own_variables(head)}
