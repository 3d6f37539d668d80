"""`StringsModel`: what the strings-in Keras models (`TextClassifier`,
`TokenClassifier`) share on top of their ids model.

A mixin placed before the ids model in the bases (`class
TextClassifier(StringsModel, BertClassifier)`): the model keeps its
`BertPreprocessor` as `self.preprocessor` and maps the three id tensors to
logits; this class gives it `fit` / `evaluate` on raw text (tokenized inside
`tf.data` by the subclass's `text_batches`), `compile()` with no arguments as
the fine-tuning recipe (`tfbert.train.recipe`: the head's loss and metrics,
AdamW with warmup and linear decay over the updates `fit` runs, the learning
rate by model size, the batch size by data size), `from_preset`, and a Keras
config that carries the preprocessor (its vocabulary), so `.keras` files
load with it.

A subclass provides `text_batches(x, y, sample_weight, batch_size, shuffle,
with_targets, seed, drop_remainder)`, `num_texts(x)`, `default_loss()` and
`default_metrics()` (`weighted_default_metrics = True` when they are to count
only the positions with a weight, as per-word tags do).
"""

import tempfile
import weakref

import keras
import numpy as np
import tensorflow as tf

from tfbert import checkpoint
from tfbert.atomic import check_replaceable
from tfbert.config import BertConfig
from tfbert.config_loader import check_file_to_write, check_int
from tfbert.data.batching import count_batches
from tfbert.data.batching import steps_per_epoch as steps_per_epoch_of
from tfbert.encoder import BertEncoder
from tfbert.models.text_data import check_batch_size, dataset_check_errors, holds_ids
from tfbert.text.preprocessor import BertPreprocessor
from tfbert.text.vocab import load_vocab
from tfbert.train import recipe
from tfbert.train.evaluation import RestoreBestEpoch
from tfbert.train.optimizer import optimizer_for
from tfbert.train.train_config import TrainConfig

# Per model: its traced text functions (`StringsModel.traced`), kept outside the
# model, whose attributes Keras and the SavedModel export walk.
_TRACED = weakref.WeakKeyDictionary()


