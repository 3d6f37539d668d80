"""Task metrics computed on NumPy arrays: GLUE scores and seqeval-style entity F1."""
