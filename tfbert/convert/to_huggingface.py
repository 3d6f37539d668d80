"""A tfbert checkpoint -> a Hugging Face directory that transformers' `Auto*`
classes (and, with a `sentence` section, `SentenceTransformer`) load as it is.

The way back runs each converter's own rules backwards: every rule is a
transpose, reshape or slice of one source tensor, so pushing the indices of
the source through it says where each element goes, and the checkpoint's
tensor is put back element for element (bit for bit; a Hugging Face ->
tfbert -> Hugging Face round trip gives the same tensors).

The family is the checkpoint's `huggingface.model_type` (written by
`from_huggingface`); without that section, ALBERT when the embeddings are
factorized, else BERT. The heads choose the class (`architectures`):

| heads in the checkpoint         | transformers class                  |
|---------------------------------|-------------------------------------|
| none                            | `<Family>Model`                     |
| `mlm`                           | `<Family>ForMaskedLM`               |
| `mlm` + `nsp`                   | `BertForPreTraining`, `AlbertForPreTraining` (SOP) |
| `classifier` (cls pooling)      | `<Family>ForSequenceClassification` |
| `token_classifier`              | `<Family>ForTokenClassification`    |
| `question_answerer`             | `<Family>ForQuestionAnswering`      |

Named rules for what the target lacks or holds extra:
  - `roberta_positions`: RoBERTa's position rows before the offset come back
    from `roberta_position_rows/*` (zeros when a checkpoint lost them: those
    rows are read only at padding positions).
  - `roberta_classifier`: RoBERTa's sequence head is `classifier.dense` (the
    pooler) + `classifier.out_proj` (the classifier).
  - `distilbert_token_types`: DistilBERT has none; its two rows must be
    equal, and row 0 is added to the position table (exact: zero after a
    conversion).
  - `dropped_pooler`: DistilBERT has no pooler, and a pooler made fresh at
    conversion (`huggingface.fresh_pooler`) was never trained: neither is
    written. Any other pooler is written (also beside heads whose class has
    none, so `AutoModel` on the directory gives the same pooled output).
  - `sentence`: a checkpoint's sentence section (and `sentence_dense/*`)
    becomes a sentence-transformers directory: `modules.json`,
    `sentence_bert_config.json`, `1_Pooling/config.json`, `2_Dense/` and
    `N_Normalize/` when normalized.

Refused, one line each: heads transformers has no class for (the span
boundary head, a next-sentence head without MLM, two task heads at once, a
classifier over mean or max pooling, a DistilBERT sequence classifier, whose
pre-classifier is a ReLU layer, not a tanh pooler), pre-LayerNorm blocks and
shared layers without factorized embeddings (no transformers class has them).

Tokenizer files: WordPiece writes `vocab.txt` and `tokenizer_config.json`
(`BertTokenizer`, the lower-case flag), byte-level BPE `vocab.json`,
`merges.txt` and `tokenizer_config.json` (`RobertaTokenizer`, its special
tokens with the checkpoint's `lstrip`/`rstrip`).

Example:
>>> import tempfile
>>> from tfbert import BertConfig, BertEncoder, checkpoint
>>> config = BertConfig.from_preset("tiny", vocab_size=6, num_layers=1)
>>> d = tempfile.mkdtemp()
>>> ckpt = checkpoint.save_checkpoint(f"{d}/ckpt", config, BertEncoder(config).get_named_weights(),
...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello"], lower_case=True)
>>> out = to_huggingface(ckpt, f"{d}/hf")
>>> sorted(os.listdir(out))
['config.json', 'model.safetensors', 'tokenizer_config.json', 'vocab.txt']
>>> json.load(open(f"{out}/config.json"))["architectures"]
['BertModel']
"""

import json
import os
import shutil

import numpy as np
import safetensors.numpy

from tfbert import checkpoint, config_loader
from tfbert.atomic import atomic_dir
from tfbert.convert import albert, bpe_files, common, distilbert, roberta
from tfbert.convert.huggingface import huggingface_rules

