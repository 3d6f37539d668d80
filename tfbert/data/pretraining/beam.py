"""Pretraining data with Apache Beam, for corpora beyond one machine.

    pip install -e ".[beam]"
    python tools/create_pretraining_data.py --runner=DirectRunner \
        --input_files='corpus/*.txt' --vocab_file=vocab.txt --output_dir=data/

The Beam runner of `tfbert.data.pretraining.write_shards`: the same reading,
tokenizer, `InstanceBuilder`, masking, shard format, checks and metadata as
the local writer; only the plumbing is Beam's:

    files -> batches of documents (cut while reading) -> token ids ----> instances
                                   \\-> reservoir sample (side input: random "next")
    instances -> beam.Reshuffle -> random shard key -> GroupByKey
              -> each shard shuffled in memory, packed, masked, written

Nothing is lost without a word. Every stage also emits its counts (plain
dicts, next to the data: documents and sentences read per file, documents
tokenized or skipped, documents and instances built, instances written), and
the driver checks that each stage passed on what the one before it gave:
when a runner dropped elements, the run fails with one line naming the
runner and both numbers, before anything replaces the output directory's
earlier contents (the shards are written to a temporary directory inside it
and renamed into place only after the check).

A shard's order is shuffled in memory, never the order in which the runner
delivers elements (which can follow the corpus), so a shard must fit in a
worker's memory: use more shards for a bigger corpus. Unlike the local
writer, the output is not bit-identical across runs (runners decide the
bundles); its statistics are the same.

Runners (docs/pretraining_beam.md): DirectRunner (in-process, or
`--direct_running_mode=multi_processing --direct_num_workers=N` in
`--beam_pipeline_options`), `DaskRunner` (short name accepted; the scheduler
from `--dask_address` or `--dask_client_address`), Dataflow, Flink, Spark:
`--runner=DataflowRunner --beam_pipeline_options="--project=P --region=R
--temp_location=gs://B/tmp --setup_file=./setup.py"` (the workers install
tfbert from setup.py; `--input_files` and `--output_dir` may be gs:// paths,
the vocab is read where the tool runs and shipped with the pipeline).

One module, over 400 lines, by design: the counts each stage emits and the
driver's check of them (`check_counts`) must agree key for key, so they are
read and changed together; what the Beam runner shares with the local
writer is in `tfbert.data.pretraining.writer`.
"""

import collections
import io
import json
import random
import types
import uuid

try:
    import apache_beam as beam
except ImportError:  # the module imports without Beam; running it says what to install
    beam = None

from tfbert.data.beam_runner import DataLossError, pipeline_options, run_to_completion, runner_label
from tfbert.data.pretraining.writer import RunCounts, check_settings, run_summary, write_shards
from tfbert.data.pretraining.documents import (decode_document, documents_from_lines,
                                               encode_document, sentence_tokenizer,
                                               tokenize_documents)
from tfbert.data.pretraining.instances import (InstanceBuilder, NoOtherDocumentError,
                                               decode_instance, draw_other_document,
                                               encode_instance)
from tfbert.data.pretraining.records import (EVAL_DIR, SHARD_PATTERN, RecordFormat, empty_stats,
                                             serialize_instances)

STATS_FILE = "stats.json"
SPLITS = ("train", "eval")
SKIP_REASONS = ("empty", "one_sentence", "no_instance")
_DoFn = beam.DoFn if beam is not None else object


def _require_beam():
    if beam is None:
        raise ImportError(
            "--runner needs Apache Beam: pip install -e \".[beam]\" (or pip install apache-beam)."
        )


def match_files(patterns):
    """Comma-separated paths / globs (local or gs://...) -> sorted paths;
    a pattern that matches nothing is an error naming it."""
    from apache_beam.io.filesystems import FileSystems

    files = []
    for pattern in (p.strip() for p in patterns.split(",") if p.strip()):
        try:
            found = FileSystems.match([pattern])[0].metadata_list
        except Exception:  # Beam raises BeamIOError for some filesystems
            found = []
        if not found:
            raise FileNotFoundError(f"No input file matches {pattern!r}.")
        files.extend(sorted(m.path for m in found))
    if not files:
        raise FileNotFoundError("No input file given.")
    return files


def _is_stats(element):
    return isinstance(element, dict)


def _is_data(element):
    return not isinstance(element, dict)


