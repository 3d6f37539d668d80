"""What both checkpoint converters share: the target weight shapes, rename
rules, and the strict "every source weight consumed, every target weight
assigned" check.

A converter describes its source as a list of `Rule`s (one source tensor ->
one tfbert tensor, with the source shape the config implies and a NumPy
transform) and hands them to `convert_weights` together with a reader of the
source file. Nothing is half-loaded: all missing, unexpected and mis-shaped
weights are collected and reported in one error before any tensor is read.
"""

import collections
import os

import numpy as np

from tfbert import checkpoint, config_loader

# One source tensor -> one tfbert tensor.
#   target: "encoder/<name>", "mlm/<name>" or "nsp/<name>" (tfbert.checkpoint keys)
#   source: the name in the source checkpoint
#   source_shape: the shape the config implies for the source tensor
#   transform: NumPy function from the source layout to the tfbert layout
#   group: None for required weights; "mlm" / "nsp" for optional heads, which
#       must be either complete or absent
Rule = collections.namedtuple(
    "Rule", ["target", "source", "source_shape", "transform", "group"], defaults=(None,)
)


def identity(x):
    return x


def encoder_weight_shapes(config):
    """`{name: shape}` of every `BertEncoder` weight for `config`, named like
    `BertEncoder.get_named_weights()` (tests check the two agree).

    Example:
    >>> from tfbert import BertConfig
    >>> shapes = encoder_weight_shapes(BertConfig.from_preset("tiny"))
    >>> shapes["transformer_layer_0/self_attention/query/kernel"]
    (128, 2, 64)
    """
    h, heads, inter = config.hidden_size, config.num_heads, config.intermediate_size
    head_dim = h // heads
    e = config.embedding_width
    shapes = {
        "embeddings/word_embeddings/embeddings": (config.vocab_size, e),
        "embeddings/position_embeddings": (config.max_position_embeddings, e),
        "embeddings/token_type_embeddings/embeddings": (config.type_vocab_size, e),
        "embeddings/layer_norm/gamma": (e,),
        "embeddings/layer_norm/beta": (e,),
    }
    if config.factorized_embeddings:
        shapes["embeddings/embedding_projection/kernel"] = (e, h)
        shapes["embeddings/embedding_projection/bias"] = (h,)
    for i in range(1 if config.share_layers else config.num_layers):
        layer = f"transformer_layer_{i}"
        for proj in ("query", "key", "value"):
            shapes[f"{layer}/self_attention/{proj}/kernel"] = (h, heads, head_dim)
            shapes[f"{layer}/self_attention/{proj}/bias"] = (heads, head_dim)
        shapes.update({
            f"{layer}/self_attention/attention_output/kernel": (heads, head_dim, h),
            f"{layer}/self_attention/attention_output/bias": (h,),
            f"{layer}/attention_layer_norm/gamma": (h,),
            f"{layer}/attention_layer_norm/beta": (h,),
            f"{layer}/intermediate_dense/kernel": (h, inter),
            f"{layer}/intermediate_dense/bias": (inter,),
            f"{layer}/output_dense/kernel": (inter, h),
            f"{layer}/output_dense/bias": (h,),
            f"{layer}/output_layer_norm/gamma": (h,),
            f"{layer}/output_layer_norm/beta": (h,),
        })
    if config.norm_first:
        shapes["final_layer_norm/gamma"] = (h,)
        shapes["final_layer_norm/beta"] = (h,)
    shapes["pooler/kernel"] = (h, h)
    shapes["pooler/bias"] = (h,)
    return shapes


def refuse_pre_layer_norm(config):
    """Google, Hugging Face and ALBERT checkpoints are post-LayerNorm: their
    weights in pre-LN blocks would load without error and compute nonsense."""
    if config.norm_first:
        raise ValueError("BertConfig.norm_first=True (pre-LayerNorm) has no counterpart in "
                         "Google, Hugging Face or ALBERT checkpoints, which are post-LayerNorm; "
                         "convert with norm_first=False.")


def head_weight_shapes(config):
    """`{"mlm/<name>" | "nsp/<name>": shape}`: the pretraining head contract
    of `tfbert.checkpoint` (the MLM decoder is tied to the word embeddings, so
    its transform maps H -> E, the embedding width, as in ALBERT)."""
    h, e = config.hidden_size, config.embedding_width
    return {
        "mlm/transform/kernel": (h, e),
        "mlm/transform/bias": (e,),
        "mlm/layer_norm/gamma": (e,),
        "mlm/layer_norm/beta": (e,),
        "mlm/output_bias": (config.vocab_size,),
        "nsp/kernel": (h, 2),
        "nsp/bias": (2,),
    }