CLASS_NAMES = {"bert": "Bert", "roberta": "Roberta", "distilbert": "DistilBert",
               "albert": "Albert"}
# tfbert's hidden_act -> transformers' name for the same function.
ACTIVATIONS = {"gelu": "gelu", "gelu_tanh": "gelu_new", "relu": "relu"}
TASK_HEADS = ("classifier", "token_classifier", "question_answerer")
# Checkpoint prefixes that are not heads of the transformers class.
NOT_HEADS = ("encoder", roberta.POSITION_ROWS, "sentence_dense")


def to_huggingface(checkpoint_dir, output_dir):
    """Writes the tfbert checkpoint `checkpoint_dir` as a Hugging Face
    directory `output_dir` (atomically; see module doc); returns `output_dir`."""
    config_loader.check_path(checkpoint_dir, "checkpoint_dir")
    common.check_output_dir(checkpoint_dir, output_dir)  # before the checkpoint is read
    ckpt = checkpoint.read_checkpoint(checkpoint_dir)
    label = os.path.join(checkpoint_dir, checkpoint.CONFIG_FILE)
    family = family_of(ckpt, label)
    head = head_of(ckpt, family, label)
    prefix = "" if head == "model" else f"{family}."  # the base model's name in a class
    tensors = encoder_tensors(ckpt, family, prefix, head, label)
    tensors.update(head_tensors(ckpt, family, head))
    config = hf_config(ckpt, family, head)
    with atomic_dir(output_dir) as tmp:
        write_json(os.path.join(tmp, "config.json"), config)
        safetensors.numpy.save_file(tensors, os.path.join(tmp, "model.safetensors"),
                                    metadata={"format": "pt"})
        write_tokenizer(ckpt, family, tmp)
        if ckpt.sentence is not None:
            write_sentence_transformers(ckpt, tmp)
    return output_dir


# === What the checkpoint is ===

def family_of(ckpt, label):
    """The transformers family of a checkpoint (module doc)."""
    config = ckpt.config
    if config.norm_first:
        raise ValueError(f"{label}: norm_first (pre-LayerNorm) blocks: no transformers BERT "
                         "family has them.")
    if config.heads_per_layer is not None:
        raise ValueError(f"{label}: pruned attention heads (heads_per_layer): a transformers "
                         "config has one head count for every layer.")
    family = ckpt.huggingface.model_type if ckpt.huggingface else (
        "albert" if config.factorized_embeddings else "bert")
    if family != "albert" and (config.factorized_embeddings or config.share_layers):
        raise ValueError(f"{label}: factorized embeddings or shared layers are ALBERT's, not "
                         f"{family}'s.")
    if family == "albert" and not config.factorized_embeddings:
        raise ValueError(f"{label}: ALBERT always projects its embeddings (embedding_size != "
                         "hidden_size); this checkpoint has none to write.")
    return family


def head_of(ckpt, family, label):
    """"model", "mlm", "pretraining" or one of `TASK_HEADS`, or one ValueError
    naming the heads transformers has no class for."""
    heads = sorted({k.split("/", 1)[0] for k in ckpt.weights} - set(NOT_HEADS))
    known = {(): "model", ("mlm",): "mlm", ("mlm", "nsp"): "pretraining",
             **{(h,): h for h in TASK_HEADS}}
    head = known.get(tuple(heads))
    if head is None or (head == "pretraining" and family not in ("bert", "albert")):
        raise ValueError(f"{label}: heads {heads}: transformers has no {CLASS_NAMES[family]} "
                         "class for them (one of: none, mlm, mlm + nsp, classifier, "
                         "token_classifier, question_answerer).")
    if head == "classifier":
        section = ckpt.text_classifier or ckpt.cross_encoder
        pooling = section.pooling if section else "cls"
        if pooling != "cls":
            raise ValueError(f"{label}: the classifier reads {pooling} pooling; transformers' "
                             "ForSequenceClassification classes read the pooled first token.")
        if family == "distilbert":
            raise ValueError(f"{label}: DistilBertForSequenceClassification's pre_classifier is "
                             "a ReLU layer, not the tanh pooler this classifier reads.")
    return head


