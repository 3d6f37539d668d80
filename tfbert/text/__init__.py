"""Text preprocessing as graph ops: vocab, WordPiece tokenizer, packer, preprocessor."""

from tfbert.text.packer import BertPackInputs, pack_inputs
from tfbert.text.preprocessor import BertPreprocessor
from tfbert.text.tokenizer import BertTokenizer
from tfbert.text.vocab import SPECIAL_TOKENS, Vocab, load_vocab

__all__ = [
    "BertPackInputs",
    "BertPreprocessor",
    "BertTokenizer",
    "SPECIAL_TOKENS",
    "Vocab",
    "load_vocab",
    "pack_inputs",
]