# tfbert BertConfig field -> (source config key, default when absent; None = required).
# The key names are google-research/bert's, which transformers kept; each
# converter adds its own defaults on top.
BERT_CONFIG_KEYS = {
    "vocab_size": ("vocab_size", None),
    "hidden_size": ("hidden_size", None),
    "num_layers": ("num_hidden_layers", None),
    "num_heads": ("num_attention_heads", None),
    "intermediate_size": ("intermediate_size", None),
    "dropout_rate": ("hidden_dropout_prob", 0.1),
    "attention_dropout_rate": ("attention_probs_dropout_prob", 0.1),
    "max_position_embeddings": ("max_position_embeddings", 512),
    "initializer_range": ("initializer_range", 0.02),
}


def config_values(source_config, keys, activations, source):
    """`{BertConfig field: value}` read from a source config dict by `keys`
    (see `BERT_CONFIG_KEYS`), with `hidden_act` mapped through `activations`.

    Example:
    >>> config_values({"vocab_size": 9, "hidden_act": "gelu"}, {"vocab_size": ("vocab_size", None)},
    ...               {"gelu": "gelu_tanh"}, "bert_config.json")
    {'vocab_size': 9, 'hidden_act': 'gelu_tanh'}
    """
    if not isinstance(source_config, dict):
        raise ValueError(f"{source}: expected a JSON object.")
    values = {}
    for field, (key, default) in keys.items():
        if key not in source_config and default is None:
            raise ValueError(f"{source}: required key {key!r} is missing.")
        values[field] = source_config.get(key, default)
    act = source_config.get("hidden_act", "gelu")
    if not isinstance(act, str) or act not in activations:
        raise ValueError(f"{source}: hidden_act {act!r} is not supported; tfbert converts "
                         f"{sorted(activations)}.")
    values["hidden_act"] = activations[act]
    return values


def huggingface_bert_names(prefix, names=()):
    """`{tfbert target template: transformers name}` of a BERT-layout model
    (`bert_rules`' `names`): `prefix` is "" (`BertModel`) or the model's base
    prefix ("bert.", "roberta."); `names`: the file's tensor names (which MLM
    bias name it uses)."""
    p = prefix
    layer = f"{p}encoder.layer.{{i}}"
    return {
        "encoder/embeddings/word_embeddings/embeddings": f"{p}embeddings.word_embeddings.weight",
        "encoder/embeddings/position_embeddings": f"{p}embeddings.position_embeddings.weight",
        "encoder/embeddings/token_type_embeddings/embeddings":
            f"{p}embeddings.token_type_embeddings.weight",
        "encoder/embeddings/layer_norm": f"{p}embeddings.LayerNorm",
        **{f"{LAYER}/self_attention/{proj}/{w}":
           f"{layer}.attention.self.{proj}.{'weight' if w == 'kernel' else 'bias'}"
           for proj in ("query", "key", "value") for w in ("kernel", "bias")},
        f"{LAYER}/self_attention/attention_output/kernel": f"{layer}.attention.output.dense.weight",
        f"{LAYER}/self_attention/attention_output/bias": f"{layer}.attention.output.dense.bias",
        f"{LAYER}/attention_layer_norm": f"{layer}.attention.output.LayerNorm",
        f"{LAYER}/intermediate_dense/kernel": f"{layer}.intermediate.dense.weight",
        f"{LAYER}/intermediate_dense/bias": f"{layer}.intermediate.dense.bias",
        f"{LAYER}/output_dense/kernel": f"{layer}.output.dense.weight",
        f"{LAYER}/output_dense/bias": f"{layer}.output.dense.bias",
        f"{LAYER}/output_layer_norm": f"{layer}.output.LayerNorm",
        "encoder/pooler/kernel": f"{p}pooler.dense.weight",
        "encoder/pooler/bias": f"{p}pooler.dense.bias",
        # Pretraining heads (BertForPreTraining / BertForMaskedLM).
        "mlm/transform/kernel": "cls.predictions.transform.dense.weight",
        "mlm/transform/bias": "cls.predictions.transform.dense.bias",
        "mlm/layer_norm": "cls.predictions.transform.LayerNorm",
        "mlm/output_bias": ("cls.predictions.bias" if "cls.predictions.bias" in names
                            or "cls.predictions.decoder.bias" not in names
                            else "cls.predictions.decoder.bias"),
        "nsp/kernel": "cls.seq_relationship.weight",
        "nsp/bias": "cls.seq_relationship.bias",
    }


