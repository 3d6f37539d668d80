r"""What each layer of a checkpoint knows: layer probes and attention-head
statistics, written to `<output_dir>/results.json` and `probe.png`.

    # UPOS tags from every layer, beside a random-init encoder and a control task
    python tools/probe.py --checkpoint_dir=checkpoints/minilm --task=tags \
        --train_file=train.conllu --dev_file=dev.conllu --field=upos --output_dir=out/upos
    # parse trees (Hewitt & Manning's distance and depth probes)
    python tools/probe.py --checkpoint_dir=... --task=structural --train_file=... \
        --dev_file=... --output_dir=out/syntax
    # word senses by nearest centroid (sense JSONL: text, start, end, lemma, sense)
    python tools/probe.py --checkpoint_dir=... --task=senses --train_file=senses_train.jsonl \
        --dev_file=senses_dev.jsonl --output_dir=out/senses
    # self-similarity and anisotropy; attention-head statistics (CoNLL-U)
    python tools/probe.py --checkpoint_dir=... --task=geometry --train_file=... --output_dir=...
    python tools/probe.py --checkpoint_dir=... --task=heads --train_file=... --output_dir=...

Settings are `tfbert.analysis.probe_run.ProbeConfig` (`--config` YAML, `--set
key=value`, or the flags below). The work is `tfbert.analysis.probe_run.run_probe`;
`tools/visualize.py --kind=probe --results=out/upos/results.json` draws the picture again.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging

from tfbert import config_loader
from tfbert.analysis.probe_run import TASKS, ProbeConfig, run_probe

flags.DEFINE_enum("task", None, TASKS, "What to analyse.")
flags.DEFINE_string("checkpoint_dir", None, "A tfbert checkpoint directory.")
flags.DEFINE_string("train_file", None, "CoNLL-U or sense JSONL the probes train on.")
flags.DEFINE_string("dev_file", None, "CoNLL-U or sense JSONL the probes are scored on.")
flags.DEFINE_string("field", None, "tags: the CoNLL-U column (upos, xpos, deprel, misc, ...).")
flags.DEFINE_string("output_dir", None, "Where results.json and probe.png go.")
flags.DEFINE_list("layers", None, "Layer numbers to probe (default all; 0 = embeddings).")
flags.DEFINE_string("config", None, "YAML with ProbeConfig keys.")
flags.DEFINE_multi_string("set", [], "Overrides, key=value (values parse as YAML).")
FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    logging.set_verbosity(logging.WARNING)
    try:
        layers = FLAGS.layers
        if layers is not None:
            bad = [l for l in layers if not l.strip().lstrip("-").isdigit()]
            if bad:
                raise ValueError(f"--layers: {bad[0]!r} is not a layer number.")
            FLAGS.layers = None  # given to the config as numbers, below
            FLAGS.set.append(f"layers=[{','.join(layers)}]")
        cfg, _ = config_loader.load_flags(ProbeConfig, FLAGS, (
            "task", "checkpoint_dir", "train_file", "dev_file", "field", "output_dir"))
        results = run_probe(cfg)
    except (ValueError, FileNotFoundError, TypeError) as e:
        print(f"probe: error: {e}", file=sys.stderr)
        return 1
    print(os.path.join(cfg.output_dir, "results.json"))
    print(f"{results['metric']} by layer: " + " ".join(
        f"{l}:{'-' if v is None else f'{v:.3f}'}"
        for l, v in zip(results["layers"], results["per_layer"])))
    return 0


if __name__ == "__main__":
    sys.exit(app.run(main))
