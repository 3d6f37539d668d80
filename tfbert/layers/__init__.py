"""Building blocks of the BERT encoder and its heads."""