def bert_rules(config, names, layer_norm, out_in):
    """The `Rule`s of a BERT checkpoint (encoder, pooler, MLM and NSP heads)
    from its naming scheme; the Google and Hugging Face converters differ
    only in `names`, `layer_norm` and the kernel layout.

    Args:
        names: `{tfbert target: source name}`; targets of transformer layers
            contain `{i}` (formatted with the layer index in both), layer
            norms map to the source prefix of their scale and shift.
        layer_norm: `fn(source prefix) -> (scale name, shift name)`.
        out_in: dense kernels are stored `[out, in]` (PyTorch `nn.Linear`)
            rather than `[in, out]` (TensorFlow), so they are transposed.

    Example:
    >>> from tfbert import BertConfig
    >>> rules = bert_rules(BertConfig.from_preset("tiny", num_layers=1),
    ...                    {k: k.replace("encoder/", "src.") for k in BERT_TARGETS},
    ...                    lambda p: (p + ".w", p + ".b"), out_in=True)
    >>> [r.source for r in rules if "query" in r.target]
    ['src.transformer_layer_0/self_attention/query/kernel', 'src.transformer_layer_0/self_attention/query/bias']
    """
    refuse_pre_layer_norm(config)
    h, heads, inter = config.hidden_size, config.num_heads, config.intermediate_size
    head_dim = h // heads
    kernel = (lambda w: w.T) if out_in else identity

    def dense(n_in, n_out):  # source shape of a dense kernel, and its transform
        return ((n_out, n_in) if out_in else (n_in, n_out)), kernel

    shapes = {  # target template -> (source shape, transform); None: a layer norm
        "encoder/embeddings/word_embeddings/embeddings": ((config.vocab_size, h), identity),
        "encoder/embeddings/position_embeddings": ((config.max_position_embeddings, h), identity),
        "encoder/embeddings/token_type_embeddings/embeddings":
            ((config.type_vocab_size, h), identity),
        "encoder/embeddings/layer_norm": None,
    }
    for proj in ("query", "key", "value"):
        shapes[f"{LAYER}/self_attention/{proj}/kernel"] = (
            dense(h, h)[0], lambda w: kernel(w).reshape(h, heads, head_dim))
        shapes[f"{LAYER}/self_attention/{proj}/bias"] = (
            (h,), lambda b: b.reshape(heads, head_dim))
    shapes.update({
        f"{LAYER}/self_attention/attention_output/kernel":
            (dense(h, h)[0], lambda w: kernel(w).reshape(heads, head_dim, h)),
        f"{LAYER}/self_attention/attention_output/bias": ((h,), identity),
        f"{LAYER}/attention_layer_norm": None,
        f"{LAYER}/intermediate_dense/kernel": dense(h, inter),
        f"{LAYER}/intermediate_dense/bias": ((inter,), identity),
        f"{LAYER}/output_dense/kernel": dense(inter, h),
        f"{LAYER}/output_dense/bias": ((h,), identity),
        f"{LAYER}/output_layer_norm": None,
        "encoder/pooler/kernel": dense(h, h),
        "encoder/pooler/bias": ((h,), identity),
        "mlm/transform/kernel": dense(h, h),
        "mlm/transform/bias": ((h,), identity),
        "mlm/layer_norm": None,
        "mlm/output_bias": ((config.vocab_size,), identity),
        # Both sources store the NSP kernel as [2, hidden].
        "nsp/kernel": ((2, h), lambda w: w.T),
        "nsp/bias": ((2,), identity),
    })

    rules = []
    for template, spec in shapes.items():
        group = template.split("/")[0] if template.split("/")[0] in ("mlm", "nsp") else None
        for i in range(config.num_layers) if "{i}" in template else [0]:
            target, source = template.format(i=i), names[template].format(i=i)
            if spec is None:
                scale, shift = layer_norm(source)
                rules += [Rule(f"{target}/gamma", scale, (h,), identity, group),
                          Rule(f"{target}/beta", shift, (h,), identity, group)]
            else:
                rules.append(Rule(target, source, spec[0], spec[1], group))
    return rules


