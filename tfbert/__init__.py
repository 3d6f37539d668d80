"""tfbert: BERT for TensorFlow/Keras 3, from raw text to a served model."""

from tfbert.config import BertConfig
from tfbert.encoder import BertEncoder

__version__ = "0.1.0"

__all__ = ["BertConfig", "BertEncoder"]