# === Weights ===

def family_rules(config, family, prefix, head, pad):
    """The family's converter rules, as `from_huggingface` reads the class."""
    if family == "bert":
        return huggingface_rules(config, prefix)
    if family == "albert":
        return albert.albert_rules(config, prefix)
    if family == "distilbert":
        return distilbert.distilbert_rules(config, prefix)
    names = {"classifier.dense.weight"} if head == "classifier" else set()
    return roberta.roberta_rules(config, prefix, names, pad + 1)


def invert(rule, value):
    """The source tensor of `rule` from its tfbert tensor `value`, element
    for element (the transform moves indices, never values); elements the
    rule does not read come back as NaN for the caller to fill."""
    size = int(np.prod(rule.source_shape))
    index = np.asarray(rule.transform(np.arange(size).reshape(rule.source_shape)))
    assert index.shape == value.shape, (rule.target, index.shape, value.shape)
    source = np.full(size, np.nan, np.float32)
    source[index.ravel()] = np.asarray(value, np.float32).ravel()
    return source.reshape(rule.source_shape)


def encoder_tensors(ckpt, family, prefix, head, label):
    """`{transformers name: array}` of the encoder and the MLM / NSP heads."""
    config = ckpt.config
    weights = dict(ckpt.weights)
    pad = ckpt.huggingface.pad_token_id if ckpt.huggingface else 0
    rules = family_rules(config, family, prefix, head, pad)
    if family == "distilbert":  # distilbert_token_types
        types = weights.pop("encoder/embeddings/token_type_embeddings/embeddings")
        if not np.array_equal(types, np.broadcast_to(types[0], types.shape)):
            raise ValueError(f"{label}: its token-type rows differ (trained on pairs?); "
                             "DistilBERT has no token types to write them to.")
        key = "encoder/embeddings/position_embeddings"
        weights[key] = weights[key] + types[0]
    drop_pooler = family == "distilbert" or (
        ckpt.huggingface is not None and ckpt.huggingface.fresh_pooler and head != "classifier")
    tensors = {}
    for rule in rules:
        if rule.source.startswith("(none"):
            continue
        if rule.target not in weights:
            if rule.group is None:  # a checkpoint tfbert wrote always has these
                raise ValueError(f"{label}: weight {rule.target!r} is missing.")
            continue
        if rule.target.startswith("encoder/pooler/") and drop_pooler:  # dropped_pooler
            continue
        tensors[rule.source] = invert(rule, weights[rule.target])
    if family == "roberta":  # roberta_positions
        name = f"{prefix}embeddings.position_embeddings.weight"
        rows = ckpt.prefixed_weights(roberta.POSITION_ROWS).get("embeddings")
        tensors[name][:pad + 1] = 0.0 if rows is None else rows
    for name, value in tensors.items():
        assert not np.isnan(value).any(), name  # every element placed by a rule
    return tensors


def head_tensors(ckpt, family, head):
    """`{transformers name: array}` of a task head (module doc)."""
    if head not in TASK_HEADS:
        return {}
    weights = ckpt.prefixed_weights(head)
    kernel, bias = weights["kernel"].T, weights["bias"]
    if head == "question_answerer":
        names = ("qa_outputs.weight", "qa_outputs.bias")
    elif head == "classifier" and family == "roberta":  # roberta_classifier
        names = ("classifier.out_proj.weight", "classifier.out_proj.bias")
    else:
        names = ("classifier.weight", "classifier.bias")
    return {names[0]: np.ascontiguousarray(kernel), names[1]: np.ascontiguousarray(bias)}


# === config.json ===