LAYER = "encoder/transformer_layer_{i}"
# Every target template `bert_rules` asks `names` for.
BERT_TARGETS = (
    "encoder/embeddings/word_embeddings/embeddings", "encoder/embeddings/position_embeddings",
    "encoder/embeddings/token_type_embeddings/embeddings", "encoder/embeddings/layer_norm",
    *(f"{LAYER}/self_attention/{p}/{w}" for p in ("query", "key", "value")
      for w in ("kernel", "bias")),
    f"{LAYER}/self_attention/attention_output/kernel",
    f"{LAYER}/self_attention/attention_output/bias", f"{LAYER}/attention_layer_norm",
    f"{LAYER}/intermediate_dense/kernel", f"{LAYER}/intermediate_dense/bias",
    f"{LAYER}/output_dense/kernel", f"{LAYER}/output_dense/bias", f"{LAYER}/output_layer_norm",
    "encoder/pooler/kernel", "encoder/pooler/bias", "mlm/transform/kernel", "mlm/transform/bias",
    "mlm/layer_norm", "mlm/output_bias", "nsp/kernel", "nsp/bias",
)


def convert_weights(reader, rules, config, skip=(), tied=None, label="checkpoint"):
    """Applies `rules` to the tensors of `reader`; returns `{target: float32 array}`.

    `reader` has `names()`, `shape(name)` and `read(name)`. `skip`: source
    names known to hold no model weight (buffers, optimizer slots); they count
    as consumed. `tied`: `{source name: other source name}` for redundant
    copies (a tied MLM decoder); each must equal the other exactly, else it is
    an error, and then counts as consumed. Optional head groups are converted
    when any of their source weights is present, and then must be complete.
    Raises ValueError naming the missing, unexpected and mis-shaped weights
    (long lists are cut to their first entries and a count).
    """
    tied = dict(tied or {})
    names = set(reader.names())
    present_groups = {r.group for r in rules if r.group and r.source in names}
    active = [r for r in rules if r.group is None or r.group in present_groups]

    problems = []
    missing = [r.source for r in active if r.source not in names]
    if missing:
        problems.append(f"missing weights {first_items(missing)}")
    used = {r.source for r in active} | (set(skip) & names) | (set(tied) & names)
    extra = sorted(names - used)
    if extra:
        problems.append(f"unexpected weights {first_items(extra)}")
    mismatched = [
        f"weight {r.source!r} has shape {tuple(reader.shape(r.source))}, but the config "
        f"implies {tuple(r.source_shape)} (for tfbert {r.target!r})"
        for r in active
        if r.source in names and tuple(reader.shape(r.source)) != tuple(r.source_shape)
    ]
    problems += mismatched[:5]
    if len(mismatched) > 5:
        problems.append(f"and {len(mismatched) - 5} more mis-shaped weights")
    if problems:
        raise ValueError(f"{label} does not match its config: " + "; ".join(problems))

    for name, other in sorted(tied.items()):
        if name in names and not np.array_equal(reader.read(name), reader.read(other)):
            raise ValueError(
                f"{label}: weight {name!r} differs from {other!r}; tfbert ties them, "
                "so an untied checkpoint cannot be converted exactly."
            )

    expected = {f"encoder/{k}": v for k, v in encoder_weight_shapes(config).items()}
    expected.update(head_weight_shapes(config))
    weights = {}
    for r in active:
        value = np.asarray(reader.read(r.source))
        if not np.issubdtype(value.dtype, np.floating):
            raise ValueError(f"{label}: weight {r.source!r} has dtype {value.dtype}, not float.")
        if not np.all(np.isfinite(value)):
            raise ValueError(f"{label}: weight {r.source!r} contains NaN or Inf.")
        value = np.ascontiguousarray(r.transform(value.astype(np.float32)))
        # A wrong transform is a bug in this module, not in the user's input.
        assert value.shape == expected[r.target], (r.target, value.shape)
        weights[r.target] = value
    encoder = {k for k in weights if k.startswith("encoder/")}
    absent = {r.target for r in rules if r.group and r.group not in present_groups}
    assert encoder == {k for k in expected if k.startswith("encoder/")} - absent
    return weights