def _read_file(item, batch_size):
    """(file index, path) -> (file index, first document index, documents)
    batches of `batch_size` documents, then the file's read counts (a dict)."""
    from apache_beam.io.filesystems import FileSystems

    file_index, path = item
    batch, documents, sentences = [], 0, 0
    with FileSystems.open(path) as raw:
        lines = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
        for document in documents_from_lines(lines):
            batch.append(document)
            documents += 1
            sentences += len(document)
            if len(batch) == batch_size:
                yield file_index, documents - len(batch), batch
                batch = []
    if batch:
        yield file_index, documents - len(batch), batch
    yield {f"read/{file_index}/documents": documents, f"read/{file_index}/sentences": sentences}


class _Tokenize(_DoFn):
    """A batch of documents -> the list of its (key, split, encoded ids)
    documents with tokens, then the batch's counts."""

    def __init__(self, vocabulary, lower_case, eval_fraction, seed):
        super().__init__()
        self.vocabulary = vocabulary
        self.lower_case = lower_case
        self.eval_fraction = eval_fraction
        self.seed = seed
        self._tokenize = None

    def process(self, batch):
        if self._tokenize is None:
            from tfbert.text.tokenizer import BertTokenizer

            self._tokenizer = BertTokenizer(vocabulary=self.vocabulary, lower_case=self.lower_case)
            self._tokenize = sentence_tokenizer(self._tokenizer)
        file_index, first, documents = batch
        stats = collections.Counter()
        kept = []
        tokenized = tokenize_documents(self._tokenize, documents)
        for j, (text, document) in enumerate(zip(documents, tokenized)):
            stats["sentences_without_tokens"] += len(text) - len(document)
            if not document:
                stats["skipped/empty"] += 1
                continue
            key = (file_index, first + j)
            # The split is a function of the document key, whatever the bundling.
            draw = random.Random(f"{self.seed}-eval-{key}").random()
            split = "eval" if self.eval_fraction and draw < self.eval_fraction else "train"
            stats[f"{split}.documents"] += 1
            stats[f"{split}.sentences"] += len(document)
            kept.append((key, split, encode_document(document)))
        yield kept
        yield dict(stats)


class _Instances(_DoFn):
    """A batch of documents -> (split, encoded instance) for each dupe of
    each document, then the batch's counts."""

    def __init__(self, cfg, task):
        super().__init__()
        self.cfg = cfg
        self.task = task
        self._builder = None

    def process(self, batch, pool):
        if self._builder is None:
            # One builder per worker: its running label balance keeps NSP/SOP at 50%.
            self._builder = InstanceBuilder(
                self.cfg.seq_length, self.cfg.short_seq_prob,
                rng=random.Random(f"{self.cfg.seed}-{uuid.uuid4()}"),
                next_sentence_task=self.task)
        stats = collections.Counter()
        for key, split, encoded in batch:
            document = decode_document(encoded)
            stats[f"built/{split}/documents"] += 1
            built = 0
            for _ in range(self.cfg.dupe_factor):
                try:
                    instances = self._builder.instances(
                        document, lambda: draw_other_document(pool, key, self._builder.rng))
                except NoOtherDocumentError:  # write_shards says so
                    stats["no_other_document"] += 1
                    break
                for a, b, label in instances:
                    yield split, encode_instance(a, b, label)
                built += len(instances)
            stats[f"built/{split}/instances"] += built
            stats[f"built/{split}/used"] += bool(built)
            if not built:
                stats["skipped/one_sentence" if len(document) == 1 else "skipped/no_instance"] += 1
        yield dict(stats)


class _WriteShard(_DoFn):
    """(shard key, instances) -> one TFRecord file written under a temporary
    name and renamed; yields its statistics."""

    def __init__(self, cfg, vocabulary, directory, mask_seed):
        super().__init__()
        self.cfg = cfg
        self.vocabulary = vocabulary
        self.directory = directory
        self.mask_seed = mask_seed
        self._vocab = None

    def process(self, element):
        import tensorflow as tf

        from tfbert.text.masking import MaskedLMMasker
        from tfbert.text.vocab import Vocab

        (split, shard, shards), encoded = element
        if self._vocab is None:
            self._vocab = Vocab(self.vocabulary)
            self._masker = None
            if self.cfg.static_masking:
                self._masker = MaskedLMMasker.from_vocab(
                    self._vocab, max_predictions=self.cfg.max_predictions_per_seq,
                    mask_rate=self.cfg.masked_lm_prob, strategy=self.cfg.masking_strategy)
        instances = [decode_instance(e) for e in encoded]
        random.Random(f"{self.cfg.seed}-{split}-{shard}").shuffle(instances)
        stats = empty_stats()
        directory = self.directory + ("/" + EVAL_DIR if split == "eval" else "")
        path = f"{directory}/{SHARD_PATTERN.format(shard, shards)}"
        with tf.io.TFRecordWriter(path + ".tmp") as writer:
            for start in range(0, len(instances), 1024):
                records = serialize_instances(
                    instances[start:start + 1024], self.cfg.seq_length, self._vocab,
                    self._masker, self.mask_seed, shard * 2**20 + start, stats)
                for record in records:
                    writer.write(record)
        tf.io.gfile.rename(path + ".tmp", path, overwrite=True)
        yield {f"{split}.{k}": v for k, v in stats.items() if k != "documents" and k != "sentences"}