def hf_config(ckpt, family, head):
    """transformers' `config.json` of the family and class (module doc)."""
    c = ckpt.config
    hf = ckpt.huggingface
    act = ACTIVATIONS[c.hidden_act]
    pad = hf.pad_token_id if hf else special_id(ckpt, "[PAD]", 0)
    if family == "distilbert":
        values = {"vocab_size": c.vocab_size, "dim": c.hidden_size, "n_layers": c.num_layers,
                  "n_heads": c.num_heads, "hidden_dim": c.intermediate_size, "activation": act,
                  "dropout": c.dropout_rate, "attention_dropout": c.attention_dropout_rate,
                  "max_position_embeddings": c.max_position_embeddings,
                  "sinusoidal_pos_embds": False, "initializer_range": c.initializer_range}
    else:
        values = {"vocab_size": c.vocab_size, "hidden_size": c.hidden_size,
                  "num_hidden_layers": c.num_layers, "num_attention_heads": c.num_heads,
                  "intermediate_size": c.intermediate_size, "hidden_act": act,
                  "hidden_dropout_prob": c.dropout_rate,
                  "attention_probs_dropout_prob": c.attention_dropout_rate,
                  "max_position_embeddings": c.max_position_embeddings,
                  "type_vocab_size": c.type_vocab_size, "initializer_range": c.initializer_range,
                  "layer_norm_eps": c.layer_norm_eps, "position_embedding_type": "absolute"}
    if family == "roberta":
        values["max_position_embeddings"] += pad + 1
        values.update(bos_token_id=hf.bos_token_id, eos_token_id=hf.eos_token_id)
    if family == "albert":
        values.update(embedding_size=c.embedding_size, inner_group_num=1,
                      num_hidden_groups=1 if c.share_layers else c.num_layers)
    suffix = {"model": "Model", "mlm": "ForMaskedLM", "pretraining": "ForPreTraining",
              "classifier": "ForSequenceClassification",
              "token_classifier": "ForTokenClassification",
              "question_answerer": "ForQuestionAnswering"}[head]
    values.update(model_type=family, architectures=[CLASS_NAMES[family] + suffix],
                  pad_token_id=pad, tie_word_embeddings=True)
    labels = task_labels(ckpt, head)
    if labels is not None:
        values.update(id2label={str(i): str(x) for i, x in enumerate(labels)},
                      label2id={str(x): i for i, x in enumerate(labels)})
    if head == "classifier" and ckpt.text_classifier and ckpt.text_classifier.multi_label:
        values["problem_type"] = "multi_label_classification"
    return values


def task_labels(ckpt, head):
    """The head's label names (its settings' label_list, else LABEL_i)."""
    if head not in ("classifier", "token_classifier"):
        return None
    settings = ckpt.text_classifier if head == "classifier" else ckpt.token_classifier
    names = settings.label_list if settings and settings.label_list else None
    count = ckpt.prefixed_weights(head)["kernel"].shape[-1]
    return names if names and len(names) == count else [f"LABEL_{i}" for i in range(count)]


def special_id(ckpt, token, default):
    tokens = config_loader.vocab_tokens(ckpt.vocab_file)
    return tokens.index(token) if token in tokens else default


# === Tokenizer and sentence-transformers files ===