class StringsModel:
    """Mixin of the strings-in models (see module doc)."""

    weighted_default_metrics = False  # compile(): the default metrics as weighted_metrics
    # save_pretrained / from_pretrained: the head's layer, its weights' prefix in
    # the checkpoint, and the config.json section of the model's settings.
    head_layer = "logits"
    head_prefix = "classifier"
    settings_section = None

    # === Constructors ===

    @classmethod
    def from_preset(cls, preset, vocab_file, lower_case=True, seq_length=128, **kwargs):
        """Random weights of a `BertConfig` preset ("tiny" ... "large") over `vocab_file`."""
        vocab_size = len(load_vocab(vocab_file))  # one line for None, a missing file, ...
        config = BertConfig.from_preset(preset, vocab_size=vocab_size)
        preprocessor = BertPreprocessor(vocab_file=vocab_file, lower_case=lower_case,
                                        seq_length=seq_length,
                                        max_seq_length=config.max_position_embeddings,
                                        max_segments=config.type_vocab_size)
        return cls(BertEncoder(config), preprocessor, **kwargs)

    @staticmethod
    def pretrained_encoder(ckpt):
        """The `BertEncoder` of a read checkpoint, with its weights."""
        return BertEncoder.from_checkpoint(ckpt)

    @staticmethod
    def head_size(head, num_classes, source, what):
        """The outputs of a saved head's `kernel`; a `num_classes` other than
        that is one ValueError."""
        outputs = int(head["kernel"].shape[-1])
        if num_classes is not None and int(num_classes) != outputs:
            raise ValueError(f"{source}: the {what} head has {outputs} outputs, but "
                             f"num_classes={num_classes}; drop num_classes to keep the head.")
        return outputs

    def assign_head(self, head, source, what):
        """Loads a saved head (`kernel`, `bias`) into the `head_layer`."""
        layer = self.get_layer(self.head_layer)
        checkpoint.assign_weights({"kernel": layer.kernel, "bias": layer.bias}, head, source,
                                  what)

    # === The tfbert checkpoint ===

    def settings(self):
        """The checkpoint section `save_pretrained` writes (a `tfbert.checkpoint` dataclass)."""
        raise NotImplementedError

    def save(self, filepath, *args, **kwargs):
        """Keras' `save`, its path checked first (`tfbert.load_model` reads it back)."""
        return super().save(check_file_to_write(filepath, "save", ".keras"), *args, **kwargs)

    def save_pretrained(self, out_dir, source=None):
        """A tfbert checkpoint (encoder, the head's weights under `head_prefix/`,
        vocabulary and `settings()` as the `settings_section`) that the
        class's `from_pretrained` reads; its encoder serves any other task too."""
        check_replaceable(out_dir, "save_pretrained")
        head = self.get_layer(self.head_layer)
        with tempfile.TemporaryDirectory(prefix="tfbert-tokenizer-") as tmp:
            return checkpoint.save_checkpoint(
                out_dir, self.encoder.config, self.encoder.get_named_weights(),
                self.preprocessor.vocab.tokens, self.preprocessor.lower_case,
                head_weights={self.head_prefix: {"kernel": head.kernel.numpy(),
                                                 "bias": head.bias.numpy()}},
                source=source or f"tfbert.{type(self).__name__}",
                **self.preprocessor.checkpoint_tokenizer(tmp),
                **{self.settings_section: self.settings()})

    # === Training: compile() is the recipe ===

    def default_loss(self):
        raise NotImplementedError

    def default_metrics(self):
        raise NotImplementedError

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """`"auto"`: the recipe (see module doc); the optimizer is then built
        by the first `fit`, which knows how many updates it will run."""
        loss = self.default_loss() if loss == "auto" else loss
        if metrics == "auto":
            metrics = self.default_metrics()
            if self.weighted_default_metrics:
                kwargs.setdefault("weighted_metrics", metrics)
                metrics = None
        self._auto_optimizer = optimizer == "auto"
        if self._auto_optimizer:  # a placeholder until fit: Keras needs one to compile
            optimizer = keras.optimizers.AdamW(auto_learning_rate(self))
        _TRACED.pop(self, None)  # traced before: the model may have changed (LoRA)
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def traced(self, key, fn, signature=None):
        """`fn` as a `tf.function` (of `signature`), traced once per model and
        `key`: every dataset's `map` and every `predict` reuse its graph
        (tracing the tokenizer takes seconds). `fn` must not hold the model
        itself (a `weakref`), or the cache keeps it alive."""
        functions = _TRACED.setdefault(self, {})
        if key not in functions:
            functions[key] = tf.function(fn, input_signature=signature, autograph=False,
                                         reduce_retracing=True)
        return functions[key]

    def compile_from_config(self, config):
        # What Keras' own does for a model whose compile() is not overridden.
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def _compile_recipe(self, updates):
        """Compiles again with `recipe_optimizer` for `updates` optimizer steps."""
        optimizer = recipe_optimizer(self, updates)
        # Keras keeps the compile() arguments; only the optimizer changes.
        super().compile(**{**self._compile_config.config, "optimizer": optimizer})
        self._auto_optimizer = False

    def fit(self, x=None, y=None, batch_size=None, epochs=None, validation_data=None,
            sample_weight=None, shuffle=True, steps_per_epoch=None, seed=None, **kwargs):
        """Keras `fit` on raw texts (see module doc). `batch_size` None: the
        recipe's (16 below 10,000 texts, else 32). `epochs` None: on a model
        compiled with the recipe (`compile()`), the recipe's epochs for this
        many texts (`tfbert.train.recipe.resolve`, as `tools/finetune.py`
        chooses them: at least `recipe_min_steps` updates), printed once and
        kept in `history.params["recipe"]`; otherwise 1, Keras' default.
        `validation_data`: `(x, y)` or a dataset, as `x`; on a recipe-compiled
        model the best epoch's weights by `best_epoch_monitor` are restored at
        the end, as the runner keeps its best epoch (`history.params
        ["best_epoch"]`, 1-based), unless `callbacks` hold an `EarlyStopping`
        or `ModelCheckpoint` of the user's. With `shuffle`, texts are batched
        as the fine-tuning tasks batch them: reshuffled each epoch with `seed`
        (None: drawn from NumPy's generator, which `keras.utils.set_random_seed`
        seeds), in batches of similar length."""
        # Checked here, before the recipe's TrainConfig would name its own fields.
        check_int(epochs, "epochs", 1, allow_none=True)
        check_int(steps_per_epoch, "steps_per_epoch", 1, allow_none=True)
        check_int(seed, "seed", 0, allow_none=True)
        batch_size = check_batch_size(batch_size, None)
        if holds_ids(x):  # already preprocessed (the fine-tuning tasks' datasets)
            return super().fit(x, y, batch_size=batch_size, epochs=epochs or 1,
                               validation_data=validation_data, sample_weight=sample_weight,
                               shuffle=shuffle, steps_per_epoch=steps_per_epoch, **kwargs)
        if kwargs.get("validation_split"):
            raise ValueError("validation_split is not supported on texts: pass "
                             "validation_data=(texts, labels).")
        n = None if isinstance(x, tf.data.Dataset) else self.num_texts(x)
        recipe_compiled = getattr(self, "_auto_optimizer", False)  # compile() with no optimizer
        callbacks = list(kwargs.pop("callbacks", None) or [])
        keeper = None
        if recipe_compiled and validation_data is not None and not any(
                isinstance(c, (keras.callbacks.EarlyStopping, keras.callbacks.ModelCheckpoint))
                for c in callbacks):
            keeper = RestoreBestEpoch(*self.best_epoch_monitor())
            callbacks.append(keeper)
        chosen = None
        if epochs is None:
            if recipe_compiled:
                chosen = self._recipe_epochs(n, batch_size, steps_per_epoch)
            epochs = chosen["epochs"] if chosen else 1
            if chosen and kwargs.get("verbose", "auto") != 0:
                print(f"{type(self).__name__}.fit: the recipe's " + ", ".join(
                    f"{k} {v}" for k, v in chosen["notes"].items()), flush=True)
        if batch_size is None and n is not None:
            batch_size = recipe_batch_size(n)
        shuffle = shuffle and n is not None  # a dataset comes batched as the user wants
        # Replicas need equal shares: the last partial batch goes under several.
        drop_remainder = shuffle and self.distribute_strategy.num_replicas_in_sync > 1
        if seed is None:
            seed = int(np.random.randint(2**31 - 1))
        data = self.text_batches(x, y, sample_weight, batch_size, shuffle=shuffle, seed=seed,
                                 drop_remainder=drop_remainder)
        if shuffle and steps_per_epoch is None:  # the training stream repeats without end
            steps_per_epoch = steps_per_epoch_of(n, batch_size, drop_remainder)
        if validation_data is not None:
            validation_data = self.text_batches(*_validation_parts(validation_data),
                                                batch_size=batch_size)
        with dataset_check_errors(self.dataset_checks()):  # counting reads the data too
            if recipe_compiled:
                steps = steps_per_epoch or count_batches(data)
                self._compile_recipe(max(1, steps * epochs))
            # shuffle=False: the text batches are shuffled above, before tokenization.
            history = super().fit(data, epochs=epochs, validation_data=validation_data,
                                  steps_per_epoch=steps_per_epoch, shuffle=False,
                                  callbacks=callbacks, **kwargs)
        if chosen:
            history.params["recipe"] = chosen["notes"]
        if keeper is not None and keeper.best_epoch is not None:
            history.params["best_epoch"] = keeper.best_epoch + 1
            if kwargs.get("verbose", "auto") != 0:
                print(f"{type(self).__name__}.fit: kept epoch {keeper.best_epoch + 1} of "
                      f"{epochs} (best {keeper.monitor})", flush=True)
        return history

    def best_epoch_monitor(self):
        """`(Keras log, "max" or "min")` that chooses the epoch `fit` keeps."""
        return "val_loss", "min"

    # The recipe's step floor for `fit` without `epochs` (the fine-tuning
    # tasks' `min_train_steps`: question answering's is higher).
    recipe_min_steps = recipe.DEFAULT_MIN_STEPS

    def _recipe_epochs(self, n, batch_size, steps_per_epoch):
        """`{"epochs", "notes"}`: the recipe's epochs for `n` examples, or None
        when `x` is a dataset (its length is the user's)."""
        if n is None:
            return None
        train, notes = recipe.resolve(
            TrainConfig(batch_size=batch_size, steps_per_epoch=steps_per_epoch),
            n, self.encoder.config, self.recipe_min_steps)
        return {"epochs": train.epochs, "notes": notes}

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        if holds_ids(x):
            return super().evaluate(x, y, batch_size=batch_size, sample_weight=sample_weight,
                                    **kwargs)
        with dataset_check_errors(self.dataset_checks()):
            return super().evaluate(self.text_batches(x, y, sample_weight, batch_size),
                                    **kwargs)

    def dataset_checks(self):
        """`{message: one line}`: the graph checks of a user's `tf.data.Dataset`
        and the line each failure becomes (`text_data.dataset_check_errors`)."""
        return {}

    # === Keras plumbing ===

    def get_config(self):
        return {**super().get_config(),
                "preprocessor": keras.layers.serialize(self.preprocessor)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["preprocessor"] = keras.layers.deserialize(config["preprocessor"])
        return super().from_config(config)


def auto_learning_rate(model):
    return recipe.auto_learning_rate(model.encoder.config.hidden_size)


def recipe_optimizer(model, updates):
    """The recipe's AdamW (`TrainConfig`'s defaults, the learning rate by the
    model's size) for `updates` optimizer steps, under the model's strategy."""
    with model.distribute_strategy.scope():
        return optimizer_for(TrainConfig(learning_rate=auto_learning_rate(model)), updates)


def recipe_batch_size(num_examples):
    """The recipe's batch size: 16 below `recipe.LARGE_DATA` examples, else 32."""
    return 16 if num_examples < recipe.LARGE_DATA else 32


def _validation_parts(validation_data):
    if isinstance(validation_data, tf.data.Dataset):
        return validation_data, None, None
    if not isinstance(validation_data, (tuple, list)) or len(validation_data) not in (2, 3):
        raise ValueError("validation_data must be (texts, labels[, weights]) or a "
                         "tf.data.Dataset of (texts, labels).")
    return tuple(validation_data) + (None,) * (3 - len(validation_data))
