"""Checkpoint converters: released BERT weights -> a tfbert checkpoint directory, and back.

- `from_huggingface(src_dir, out_dir)`: a Hugging Face BERT, RoBERTa,
  DistilBERT or ALBERT directory (`config.json`, `model.safetensors`, the
  tokenizer files).
- `from_google(src_dir, out_dir)`: an original google-research/bert directory
  (`bert_config.json`, `bert_model.ckpt.*`, `vocab.txt`).
- `to_huggingface(checkpoint_dir, out_dir)`: the way back, a directory that
  transformers' `Auto*` classes (and sentence-transformers) load.

The first two write `config.json` (encoder config, lower-case flag, source),
`model.safetensors` (encoder plus any `mlm/*` / `nsp/*` pretraining heads) and
`vocab.txt`, which `tfbert.BertEncoder.from_pretrained(out_dir)` loads.

Example:
>>> from tfbert.convert import from_huggingface
>>> out = from_huggingface("all-MiniLM-L6-v2/", "/tmp/minilm")  # doctest: +SKIP
>>> encoder = tfbert.BertEncoder.from_pretrained(out)  # doctest: +SKIP

(`tfbert.convert.huggingface` runs the same on the real files.)
"""

from tfbert.convert.google import from_google
from tfbert.convert.huggingface import from_huggingface
from tfbert.convert.to_huggingface import to_huggingface

__all__ = ["from_google", "from_huggingface", "to_huggingface"]
