"""tfbert: BERT for TensorFlow/Keras 3, from raw text to a served model.

Top level: `BertConfig`, `BertEncoder`, `BertPreprocessor`, the strings-in
models `TextClassifier`, `TokenClassifier`, `QuestionAnswerer`, `SentenceEncoder` and
`CrossEncoder`, `load_model` (their `.keras` files, checked before Keras
reads them), and the converters in `tfbert.convert` (`from_huggingface`, `from_google`).
"""

from tfbert import convert
from tfbert.config import BertConfig
from tfbert.models.cross_encoder import CrossEncoder
from tfbert.models.keras_file import load_model
from tfbert.encoder import BertEncoder
from tfbert.models.question_answerer import QuestionAnswerer
from tfbert.models.sentence_encoder import SentenceEncoder
from tfbert.models.text_classifier import TextClassifier
from tfbert.models.token_classifier import TokenClassifier
from tfbert.text.preprocessor import BertPreprocessor

__version__ = "0.1.0"

__all__ = ["BertConfig", "BertEncoder", "BertPreprocessor", "CrossEncoder", "QuestionAnswerer",
           "SentenceEncoder", "TextClassifier", "TokenClassifier", "convert", "load_model"]
