"""`BertEncoder`: the BERT transformer encoder as a Keras 3 functional model."""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from tfbert.config import BertConfig
from tfbert.layers.embeddings import BertEmbeddings
from tfbert.layers.layer_norm import LayerNorm
from tfbert.layers.transformer_block import TransformerBlock

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


@keras.saving.register_keras_serializable(package="tfbert")
class BertEncoder(keras.Model):
    """BERT encoder with the TF Hub input and output names.

    Inputs: a dict of int32 `[batch, seq]` tensors `input_word_ids`,
    `input_mask` (1 for real tokens, 0 for padding) and `input_type_ids`.

    Outputs: a dict with `sequence_output` `[batch, seq, hidden]`,
    `pooled_output` `[batch, hidden]` (dense + tanh over [CLS]), `default`
    (= `pooled_output`), `encoder_outputs` (the output of every layer) and,
    with `return_attention_probs=True`, `attention_probs` (one
    `[batch, heads, seq, seq]` tensor per layer). Outputs are float32 under
    any dtype policy.

    `prune_heads({layer: [head, ...]})` gives a smaller encoder without those
    attention heads (`BertConfig.heads_per_layer` counts what each layer keeps).

    Example:
    >>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=100))
    >>> ids = np.array([[2, 7, 9, 3, 0]], "int32")
    >>> out = encoder({"input_word_ids": ids,
    ...                "input_mask": (ids > 0).astype("int32"),
    ...                "input_type_ids": np.zeros_like(ids)})
    >>> out["sequence_output"].shape, out["pooled_output"].shape
    (TensorShape([1, 5, 128]), TensorShape([1, 128]))
    """

    def __init__(self, config, return_attention_probs=False, dtype=None, **kwargs):
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        if not isinstance(config, BertConfig):
            raise TypeError(f"BertEncoder needs a BertConfig, got {type(config).__name__}.")
        policy = keras.dtype_policies.get(dtype) if dtype else keras.config.dtype_policy()

        # === Layers ===
        embeddings = BertEmbeddings(
            vocab_size=config.vocab_size,
            hidden_size=config.hidden_size,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size,
            initializer_range=config.initializer_range,
            layer_norm_eps=config.layer_norm_eps,
            dropout_rate=config.dropout_rate,
            embedding_size=config.embedding_size,
            dtype=policy,
            name="embeddings",
        )
        # With `share_layers` there is one block (`transformer_layer_0`),
        # applied `num_layers` times: ALBERT's cross-layer sharing.
        blocks = [
            TransformerBlock(
                hidden_size=config.hidden_size,
                num_heads=config.layer_heads(i),
                head_size=config.head_size,  # a pruned layer keeps the head size
                intermediate_size=config.intermediate_size,
                hidden_act=config.hidden_act,
                dropout_rate=config.dropout_rate,
                attention_dropout_rate=config.attention_dropout_rate,
                initializer_range=config.initializer_range,
                layer_norm_eps=config.layer_norm_eps,
                norm_first=config.norm_first,
                dtype=policy,
                name=f"transformer_layer_{i}",
            )
            for i in range(1 if config.share_layers else config.num_layers)
        ]
        # Pre-LN blocks leave the residual stream unnormalized: one norm at the end.
        final_layer_norm = None
        if config.norm_first:
            final_layer_norm = LayerNorm(
                epsilon=config.layer_norm_eps, dtype=policy, name="final_layer_norm"
            )
        pooler = keras.layers.Dense(
            config.hidden_size,
            activation="tanh",
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=config.initializer_range
            ),
            dtype=policy,
            name="pooler",
        )

        # === Functional model ===
        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in INPUT_NAMES
        }
        x = embeddings(inputs["input_word_ids"], inputs["input_type_ids"])
        # [batch, 1, seq]: every query may attend to every real key.
        attention_mask = ops.expand_dims(ops.not_equal(inputs["input_mask"], 0), axis=1)
        layer_outputs, attention_probs = [], []
        for i in range(config.num_layers):
            block = blocks[0 if config.share_layers else i]
            x, probs = block(x, attention_mask=attention_mask, return_attention_probs=True)
            layer_outputs.append(x)
            attention_probs.append(probs)
        if final_layer_norm is not None:
            x = final_layer_norm(x)
            layer_outputs[-1] = x  # the last layer's output is sequence_output, as post-LN
        pooled = pooler(x[:, 0, :])

        def as_float32(t):
            return ops.cast(t, "float32")

        outputs = {
            "sequence_output": as_float32(x),
            "pooled_output": as_float32(pooled),
            "encoder_outputs": [as_float32(t) for t in layer_outputs],
        }
        outputs["default"] = outputs["pooled_output"]
        if return_attention_probs:
            outputs["attention_probs"] = [as_float32(p) for p in attention_probs]
        super().__init__(inputs=inputs, outputs=outputs, dtype=policy, **kwargs)

        # === Config ===
        self.config = config
        self.return_attention_probs = return_attention_probs
        self.embeddings = embeddings
        self.transformer_layers = blocks
        self.final_layer_norm = final_layer_norm
        self.pooler = pooler

    @property
    def token_embedding(self):
        """The `[vocab_size, E]` word embedding variable (MLM heads tie to it);
        E = `embedding_size`, or `hidden_size` without factorized embeddings."""
        return self.embeddings.word_embeddings.embeddings

    def __call__(self, inputs, *args, **kwargs):
        # Validate before Keras' own input handling, whose errors (or silent
        # casts) would otherwise come first.
        return super().__call__(_check_inputs(inputs, self.config), *args, **kwargs)

    def get_config(self):
        return {
            "config": self.config.to_dict(),
            "return_attention_probs": self.return_attention_probs,
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)

    # -- Named weights: the hand-off format of checkpoints and converters ----
    def get_named_weights(self):
        """`{name: np.ndarray}` with stable names such as
        `transformer_layer_0/self_attention/query/kernel`."""
        return {v.path: np.asarray(v.numpy()) for v in self.weights}

    def set_named_weights(self, weights, source="weights"):
        """Assigns every weight from `{name: array}`; a missing, extra or
        mis-shaped weight is an error naming it (nothing is half-loaded)."""
        from tfbert.checkpoint import assign_weights

        assign_weights({v.path: v for v in self.weights}, weights, source, "encoder")

    # -- Head pruning (Michel et al. 2019; transformers' `prune_heads`) ------
    def prune_heads(self, heads):
        """A NEW encoder without the attention heads `heads` (`{layer: [head
        index, ...]}`, indices among the layer's current heads, 0 ..
        `config.layer_heads(layer) - 1`), its weights sliced copies of these:
        each removed head's query, key and value columns and its rows of the
        output projection go. The kept heads keep their order and size, so
        the outputs equal this encoder's with those heads' outputs masked to
        0. A layer may lose every head: it keeps its feed-forward part, and
        its attention adds only the output projection's bias. This encoder
        is left as it was (Keras keeps a built model's variables)."""
        heads = check_heads_to_prune(self.config, heads)
        config = self.config
        if heads:
            config = config.replace(heads_per_layer=tuple(
                config.layer_heads(i) - len(heads.get(i, ())) for i in range(config.num_layers)))
        weights = self.get_named_weights()
        for layer, removed in heads.items():
            keep = [h for h in range(self.config.layer_heads(layer)) if h not in removed]
            mha = self.transformer_layers[layer].self_attention
            # Query, key and value: kernel [hidden, heads, size], bias [heads, size];
            # the output projection: kernel [heads, size, hidden] (its bias stays).
            for dense in (mha._query_dense, mha._key_dense, mha._value_dense):
                weights[dense.kernel.path] = weights[dense.kernel.path][:, keep]
                weights[dense.bias.path] = weights[dense.bias.path][keep]
            output_kernel = mha._output_dense.kernel.path
            weights[output_kernel] = weights[output_kernel][keep]
        pruned = BertEncoder(config, return_attention_probs=self.return_attention_probs,
                             dtype=self.dtype_policy, name=self.name)
        pruned.set_named_weights(weights, source="BertEncoder.prune_heads")
        return pruned

    @classmethod
    def from_pretrained(cls, checkpoint_dir, **kwargs):
        """Loads a tfbert checkpoint directory (see `tfbert.checkpoint`)."""
        from tfbert import checkpoint

        return cls.from_checkpoint(checkpoint.read_checkpoint(checkpoint_dir), **kwargs)

    @classmethod
    def from_checkpoint(cls, ckpt, config=None, **kwargs):
        """The encoder of a read checkpoint (`tfbert.checkpoint.read_checkpoint`;
        `config`: its config changed), with its weights. A converted
        DistilBERT's zero token-type rows are frozen: DistilBERT has no token
        types, so a training step moves what transformers' moves."""
        encoder = cls(config or ckpt.config, **kwargs)
        encoder.set_named_weights(ckpt.encoder_weights(), source=ckpt.weights_path)
        if ckpt.huggingface is not None and ckpt.huggingface.model_type == "distilbert":
            encoder.embeddings.token_type_embeddings.trainable = False
        return encoder


