"""`EncoderModel`: what every "BertEncoder + head" model shares.

The task models (`BertClassifier`, `BertTokenClassifier`, `BertSpanLabeler`,
`BertFeatureExtractor`) are functional Keras models over the encoder's three
int32 inputs. This base gives them the inputs, the encoder check, the float32
dense head and one `get_config`/`from_config` that serializes the encoder; a
subclass lists its own constructor arguments in `head_config()`.

Example:
>>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=100))
>>> sorted(EncoderModel.encoder_inputs())
['input_mask', 'input_type_ids', 'input_word_ids']
>>> EncoderModel.dense_head(3, 0.02, "logits").dtype_policy.name
'float32'
"""

import keras
import numpy as np
import tensorflow as tf

from tfbert.checkpoint import assign_weights
from tfbert.encoder import INPUT_NAMES, BertEncoder
from tfbert.train.optimizer import build_before_fit


# Keras' functional `Model` reads `name` and `trainable` and drops any other
# keyword without a word: a misspelt argument (`num_clases=3`) would be lost.
KERAS_MODEL_KWARGS = ("name", "trainable")


def check_model_kwargs(owner, kwargs):
    """One TypeError naming the keyword arguments that `owner` (a model
    class name) does not take, instead of Keras dropping them."""
    unknown = sorted(set(kwargs) - set(KERAS_MODEL_KWARGS))
    if unknown:
        raise TypeError(f"{owner} got unexpected keyword argument(s) {unknown}.")


def holds_text(x):
    """True when `x` is raw text (a str, a list of them, a string array or
    tensor, or a dataset yielding strings) rather than the id tensors."""
    if isinstance(x, tf.data.Dataset):
        spec = x.element_spec
        spec = spec[0] if isinstance(spec, tuple) and spec else spec
        return isinstance(spec, tf.TensorSpec) and spec.dtype == tf.string
    if isinstance(x, (str, bytes)):
        return True
    if isinstance(x, (list, tuple)) and x:
        return isinstance(x[0], (str, bytes)) or holds_text(x[0])
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "USO"
    return isinstance(x, tf.Tensor) and x.dtype == tf.string


class EncoderModel(keras.Model):
    """Base class of the task models: a `BertEncoder` (`self.encoder`) and a head.

    Raw text given to one of them is one clear error (a `TypeError` naming the
    model) instead of Keras' report from inside the graph: these models take
    the three id tensors; `TextClassifier` takes strings.
    """

    def __init__(self, inputs, outputs, **kwargs):
        check_model_kwargs(type(self).__name__, kwargs)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

    def _refuse_text(self, x):
        if holds_text(x):
            raise TypeError(f"{type(self).__name__} takes the dict of the three int32 id tensors "
                            "(input_word_ids, input_mask, input_type_ids), not strings: run its "
                            "BertPreprocessor first, or use tfbert.TextClassifier for raw text.")

    def __call__(self, inputs, *args, **kwargs):
        self._refuse_text(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def fit(self, x=None, *args, **kwargs):
        self._refuse_text(x)
        build_before_fit(self)
        return super().fit(x, *args, **kwargs)

    def evaluate(self, x=None, *args, **kwargs):
        self._refuse_text(x)
        return super().evaluate(x, *args, **kwargs)

    def predict(self, x, *args, **kwargs):
        self._refuse_text(x)
        return super().predict(x, *args, **kwargs)

    @staticmethod
    def check_encoder(encoder, owner):
        if not isinstance(encoder, BertEncoder):
            raise TypeError(f"{owner} needs a BertEncoder, got {type(encoder).__name__}.")

    @staticmethod
    def encoder_inputs():
        """Symbolic inputs: the encoder's dict of int32 `[batch, seq]` tensors."""
        return {n: keras.Input(shape=(None,), dtype="int32", name=n) for n in INPUT_NAMES}

    @staticmethod
    def dense_head(units, initializer_range, name):
        # float32 head: logits stay float32 under a mixed precision policy.
        return keras.layers.Dense(
            int(units),
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype="float32",
            name=name,
        )

    def prune_heads(self, heads):
        """A NEW model of this class without the encoder's attention heads
        `heads` (`{layer: [head, ...]}`): `pruned_model`."""
        return pruned_model(self, heads)

    def head_config(self):
        """The subclass's constructor arguments besides `encoder` and `name`."""
        return {}

    def get_config(self):
        return {"encoder": keras.layers.serialize(self.encoder), **self.head_config(),
                "name": self.name}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.layers.deserialize(config["encoder"])
        return cls(**config)


def pruned_model(model, heads):
    """A NEW model of `model`'s class whose encoder lacks the attention heads
    `heads` (`{layer: [head, ...]}`, `BertEncoder.prune_heads`), with its
    settings (its config), preprocessor and every weight outside the encoder
    (the head, label thresholds) copied by name; compile it before `fit`. A
    new model, not this one changed: Keras would keep the old variables in a
    model it has built."""
    config = {**model.get_config(), "encoder": model.encoder.prune_heads(heads)}
    if "preprocessor" in config:
        config["preprocessor"] = model.preprocessor  # shared: it holds no weights
    pruned = type(model)(**config)
    theirs = {id(v) for v in model.encoder.weights}
    ours = {id(v) for v in pruned.encoder.weights}
    assign_weights({v.path: v for v in pruned.weights if id(v) not in ours},
                   {v.path: v.numpy() for v in model.weights if id(v) not in theirs},
                   f"{type(model).__name__}.prune_heads", "head")
    return pruned