def _merge(dicts):
    total = {}
    for d in dicts:
        for k, v in d.items():
            total[k] = total.get(k, 0) + v
    return total


def _worker_settings(cfg):
    """The settings the workers need, as a plain namespace: the workers then
    unpickle no class of the caller's (the tool's config class lives in a
    script a Dask scheduler or worker cannot import)."""
    names = ("seed", "seq_length", "short_seq_prob", "dupe_factor", "static_masking",
             "max_predictions_per_seq", "masked_lm_prob", "masking_strategy")
    return types.SimpleNamespace(**{n: getattr(cfg, n) for n in names})


def build_pipeline(pipeline, cfg, files, vocabulary, task, work_dir, between=None):
    """Adds the stages to `pipeline`; the shards and `stats.json` (every
    stage's counts, summed) land in `work_dir`. `between`: a PTransform put
    between building the instances and writing them (the tests put Beam's
    BatchElements there, which the DaskRunner loses elements in, to show that
    the counts catch a lossy runner)."""
    _require_beam()
    settings = _worker_settings(cfg)
    mask_seed = random.Random(cfg.seed).randint(0, 2**31 - 1)
    # Batches are cut while reading, not by beam.BatchElements: Beam 2.77's DaskRunner drops
    # what a DoFn emits in finish_bundle, where BatchElements emits each bundle's last batch.
    read = (
        pipeline
        | "Files" >> beam.Create(list(enumerate(files)))
        | "Read" >> beam.FlatMap(_read_file, cfg.buffer_documents)
    )
    tokenized = (
        read
        | "Batches" >> beam.Filter(_is_data)
        | "SpreadBatches" >> beam.Reshuffle()
        | "Tokenize" >> beam.ParDo(_Tokenize(vocabulary, cfg.lower_case, cfg.eval_fraction,
                                               cfg.seed))
    )
    documents = tokenized | "Documents" >> beam.Filter(_is_data)
    pool = (
        documents
        | "TrainDocuments" >> beam.FlatMap(lambda batch: [(k, e) for k, s, e in batch if s == "train"])
        | "RandomNextPool" >> beam.combiners.Sample.FixedSizeGlobally(cfg.random_next_pool)
    )
    built = (
        documents
        | "Instances" >> beam.ParDo(_Instances(settings, task), pool=beam.pvalue.AsSingleton(pool))
    )
    shards = {"train": cfg.num_shards, "eval": 1}
    instances = built | "InstancesOnly" >> beam.Filter(_is_data)
    if between is not None:
        instances = instances | "Between" >> between
    written = (
        instances
        | "Shuffle" >> beam.Reshuffle()
        | "ShardKey" >> beam.Map(
            lambda s: ((s[0], random.randrange(shards[s[0]]), shards[s[0]]), s[1]))
        | "GroupShards" >> beam.GroupByKey()
        | "WriteShards" >> beam.ParDo(_WriteShard(settings, vocabulary, work_dir, mask_seed))
    )

    def write_stats(stats):
        import tensorflow as tf

        with tf.io.gfile.GFile(f"{work_dir}/{STATS_FILE}", "w") as f:
            f.write(json.dumps(stats))

    _ = (
        (read | "ReadCounts" >> beam.Filter(_is_stats),
         tokenized | "TokenizeCounts" >> beam.Filter(_is_stats),
         built | "BuildCounts" >> beam.Filter(_is_stats),
         written)
        | "AllStats" >> beam.Flatten()
        | "SumStats" >> beam.CombineGlobally(_merge)
        | "WriteStats" >> beam.Map(write_stats)
    )