def check_heads_to_prune(config, heads):
    """`heads` (`{layer: [head, ...]}`) checked against `config`, as `{layer:
    frozenset of heads}` without empty layers; one ValueError per mistake."""
    if not isinstance(heads, dict):
        raise TypeError(f"prune_heads takes {{layer: [head, ...]}}, got {type(heads).__name__}.")
    if config.share_layers and heads:
        raise ValueError("prune_heads: the layers are shared (share_layers): one block "
                         "cannot lose heads in some layers only.")
    checked = {}
    for layer, indices in heads.items():
        if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not (
                0 <= layer < config.num_layers):
            raise ValueError(f"prune_heads: layer {layer!r} does not exist; layers are 0 .. "
                             f"{config.num_layers - 1}.")
        if isinstance(indices, (str, bytes)) or not hasattr(indices, "__iter__"):
            raise ValueError(f"prune_heads: layer {layer} needs a list of head indices, got "
                             f"{indices!r}.")
        count = config.layer_heads(int(layer))
        indices = list(indices)
        for head in indices:
            if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not (
                    0 <= head < count):
                raise ValueError(f"prune_heads: layer {layer} has no head {head!r}; its heads "
                                 f"are 0 .. {count - 1}." if count else
                                 f"prune_heads: layer {layer} has no heads left.")
        if len(set(indices)) != len(indices):
            raise ValueError(f"prune_heads: layer {layer} names a head twice: {indices}.")
        if indices:
            checked[int(layer)] = frozenset(int(h) for h in indices)
    return checked


