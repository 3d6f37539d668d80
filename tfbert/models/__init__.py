"""Task models built on `BertEncoder`: pretrainer, fill-mask, fine-tuning heads."""