def check_counts(totals, files, runner):
    """The run's summary from the summed stage counts; raises `DataLossError`
    (one line naming the runner and both numbers) where a stage passed on
    other than what it got."""
    def get(key):
        return int(totals.get(key, 0))

    missing = [path for i, path in enumerate(files) if f"read/{i}/documents" not in totals]
    if missing:
        raise DataLossError(
            f"Beam's {runner} lost data: the read counts of {len(missing)} of {len(files)} "
            f"input files never arrived (first: {missing[0]}).")
    per_file = {path: {"documents": get(f"read/{i}/documents"),
                       "sentences": get(f"read/{i}/sentences")} for i, path in enumerate(files)}
    read = sum(f["documents"] for f in per_file.values())
    sentences = sum(f["sentences"] for f in per_file.values())
    kept = {s: get(f"{s}.documents") for s in SPLITS}
    checks = [
        (read, "documents read", sum(kept.values()) + get("skipped/empty"),
         "documents tokenized"),
        (sentences, "sentences read",
         sum(get(f"{s}.sentences") for s in SPLITS) + get("sentences_without_tokens"),
         "sentences tokenized"),
    ]
    for s in SPLITS:
        checks.append((kept[s], f"{s} documents tokenized", get(f"built/{s}/documents"),
                       f"{s} documents reached the instance builder"))
        checks.append((get(f"built/{s}/instances"), f"{s} instances built",
                       get(f"{s}.instances"), f"{s} instances written"))
    for a, what_a, b, what_b in checks:
        if a != b:
            raise DataLossError(
                f"Beam's {runner} lost data: {a} {what_a} but {b} {what_b}; the output "
                "directory was left as it was.")
    return run_summary(
        runner, per_file,
        skipped={r: get(f"skipped/{r}") for r in SKIP_REASONS},
        documents={s: get(f"built/{s}/used") for s in SPLITS},
        instances={s: get(f"{s}.instances") for s in SPLITS},
        num_shards={"train": 0, "eval": 0})  # filled in by the caller


def run_pipeline(cfg, log=print, between=None):
    """Runs the pipeline for a `PretrainingDataConfig` (`cfg.runner`,
    `cfg.beam_pipeline_options`, `cfg.dask_address`) through
    `tfbert.data.pretraining.write_shards`; checks that no stage lost data,
    so the shards in `cfg.output_dir` and its `pretraining_data.json` (with a
    `summary` of the counts) are replaced only by a complete run. Returns the
    metadata. Errors are one line."""
    _require_beam()
    import tensorflow as tf

    from tfbert.text.vocab import load_vocab

    check_settings(cfg.dupe_factor, cfg.num_shards, cfg.buffer_documents,
                         cfg.eval_fraction)
    task = cfg.next_sentence_task
    files = match_files(cfg.input_files)
    vocab = load_vocab(cfg.vocab_file)  # checks the special tokens, naming the file
    max_predictions = None
    if cfg.static_masking:
        from tfbert.text.masking import MaskedLMMasker

        MaskedLMMasker.from_vocab(vocab, max_predictions=cfg.max_predictions_per_seq,
                                  mask_rate=cfg.masked_lm_prob, strategy=cfg.masking_strategy)
        max_predictions = cfg.max_predictions_per_seq
    runner, options = pipeline_options(cfg.runner, cfg.beam_pipeline_options, cfg.dask_address)
    runner_name = cfg.runner.rsplit(".", 1)[-1]
    label = runner_label(cfg.runner, options)

    def write(work_dir):
        pipeline = beam.Pipeline(runner=runner, options=options)
        build_pipeline(pipeline, cfg, files, vocab.tokens, task, work_dir, between)
        run_to_completion(pipeline)
        if not tf.io.gfile.exists(f"{work_dir}/{STATS_FILE}"):
            raise DataLossError(f"Beam's {label} lost data: the run's counts never "
                                "arrived; the output directory was left as it was.")
        with tf.io.gfile.GFile(f"{work_dir}/{STATS_FILE}") as f:
            totals = json.load(f)
        summary = check_counts(totals, files, label)
        stats = {split: {k: int(totals.get(f"{split}.{k}", 0)) for k in empty_stats()}
                 for split in SPLITS}
        summary["num_shards"] = {"train": cfg.num_shards,
                                 "eval": 1 if stats["eval"]["documents"] else 0}
        return RunCounts(stats, summary, int(totals.get("no_other_document", 0)),
                         {"runner": runner_name})

    record_format = RecordFormat(cfg.seq_length, task, max_predictions,
                                       vocab.vocab_size, cfg.seed)
    return write_shards(write, cfg.input_files, cfg.output_dir, record_format,
                              cfg.num_shards, log, runner_note=f" with Beam's {runner_name}")
