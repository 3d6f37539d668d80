"""tfbert's tokenizer and packer as an OpenVINO model (strings in, the three
int32 encoder inputs out), built with openvino-tokenizers.

Why not converted from the SavedModel: OpenVINO's TensorFlow frontend has no
rule for tf-text's `FastWordpieceTokenizeWithOffsets` (nor for the
`UnicodeDecode` / `UnicodeEncode` / `RaggedGather` ops of tfbert's
normalizer), and openvino-tokenizers translates only tf-text's legacy ops.
So the same tokenizer is described again from what the export records
(`tfbert.export.text_settings`: vocab.txt, casing, seq_length, truncation)
and converted by openvino-tokenizers:

- normalization: tfbert's own per-character reference table
  (`tfbert/text/char_table.py`, the table of `--tflite_tokenizer=exact`) as a
  SentencePiece precompiled charsmap (openvino-tokenizers' `CharsMapNormalization`);
- words: split on spaces and around CJK ideographs;
- WordPiece on the export's vocabulary; [CLS] a [SEP] (b [SEP]), truncated
  to `seq_length` round robin as tfbert (openvino-tokenizers' longest-first
  gives the odd wordpiece of a long pair to the longer text, not the first).

Out-of-the-box `convert_tokenizer(BertTokenizerFast(vocab.txt))` agrees with
tfbert on 70% of the Unicode stress corpus (tests/text/test_tokenizer_parity.py);
this pipeline on all but the lines named in tests/export/test_openvino.py.

Byte-level BPE (a converted RoBERTa) needs none of that: openvino-tokenizers
has its pieces (special-token split, GPT-2's regex split, byte-level BPE,
RoBERTa's packing, longest-first truncation as transformers'), so the export's
`vocab.json`, `merges.txt` and special tokens go through a RoBERTa fast
tokenizer (`bpe_hf_tokenizer`). Its ids equal tfbert's on the stress corpus
but for a NUL at a text's end, which openvino-tokenizers drops
(tests/convert/test_roberta.py).
"""

import functools
import struct

import numpy as np

from tfbert.text.char_table import CJK_RANGES
from tfbert.text.vocab import load_vocab

# SentencePiece reads the trie in blocks of 256 units (1024 bytes).
TRIE_BLOCK_UNITS = 256


@functools.lru_cache(maxsize=2)
def reference_charsmap(lower_case):
    """tfbert's per-character normalization as a SentencePiece precompiled
    charsmap: `<uint32 trie bytes><darts-clone trie><NUL-terminated outputs>`.
    A few seconds to build (a million codepoints); cached per casing."""
    from tfbert.export.tflite_normalizer import build_trie, character_map

    mapping = character_map(lower_case)
    pool, offsets, keys, values = bytearray(b"\0"), {b"": 0}, [], []
    for cp in sorted(mapping):
        if cp == 0:
            continue  # a trie key cannot hold NUL: removed by a Replace step instead
        text = "".join(chr(c) for c in mapping[cp]).encode("utf-8")
        if text not in offsets:
            offsets[text] = len(pool)
            pool += text + b"\0"
        keys.append(chr(cp).encode("utf-8"))
        values.append(offsets[text])
    units = build_trie(keys, values)
    units = np.concatenate([units, np.zeros(-len(units) % TRIE_BLOCK_UNITS, units.dtype)])
    trie = units.astype("<u4").tobytes()
    return struct.pack("<I", len(trie)) + trie + bytes(pool)


