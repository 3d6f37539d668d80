"""`TextTask`: what the tasks that read labelled texts share.

Classification (single-label, multi-label, regression, windows over long
texts) and the cross-encoder read one or two string columns, tokenize them in
`tf.data` and train in batches of similar length. The plumbing is here, once:
the string inputs (`text_inputs`, the exported `serving_default`'s names),
`encode` (the three id tensors of a batch, cut to a bucket of its longest
text when `config.bucketing` is on) and `batch` (the training stream,
`tfbert.data.batching.training_batches`). A subclass adds its data, model,
scores and outputs; its config has a `bucketing` field.
"""

import tensorflow as tf

from tfbert.data.batching import training_batches
from tfbert.tasks.base import Task
from tfbert.text.packer import trim_to_bucket


class TextTask(Task):
    """A `Task` over one or two string columns (see module doc)."""

    def encode(self, texts):
        """The three int32 tensors from a dict of string tensors named
        `text_inputs`, cut to the batch's bucket width when `config.bucketing` is on."""
        inputs = self.preprocessor([texts[n] for n in self.text_inputs])
        return trim_to_bucket(inputs) if self.config.bucketing else inputs

    def batch(self, ds, batch_size, num_examples, training=False, seed=0):
        """Batches of `(texts, targets)` examples. Training: each epoch one
        shuffled pass and, with `config.bucketing`, batches of similar length
        (sorted windows of at most 50 batches), so `encode` cuts most of them
        to a narrow bucket."""
        if not training:
            return ds.batch(batch_size)

        def num_tokens(texts, targets):  # byte lengths group far worse (README)
            tokenize = self.preprocessor.tokenizer.tokenize_flat
            return tf.add_n([tokenize(texts[n]).row_lengths() for n in self.text_inputs])

        return training_batches(ds, num_examples, batch_size, seed, num_tokens,
                                self.drop_remainder, self.config.bucketing)