def write_tokenizer(ckpt, family, out_dir):
    """The tokenizer files `AutoTokenizer.from_pretrained(out_dir)` reads."""
    length = ckpt.config.max_position_embeddings
    if ckpt.tokenizer == "byte_level_bpe":
        for name in checkpoint.BPE_FILES:
            shutil.copyfile(os.path.join(ckpt.path, name), os.path.join(out_dir, name))
        # The special tokens keep their lstrip/rstrip (transformers 5 reads a bare
        # "<mask>" without roberta-base's lstrip).
        special_file = os.path.join(ckpt.path, checkpoint.BPE_SPECIAL_FILE)
        special = {t.get("content"): t for t in (
            bpe_files.read_special_tokens(special_file) if os.path.isfile(special_file)
            else bpe_files.roberta_special_tokens(bpe_files.ROBERTA_SPECIAL_TOKENS))}

        def added_token(content):
            token = special.get(content, {})
            return {"content": content, "lstrip": bool(token.get("lstrip")),
                    "rstrip": bool(token.get("rstrip")), "normalized": False,
                    "single_word": False, "special": True}

        roles = (("bos_token", "<s>"), ("cls_token", "<s>"), ("eos_token", "</s>"),
                 ("sep_token", "</s>"), ("pad_token", "<pad>"), ("unk_token", "<unk>"),
                 ("mask_token", "<mask>"))
        # Every special token by id, the roles' and any other (a user's "<ent>"),
        # as transformers saves them: vocab.json alone would split the others.
        ids = {t: i for i, t in enumerate(bpe_files.read_bpe_vocab(
            os.path.join(ckpt.path, "vocab.json")))}
        in_vocab = sorted((c for c in special if c in ids), key=ids.get)
        write_json(os.path.join(out_dir, "tokenizer_config.json"), {
            "tokenizer_class": "RobertaTokenizer", "add_prefix_space": False,
            **{key: {"__type": "AddedToken", **added_token(content)} for key, content in roles},
            "added_tokens_decoder": {str(ids[c]): added_token(c) for c in in_vocab},
            "extra_special_tokens": [c for c in in_vocab if c not in dict(roles).values()],
            "model_max_length": length})
        return
    shutil.copyfile(ckpt.vocab_file, os.path.join(out_dir, "vocab.txt"))
    # BertTokenizer for ALBERT too: tfbert's ALBERT vocabularies are WordPiece.
    write_json(os.path.join(out_dir, "tokenizer_config.json"), {
        "tokenizer_class": "DistilBertTokenizer" if family == "distilbert" else "BertTokenizer",
        "do_lower_case": ckpt.lower_case, "strip_accents": None,
        "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
        "mask_token": "[MASK]", "model_max_length": length})


def write_sentence_transformers(ckpt, out_dir):
    """modules.json and the module folders of the checkpoint's sentence section."""
    sentence = ckpt.sentence
    modules = [("Transformer", "")]
    flags = {f"pooling_mode_{m}": sentence.pooling == p for m, p in (
        ("cls_token", "cls"), ("mean_tokens", "mean"), ("max_tokens", "max"))}
    write_json(os.path.join(out_dir, "1_Pooling", "config.json"), {
        "word_embedding_dimension": ckpt.config.hidden_size, **flags,
        "pooling_mode_mean_sqrt_len_tokens": False})
    modules.append(("Pooling", "1_Pooling"))
    if sentence.dense_units:
        dense = ckpt.prefixed_weights("sentence_dense")
        path = f"{len(modules)}_Dense"
        activation = {"tanh": "torch.nn.modules.activation.Tanh",
                      "linear": "torch.nn.modules.linear.Identity"}[sentence.dense_activation]
        write_json(os.path.join(out_dir, path, "config.json"), {
            "in_features": ckpt.config.hidden_size, "out_features": sentence.dense_units,
            "bias": True, "activation_function": activation})
        safetensors.numpy.save_file(
            {"linear.weight": np.ascontiguousarray(dense["kernel"].T),
             "linear.bias": np.ascontiguousarray(dense["bias"])},
            os.path.join(out_dir, path, "model.safetensors"))
        modules.append(("Dense", path))
    if sentence.normalize:
        path = f"{len(modules)}_Normalize"
        os.makedirs(os.path.join(out_dir, path))
        modules.append(("Normalize", path))
    write_json(os.path.join(out_dir, "modules.json"), [
        {"idx": i, "name": str(i), "path": path, "type": f"sentence_transformers.models.{kind}"}
        for i, (kind, path) in enumerate(modules)])
    write_json(os.path.join(out_dir, "sentence_bert_config.json"), {
        "max_seq_length": sentence.seq_length or ckpt.config.max_position_embeddings,
        "do_lower_case": False})


def write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)