def hf_tokenizer(vocab_file, lower_case):
    """A Hugging Face fast tokenizer that tokenizes as tfbert does (the
    vehicle openvino-tokenizers converts)."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = load_vocab(vocab_file)
    cjk = "[" + "".join(f"\\x{{{lo:X}}}-\\x{{{hi:X}}}" for lo, hi in CJK_RANGES) + "]"
    tokenizer = Tokenizer(models.WordPiece({t: i for i, t in enumerate(vocab.tokens)},
                                           unk_token="[UNK]", max_input_chars_per_word=100))
    tokenizer.normalizer = normalizers.Sequence([
        normalizers.Replace("\x00", ""), normalizers.Precompiled(reference_charsmap(lower_case))])
    # Split on spaces with a word pattern: openvino-tokenizers converts
    # `WhitespaceSplit` as `\w+|[^\w\s]+`, which also splits "€10".
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex("[^ ]+"), behavior="removed", invert=True),
        pre_tokenizers.Split(Regex(cjk), behavior="isolated")])
    tokenizer.post_processor = processors.BertProcessing(("[SEP]", vocab.sep_id),
                                                         ("[CLS]", vocab.cls_id))
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]",
                                   cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]",
                                   mask_token="[MASK]",
                                   model_input_names=["input_ids", "token_type_ids",
                                                      "attention_mask"])


def bpe_hf_tokenizer(vocab_file, merges_file, special_tokens_file):
    """A Hugging Face fast RoBERTa tokenizer of tfbert's byte-level BPE files
    (the special tokens with their lstrip/rstrip, as tfbert reads them)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    from tfbert.convert import bpe_files

    tokens = bpe_files.read_bpe_vocab(vocab_file)
    ids = {t: i for i, t in enumerate(tokens)}
    tokenizer = Tokenizer(models.BPE(ids, bpe_files.read_merges(merges_file), unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.RobertaProcessing(
        ("</s>", ids["</s>"]), ("<s>", ids["<s>"]), add_prefix_space=False)
    tokenizer.add_special_tokens([
        AddedToken(t["content"], lstrip=bool(t.get("lstrip")), rstrip=bool(t.get("rstrip")),
                   normalized=False, special=True)
        for t in bpe_files.read_special_tokens(special_tokens_file)])
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>",
                                   cls_token="<s>", sep_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>", mask_token="<mask>",
                                   model_input_names=["input_ids", "attention_mask"])


def bpe_tokenizer_model(settings, num_inputs=1):
    """The OpenVINO tokenizer of a byte-level BPE export (`settings` as
    `read_text_settings` gives them): string parameters -> `input_ids`,
    `attention_mask` int32 `[batch, longest]`, truncated to `seq_length`
    longest-first (transformers' and tfbert's byte-level BPE default)."""
    import openvino as ov
    import openvino_tokenizers

    hf = bpe_hf_tokenizer(settings["vocab_file"], settings["merges_file"],
                          settings["special_tokens_file"])
    return openvino_tokenizers.convert_tokenizer(
        hf, tokenizer_output_type=ov.Type.i32, truncation=True,
        max_length=settings["seq_length"], number_of_inputs=num_inputs)


def tokenizer_model(vocab_file, lower_case, seq_length, num_inputs=1):
    """The OpenVINO tokenizer: `num_inputs` string `[batch]` parameters ->
    `input_ids`, `token_type_ids`, `attention_mask` int32 `[batch, longest]`,
    truncated to `seq_length` (None: not truncated).

    Invalid UTF-8 bytes become [UNK] here (tfbert drops them): `OpenVINOModel`
    drops them before the model, and JSON requests to a server hold valid
    UTF-8 by definition."""
    import openvino as ov
    import openvino_tokenizers

    model = openvino_tokenizers.convert_tokenizer(
        hf_tokenizer(vocab_file, lower_case), tokenizer_output_type=ov.Type.i32,
        truncation=seq_length is not None, max_length=seq_length, number_of_inputs=num_inputs)
    if num_inputs == 2:
        _round_robin_truncation(model)
    return model


def _round_robin_truncation(model):
    """Replaces openvino-tokenizers' longest-first `Truncate` of a pair by
    tfbert's round robin. The two agree on every length but one: when both
    texts are long and the budget is odd, longest-first gives the odd
    wordpiece to the longer text, round robin to the first. Round robin keeps
    `a = min(len_a, max(budget - len_b, ceil(budget / 2)))` wordpieces of the
    first text and `min(len_b, budget - a)` of the second (per row, as ends of
    the ragged segments; `budget` is the `Truncate` node's own input)."""
    import openvino as ov

    opset = ov.opset15
    for node in model.get_ordered_ops():
        if node.get_type_name() != "Truncate":
            continue
        begins_a, ends_a, _, begins_b, ends_b, _, budget = (
            node.input_value(i) for i in range(7))
        len_a, len_b = opset.subtract(ends_a, begins_a), opset.subtract(ends_b, begins_b)
        half = opset.divide(opset.add(budget, _i32(1)), _i32(2))  # ceil(budget / 2)
        keep_a = opset.minimum(len_a, opset.maximum(opset.subtract(budget, len_b), half))
        keep_b = opset.minimum(len_b, opset.subtract(budget, keep_a))
        new = {1: opset.add(begins_a, keep_a).output(0), 4: opset.add(begins_b, keep_b).output(0)}
        for i in range(6):
            source = new.get(i, node.input_value(i))
            for target in list(node.output(i).get_target_inputs()):
                target.replace_source_output(source)


def _i32(value):
    import numpy as np
    import openvino as ov

    return ov.op.Constant(np.array(value, np.int32))
