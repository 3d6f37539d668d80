"""A layer probe at scale: `tools/probe.py --task=tags` on all-MiniLM-L6-v2
(every layer, 3 seeds, the random-init and control-task controls), timed.

    python tools/benchmark.py --what=probe
    python benchmarks/bench_probe.py [num_sentences]

The goal (issue 63): 5,000 sentences in under 10 minutes on 2 cores. The
sentences are real (the Python documentation and standard-library
docstrings, `benchmarks.common.corpora.real_sentences`); no parser or
treebank installs here, so the label is each word's shape (punctuation,
number, capitalized, lower case, other), a rule a reader can check, standing
in for UPOS: the cost of a probe does not depend on what its labels mean.
The report gives the time of one feature extraction (train words, every
layer, to disk) and of the whole run.
"""

import os
import sys
import tempfile
import time

if __name__ == "__main__":  # `benchmarks.common` when run as a script
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

MAX_WORDS = 60  # longer docstring "sentences" are lists and code


def shape(word):
    if all(not c.isalnum() for c in word):
        return "PUNCT"
    if word.isdigit():
        return "NUM"
    if word[0].isupper():
        return "CAP"
    return "LOWER" if word.islower() else "OTHER"


def write_conllu(path, sentences):
    with open(path, "w", encoding="utf-8") as f:
        for words in sentences:
            for i, word in enumerate(words, 1):
                f.write(f"{i}\t{word}\t_\t{shape(word)}\t_\t_\t_\t_\t_\t_\n")
            f.write("\n")


def run(num_sentences=5000, dev_fraction=0.2):
    from benchmarks.common.corpora import real_sentences
    from benchmarks.common.minilm import minilm_checkpoint
    from tfbert.analysis import LayerFeatures, ProbeConfig, run_probe
    from tfbert.analysis.sense_items import split_words

    work = tempfile.mkdtemp(prefix="bench_probe_")
    checkpoint = minilm_checkpoint(work)
    sentences = [w for w in (split_words(s) for s in real_sentences(num_sentences * 2))
                 if 0 < len(w) <= MAX_WORDS][:num_sentences]
    dev = max(1, int(len(sentences) * dev_fraction))
    files = {"train": os.path.join(work, "train.conllu"), "dev": os.path.join(work, "dev.conllu")}
    write_conllu(files["train"], sentences[dev:])
    write_conllu(files["dev"], sentences[:dev])
    words = sum(map(len, sentences))

    start = time.perf_counter()
    features = LayerFeatures.extract(checkpoint, sentences[dev:], os.path.join(work, "features"))
    extract = time.perf_counter() - start

    start = time.perf_counter()
    results = run_probe(ProbeConfig(task="tags", checkpoint_dir=checkpoint,
                                    train_file=files["train"], dev_file=files["dev"],
                                    field="upos", output_dir=os.path.join(work, "out")))
    total = time.perf_counter() - start
    lines = [
        f"probe: {len(sentences)} sentences ({words} words, {len(sentences) - dev} train / "
        f"{dev} dev), all-MiniLM-L6-v2, {features.num_layers} layers, word shape as the label",
        f"  extraction of the train words, every layer, float16 to disk: {extract:.1f} s "
        f"({(len(sentences) - dev) / extract:.0f} sentences/s, "
        f"{features.vectors.nbytes / 2**20:.0f} MiB)",
        f"  tools/probe.py --task=tags (3 seeds, random init, control task): {total:.1f} s "
        f"({'under' if total < 600 else 'OVER'} the 10-minute goal)",
        "  dev accuracy by layer: " + " ".join(f"{v:.3f}" for v in results["per_layer"]),
        "  random init by layer:  " + " ".join(f"{v:.3f}" for v in
                                               results["random_init_per_layer"]),
    ]
    return lines


if __name__ == "__main__":
    print("\n".join(run(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)))