def classifier_head(reader, config, label, weight="classifier.weight",
                    bias="classifier.bias"):
    """`{"classifier/kernel": [hidden, labels], "classifier/bias": [labels]}`
    from a sequence-classification head's `weight` / `bias` (BERT's
    `classifier.weight`, RoBERTa's `classifier.out_proj.weight`)."""
    names = set(reader.names())
    if not {weight, bias} <= names:
        raise ValueError(f"{label}: {weight} and {bias} must both be present.")
    shape = tuple(reader.shape(weight))
    if len(shape) != 2 or shape[1] != config.hidden_size or \
            tuple(reader.shape(bias)) != shape[:1]:
        raise ValueError(f"{label}: {weight} has shape {shape} and {bias} "
                         f"{tuple(reader.shape(bias))}; expected [labels, "
                         f"{config.hidden_size}] and [labels].")
    head = {}
    for target, source in (("kernel", weight), ("bias", bias)):
        value = np.asarray(reader.read(source), np.float32)
        if not np.all(np.isfinite(value)):
            raise ValueError(f"{label}: weight {source!r} contains NaN or Inf.")
        head[f"classifier/{target}"] = np.ascontiguousarray(value.T if target == "kernel" else value)
    return head


def first_items(names, limit=10):
    """A list for an error message: all of it, or its first `limit` and a count."""
    if len(names) <= limit:
        return str(names)
    return f"{names[:limit]} and {len(names) - limit} more"


def save_converted(out_dir, config, weights, vocab_file, lower_case, source, sentence=None,
                   more_heads=None, huggingface=None, tokenizer="wordpiece",
                   tokenizer_files=None):
    """The tail every converter shares: the vocabulary checked against the
    config, the weights split into encoder and heads (plus `more_heads`), and
    the tfbert checkpoint written atomically; returns `out_dir`. `huggingface`,
    `tokenizer`, `tokenizer_files`: as `checkpoint.save_checkpoint` takes them."""
    check_vocab(vocab_file, config.vocab_size)
    encoder_weights, head_weights = checkpoint.split_heads(weights)
    head_weights.update(more_heads or {})
    return checkpoint.save_checkpoint(out_dir, config, encoder_weights, vocab_file, lower_case,
                                      head_weights=head_weights, source=source,
                                      sentence=sentence, huggingface=huggingface,
                                      tokenizer=tokenizer, tokenizer_files=tokenizer_files)


def check_output_dir(src_dir, out_dir):
    """Refuses an `out_dir` whose atomic replacement would destroy data: the
    input itself (or a folder holding it), or an existing non-empty directory
    that is not a tfbert checkpoint."""
    src = os.path.realpath(config_loader.check_path(src_dir, "input directory"))
    out = os.path.realpath(config_loader.check_path(out_dir, "output_dir"))
    if out == src or src.startswith(out + os.sep):
        raise ValueError(f"output_dir {out_dir} would replace the input {src_dir}; "
                         "choose another output directory.")
    if os.path.exists(out):
        if not os.path.isdir(out):
            raise ValueError(f"output_dir {out_dir} exists and is not a directory.")
        config = os.path.join(out, "config.json")
        is_checkpoint = os.path.isfile(config) and _is_tfbert_config(config)
        if os.listdir(out) and not is_checkpoint:
            raise ValueError(f"output_dir {out_dir} exists and is not a tfbert checkpoint; "
                             "refusing to replace it (remove it or choose another).")


def _is_tfbert_config(path):
    try:
        return read_json(path).get("format") == checkpoint.FORMAT
    except (ValueError, AttributeError):
        return False


def require_file(path, what):
    """`path`, or one line naming it and what it should hold: not a path
    (TypeError), missing (FileNotFoundError), a directory (ValueError)."""
    try:
        return config_loader.check_file(path, what)
    except FileNotFoundError:  # the converters' wording ("<what> not found: <path>")
        raise FileNotFoundError(f"{what} not found: {path}") from None


def check_vocab(vocab_file, vocab_size):
    """The vocabulary must have exactly one token per embedding row."""
    require_file(vocab_file, "Vocabulary file (vocab.txt)")
    tokens = config_loader.vocab_tokens(vocab_file)
    num_tokens = len(tokens)
    if num_tokens != vocab_size:
        raise ValueError(
            f"{vocab_file} has {num_tokens} tokens, but the model has "
            f"{vocab_size} word embedding rows (vocab_size); they must match."
        )


def read_json(path, what="JSON file"):
    """`config_loader.read_json` with the converters' "<what> not found" wording."""
    return config_loader.read_json(require_file(path, what), what)


def read_json_object(path, what="JSON file"):
    """`config_loader.read_json_object` with the converters' "not found" wording."""
    return config_loader.read_json_object(require_file(path, what), what)
