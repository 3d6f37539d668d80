"""Text corpus -> sharded TFRecords of BERT pretraining instances.

Corpus: UTF-8 text files, one sentence per line, a blank line between
documents. Writes `pretrain-<i>-of-<n>.tfrecord` and `pretraining_data.json`.

    python tools/create_pretraining_data.py \
        --input_files='corpus/*.txt' --vocab_file=vocab.txt --output_dir=data/ \
        --seq_length=128 --dupe_factor=5 --num_shards=4

Flags override `--config` YAML values; `--set key=value` sets any field.
Static masking (`--static_masking`) stores the masks; without it the trainer
masks dynamically (new masks every epoch).

The shards are shuffled across the whole corpus (temporary buckets, memory
bounded by `bucket_instances`), so their order never follows the corpus order.
`--eval_fraction` holds out that share of the documents in `<output_dir>/eval/`,
which tools/pretrain.py evaluates after every epoch.

`--runner=DirectRunner` (or DaskRunner, DataflowRunner, FlinkRunner,
SparkRunner, ...) builds the same shards with Apache Beam
(`pip install -e ".[beam]"`) for corpora beyond one machine; other pipeline
options go in `--beam_pipeline_options="--project=... --region=..."`, a Dask
scheduler in `--dask_address=tcp://HOST:8786` (docs/pretraining_beam.md).

Every run ends with a summary: documents read (per file), documents skipped
and why, documents and instances per split; the same numbers are the
`summary` of `pretraining_data.json`. A Beam run whose stages disagree (a
runner lost elements) fails with one line and leaves the output as it was.
"""

import dataclasses
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags

from tfbert import config_loader
from tfbert.data.pretraining.data_config import (
    PretrainingDataConfig, create_pretraining_data, summary_lines)


flags.DEFINE_string("config", None, "YAML file with PretrainingDataConfig fields.")
flags.DEFINE_multi_string("set", [], "Overrides, key=value (YAML values).")
config_loader.define_flags(PretrainingDataConfig)
_OLD_FLAGS = ("use_nsp", "max_seq_length")  # accepted for one release, with a warning
flags.DEFINE_boolean("use_nsp", None, "Deprecated: use --next_sentence_task (--nouse_nsp is "
                     "--next_sentence_task=none).")
flags.DEFINE_integer("max_seq_length", None, "Deprecated: use --seq_length.")
FLAGS = flags.FLAGS


def config_from_flags():
    names = [f.name for f in dataclasses.fields(PretrainingDataConfig)] + list(_OLD_FLAGS)
    return config_loader.load_flags(PretrainingDataConfig, FLAGS, names)[0]


def main(argv):
    del argv
    from tfbert.data.pretraining.beam import DataLossError

    try:
        metadata = create_pretraining_data(config_from_flags())
    # OSError: also a Dask scheduler that cannot be reached.
    except (ValueError, OSError, TypeError, ImportError, DataLossError) as e:
        print(f"create_pretraining_data: error: {e}", file=sys.stderr)
        sys.exit(1)
    print("\n".join(summary_lines(metadata["summary"])))


if __name__ == "__main__":
    app.run(main)
