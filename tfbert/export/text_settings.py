"""What a task SavedModel's tokenizer does, written beside its graph.

`serving_default` tokenizes and packs inside the graph, but the graph alone
does not say with which vocabulary, casing, `seq_length` or truncation (the
WordPiece vocabulary is compiled into a tf-text trie, the byte-level BPE
into lookup tables). Runtimes that rebuild the tokenizer from the export
(`tfbert.export.openvino`) read it here:

    <export>/assets/vocab.txt          WordPiece: the vocabulary, one token per line
    <export>/assets/vocab.json         byte-level BPE (RoBERTa): the vocabulary,
    <export>/assets/merges.txt         the merges and the special tokens read in
    <export>/assets/special_tokens.json  the text, as a tfbert checkpoint has them
    <export>/assets/tfbert_text.json   tokenizer, lower_case, seq_length,
                                       truncation, max_seq_length, text_inputs,
                                       model

`assets/` travels with the SavedModel (TF Serving, copies); TensorFlow does
not read these files.
"""

import json
import os

VOCAB_FILE = os.path.join("assets", "vocab.txt")
SETTINGS_FILE = os.path.join("assets", "tfbert_text.json")
# Byte-level BPE's files, under the names `read_text_settings` gives their paths.
BPE_ASSETS = {"vocab_file": "vocab.json", "merges_file": "merges.txt",
              "special_tokens_file": "special_tokens.json"}


def write_text_settings(export_dir, track, text_inputs):
    """Writes the settings of the first `BertPreprocessor` in `track` (Keras
    objects a task export tracks) into `export_dir`; nothing without one."""
    from tfbert.export.preprocessor import tokenizer_assets
    from tfbert.text.preprocessor import BertPreprocessor

    preprocessor = next((o for o in track if isinstance(o, BertPreprocessor)), None)
    if preprocessor is None:
        return
    model = next((o for o in track if o is not preprocessor), None)
    assets = os.path.join(export_dir, "assets")
    os.makedirs(assets, exist_ok=True)
    tokenizer_assets(preprocessor, assets)
    settings = {
        "tokenizer": preprocessor.tokenizer_kind,
        "lower_case": preprocessor.lower_case,
        "seq_length": preprocessor.seq_length,
        "truncation": preprocessor.truncation,
        "max_seq_length": preprocessor.max_seq_length,
        "text_inputs": list(text_inputs),
        "model": type(model).__name__ if model is not None else None,
    }
    with open(os.path.join(export_dir, SETTINGS_FILE), "w", encoding="utf-8") as f:
        json.dump(settings, f, indent=2)


def read_text_settings(export_dir):
    """The settings dict plus the tokenizer files' paths (`vocab_file`; for
    byte-level BPE also `merges_file`, `special_tokens_file`); None when the
    export has none (not a tfbert task export, or written before they were)."""
    path = os.path.join(export_dir, SETTINGS_FILE)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        settings = json.load(f)
    if settings.get("tokenizer") == "byte_level_bpe":
        files = {key: os.path.join(export_dir, "assets", name) for key, name in BPE_ASSETS.items()}
    else:
        files = {"vocab_file": os.path.join(export_dir, VOCAB_FILE)}
    if not all(os.path.isfile(f) for f in files.values()):
        return None
    return {**settings, **files}