def _check_inputs(inputs, config):
    """Clear errors for wrong input keys, dtypes, ranks and lengths."""
    if not isinstance(inputs, dict):
        raise TypeError(
            "BertEncoder takes a dict with keys "
            f"{list(INPUT_NAMES)}, got {type(inputs).__name__}."
        )
    missing = [k for k in INPUT_NAMES if k not in inputs]
    extra = sorted(k for k in inputs if k not in INPUT_NAMES)
    if missing or extra:
        raise ValueError(
            f"BertEncoder inputs must have exactly the keys {list(INPUT_NAMES)}; "
            f"missing {missing}, unexpected {extra}."
        )
    checked = {}
    shapes = {}
    for name in INPUT_NAMES:
        x = inputs[name]
        if not hasattr(x, "dtype"):
            x = np.asarray(x)
        dtype = keras.backend.standardize_dtype(x.dtype)
        if "int" not in dtype:
            raise TypeError(f"BertEncoder input {name!r} must be int32, got {dtype}.")
        shape = tuple(x.shape)
        if len(shape) != 2:
            raise ValueError(
                f"BertEncoder input {name!r} must be [batch, seq_length], got shape {shape}."
            )
        if shape[1] is not None and shape[1] > config.max_position_embeddings:
            raise ValueError(
                f"BertEncoder input {name!r} has sequence length {shape[1]}, more than "
                f"max_position_embeddings={config.max_position_embeddings}."
            )
        if dtype != "int32":
            x = ops.cast(x, "int32")
        shapes[name] = shape
        checked[name] = x
    ref = shapes[INPUT_NAMES[0]]
    for name in INPUT_NAMES[1:]:
        if any(a is not None and b is not None and a != b for a, b in zip(ref, shapes[name])):
            raise ValueError(
                f"BertEncoder inputs must share one shape; input_word_ids is {ref}, "
                f"{name} is {shapes[name]}."
            )
    ids = checked["input_word_ids"]
    if ref[1] is None and tf.is_tensor(ids) and not isinstance(ids, keras.KerasTensor):
        # Unknown length at trace time: check at run time (XLA drops the assert).
        check = tf.debugging.assert_less_equal(
            tf.shape(ids)[1],
            config.max_position_embeddings,
            message=(
                "BertEncoder: sequence length exceeds max_position_embeddings="
                f"{config.max_position_embeddings}"
            ),
        )
        # The ids wait for the check: otherwise the position-embedding add may
        # run first and fail with a shape error instead (seen on a loaded CPU).
        with tf.control_dependencies([check]):
            checked["input_word_ids"] = tf.identity(ids)
    return checked
