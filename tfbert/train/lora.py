"""LoRA adapters on the encoder (`train.lora_rank`), with Keras' built-in LoRA.

`enable_lora(model, rank, targets)` freezes every encoder weight and calls
Keras' `layer.enable_lora(rank)` on the chosen projections of every
transformer block (`train.lora_targets`; default the attention query and
value projections, as the LoRA paper, Hu et al. 2021, section 7.1). Each
adapted kernel W becomes W + A @ B (B starts at zero: training starts from
the pretrained model); the task's head and the adapters train.

Keras' LoRA on an `EinsumDense` factors the kernel's last axis only: the
attention projections' kernels are `[hidden, heads, head_size]`, so A is
`[hidden, heads, rank]` and B `[rank, head_size]` (per head rank `rank`;
PEFT's LoRA on a `[hidden, hidden]` Linear has `2 * hidden * rank`
parameters). `rank` may not exceed the smaller side of that factorization
(e.g. head_size for the attention projections).

Keras' saving merges A @ B into the kernel and zeroes A and B when it loads
(`EinsumDense.save_own_variables`/`load_own_variables`): a restored backup
would then train with A = B = 0 (no gradient reaches either). So the adapted
layers save and load their variables as they are (`keras.layers.Layer`'s
own methods): a resumed run and the kept best epoch hold the real adapters.

`adapters_npz(model)` holds the trainable weights (adapters and head) and
the head's non-trainable state alone (a small `.npz`; `tfbert.tasks.runner`
writes it as `lora_adapters.npz`); `load_adapters` puts them back into a
model built the same way.
`merge_lora(model)` folds A @ B into each kernel and turns LoRA off, so an
export has no extra ops (`tfbert.tasks.runner.export_task` calls it).

Example:
>>> from tfbert import BertConfig, BertEncoder
>>> from tfbert.models.classifier import BertClassifier
>>> model = BertClassifier(BertEncoder(BertConfig.from_preset("tiny", vocab_size=100)), 2)
>>> adapted = enable_lora(model, rank=4)
>>> len(adapted), sorted({w.path.split("/")[-2:][0] for w in model.trainable_weights})
(4, ['logits', 'query', 'value'])
"""

import io

import keras
import numpy as np

from tfbert.train.train_config import LORA_TARGETS

# Names for `train.lora_targets` -> the layer of a `TransformerBlock`.
TARGETS = {
    "query": lambda block: block.self_attention._query_dense,
    "key": lambda block: block.self_attention._key_dense,
    "value": lambda block: block.self_attention._value_dense,
    "attention_output": lambda block: block.self_attention._output_dense,
    "intermediate": lambda block: block.intermediate_dense,
    "output": lambda block: block.output_dense,
}
DEFAULT_TARGETS = ("query", "value")
assert tuple(TARGETS) == LORA_TARGETS


def _blocks(encoder):
    seen, blocks = set(), []
    for block in encoder.transformer_layers:  # ALBERT shares one block
        if id(block) not in seen:
            seen.add(id(block))
            blocks.append(block)
    return blocks


def max_rank(layer):
    """The largest LoRA rank of `layer`'s kernel as Keras factors it
    (`kernel.shape[:-1] + (rank,)` times `(rank, kernel.shape[-1])`)."""
    shape = tuple(layer.kernel.shape)
    return min(int(np.prod(shape[:-1])), int(shape[-1]))


def enable_lora(model, rank, targets=DEFAULT_TARGETS):
    """Freezes `model.encoder` and adds rank-`rank` adapters to `targets` in
    every transformer block; returns the adapted layers. Errors name
    `train.lora_rank` / `train.lora_targets`."""
    unknown = sorted(set(targets) - set(TARGETS))
    if unknown or not targets:
        raise ValueError(f"train.lora_targets: {unknown or list(targets)} is not a list of "
                         f"{list(TARGETS)}.")
    encoder = model.encoder
    layers = [TARGETS[t](block) for block in _blocks(encoder) for t in targets]
    # A layer pruned to no heads has empty projections: nothing to adapt.
    layers = [layer for layer in layers if np.prod(layer.kernel.shape)]
    largest = min(max_rank(layer) for layer in layers)
    if not 1 <= rank <= largest:
        raise ValueError(f"train.lora_rank: {rank} is not in [1, {largest}] (the largest rank "
                         f"the {'/'.join(targets)} projections take: kernel "
                         f"{tuple(layers[0].kernel.shape)}).")
    for variable in encoder.weights:
        variable.trainable = False
    for layer in layers:
        layer.enable_lora(rank)
        # Save and load the variables as they are (see the module docstring).
        layer.save_own_variables = _plain_save(layer)
        layer.load_own_variables = _plain_load(layer)
    return layers


def _plain_save(layer):
    return lambda store: keras.layers.Layer.save_own_variables(layer, store)


def _plain_load(layer):
    return lambda store: keras.layers.Layer.load_own_variables(layer, store)


def lora_layers(model):
    """The layers of `model.encoder` with LoRA on."""
    encoder = getattr(model, "encoder", None)
    if encoder is None:
        return []
    return [layer for block in _blocks(encoder) for layer in map(lambda t: t(block),
                                                                  TARGETS.values())
            if getattr(layer, "lora_enabled", False)]


def _adapter_variables(model):
    encoder_ids = {id(v) for v in model.encoder.weights}
    return [v for v in model.weights
            if v.trainable or id(v) not in encoder_ids]


def adapters_npz(model):
    """The adapters, the head and its state (not the frozen encoder) as the
    bytes of an `.npz` file keyed by variable path."""
    values = {v.path: np.asarray(v.numpy()) for v in _adapter_variables(model)}
    buffer = io.BytesIO()
    np.savez(buffer, **values)
    return buffer.getvalue()


def load_adapters(model, path):
    """Loads an `adapters_npz` file into `model` (LoRA enabled the same way)."""
    with np.load(path) as data:
        saved = dict(data)
    variables = {v.path: v for v in _adapter_variables(model)}
    if sorted(saved) != sorted(variables):
        raise ValueError(f"{path}: the adapters do not fit this model: saved "
                         f"{sorted(set(saved) - set(variables))[:3]}, missing "
                         f"{sorted(set(variables) - set(saved))[:3]}.")
    for name, value in saved.items():
        variables[name].assign(value)


def merge_lora(model):
    """Folds each adapter into its kernel (W + A @ B, scaled as Keras does)
    and turns LoRA off: same outputs, no adapter ops. Returns the merged layers."""
    merged = lora_layers(model)
    for layer in merged:
        kernel = keras.ops.convert_to_numpy(layer.kernel)  # W + alpha/rank * A @ B
        layer.lora_enabled = False
        layer._kernel.assign(kernel)
    return merged
