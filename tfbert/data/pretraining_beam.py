"""Pretraining data with Apache Beam, for corpora beyond one machine.

    pip install -e ".[beam]"
    python tools/create_pretraining_data.py --runner=DirectRunner \
        --input_files='corpus/*.txt' --vocab_file=vocab.txt --output_dir=data/

The same reading, tokenizer, `InstanceBuilder`, masking and shard format as
the local writer (`tfbert.data.pretraining`); only the plumbing is Beam's:

    files -> documents -> token ids ---------------------> instances
                              \\-> reservoir sample (side input: random "next")
    instances -> beam.Reshuffle -> random shard key -> GroupByKey
              -> each shard shuffled in memory, packed, masked, written

A shard's order is shuffled in memory, never the order in which the runner
delivers elements (which can follow the corpus), so a shard must fit in a
worker's memory: use more shards for a bigger corpus. Unlike the local
writer, the output is not bit-identical across runs (runners decide the
bundles); its statistics are the same.

Other runners are pipeline options, e.g. Dataflow:
`--runner=DataflowRunner --beam_pipeline_options="--project=P --region=R
--temp_location=gs://B/tmp --setup_file=./setup.py"` (the workers install
tfbert from setup.py; `--input_files` and `--output_dir` may be gs:// paths,
the vocab is read where the tool runs and shipped with the pipeline).
"""

import io
import json
import random
import shlex
import uuid

try:
    import apache_beam as beam
except ImportError:  # the module imports without Beam; running it says what to install
    beam = None

from tfbert.data import pretraining as local

STATS_FILE = "stats.json"
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


def _read_file(item):
    from apache_beam.io.filesystems import FileSystems

    file_index, path = item
    with FileSystems.open(path) as raw:
        lines = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
        for doc_index, document in enumerate(local.documents_from_lines(lines)):
            yield (file_index, doc_index), document


class _Tokenize(_DoFn):
    """Batches of (key, document) -> (key, split, encoded ids)."""

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
            self._tokenize = local._sentence_tokenizer(self._tokenizer)
        tokenized = local._tokenize_documents(self._tokenize, [d for _, d in batch])
        for (key, _), document in zip(batch, tokenized):
            if not document:
                continue
            # The split is a function of the document key, whatever the bundling.
            draw = random.Random(f"{self.seed}-eval-{key}").random()
            split = "eval" if self.eval_fraction and draw < self.eval_fraction else "train"
            yield key, split, local.encode_document(document)


class _Instances(_DoFn):
    """One document -> (split, encoded instance) for each dupe."""

    def __init__(self, cfg, task):
        super().__init__()
        self.cfg = cfg
        self.task = task
        self._builder = None

    def process(self, element, pool):
        key, split, encoded = element
        if self._builder is None:
            # One builder per worker: its running label balance keeps NSP/SOP at 50%.
            self._builder = local.InstanceBuilder(
                self.cfg.max_seq_length, self.cfg.short_seq_prob,
                rng=random.Random(f"{self.cfg.seed}-{uuid.uuid4()}"),
                next_sentence_task=self.task)
        rng = self._builder.rng
        others = pool  # the side input's list itself: no copy per document

        def random_document():
            candidates = len(others) - any(k == key for k, _ in others)
            if candidates < 1:
                return None
            while True:
                k, e = others[rng.randrange(len(others))]
                if k != key:
                    return local.decode_document(e)

        document = local.decode_document(encoded)
        for _ in range(self.cfg.dupe_factor):
            try:
                instances = self._builder.instances(document, random_document)
            except ValueError:  # NSP with a one-document corpus: reported by the driver
                return
            for a, b, label in instances:
                yield split, local.encode_instance(a, b, label)


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
        instances = [local.decode_instance(e) for e in encoded]
        random.Random(f"{self.cfg.seed}-{split}-{shard}").shuffle(instances)
        stats = local.empty_stats()
        directory = self.directory + ("/" + local.EVAL_DIR if split == "eval" else "")
        path = f"{directory}/{local.SHARD_PATTERN.format(shard, shards)}"
        with tf.io.TFRecordWriter(path + ".tmp") as writer:
            for start in range(0, len(instances), 1024):
                records = local.serialize_instances(
                    instances[start:start + 1024], self.cfg.max_seq_length, self._vocab,
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


def build_pipeline(pipeline, cfg, files, vocabulary, task, work_dir):
    """Adds the stages to `pipeline`; the shards and `stats.json` land in `work_dir`."""
    _require_beam()
    mask_seed = random.Random(cfg.seed).randint(0, 2**31 - 1)
    documents = (
        pipeline
        | "Files" >> beam.Create(list(enumerate(files)))
        | "Read" >> beam.FlatMap(_read_file)
        | "SpreadDocuments" >> beam.Reshuffle()
        | "Batch" >> beam.BatchElements(min_batch_size=16, max_batch_size=cfg.buffer_documents)
        | "Tokenize" >> beam.ParDo(_Tokenize(vocabulary, cfg.lower_case, cfg.eval_fraction,
                                               cfg.seed))
    )
    pool = (
        documents
        | "TrainDocuments" >> beam.Filter(lambda d: d[1] == "train")
        | "Keyed" >> beam.Map(lambda d: (d[0], d[2]))
        | "RandomNextPool" >> beam.combiners.Sample.FixedSizeGlobally(cfg.random_next_pool)
    )
    shards = {"train": cfg.num_shards, "eval": 1}
    written = (
        documents
        | "Instances" >> beam.ParDo(_Instances(cfg, task), pool=beam.pvalue.AsSingleton(pool))
        | "Shuffle" >> beam.Reshuffle()
        | "ShardKey" >> beam.Map(
            lambda s: ((s[0], random.randrange(shards[s[0]]), shards[s[0]]), s[1]))
        | "GroupShards" >> beam.GroupByKey()
        | "WriteShards" >> beam.ParDo(_WriteShard(cfg, vocabulary, work_dir, mask_seed))
    )
    counted = (
        documents
        | "CountDocuments" >> beam.Map(lambda d: {f"{d[1]}.documents": 1,
                                                  f"{d[1]}.sentences": int(d[2][0])})
    )

    def write_stats(stats):
        import tensorflow as tf

        with tf.io.gfile.GFile(f"{work_dir}/{STATS_FILE}", "w") as f:
            f.write(json.dumps(stats))

    _ = (
        (written, counted)
        | "AllStats" >> beam.Flatten()
        | "SumStats" >> beam.CombineGlobally(_merge)
        | "WriteStats" >> beam.Map(write_stats)
    )


def run_pipeline(cfg, log=print):
    """Runs the pipeline for a `CreateDataConfig` (`cfg.runner`,
    `cfg.beam_pipeline_options`); moves the shards into `cfg.output_dir`,
    writes `pretraining_data.json`, returns it. Errors are one line."""
    _require_beam()
    import tensorflow as tf
    from apache_beam.options.pipeline_options import PipelineOptions

    from tfbert.text.vocab import load_vocab

    task = local.resolve_next_sentence_task(cfg.next_sentence_task or None, cfg.use_nsp)
    if cfg.dupe_factor < 1 or cfg.num_shards < 1 or cfg.buffer_documents < 1:
        raise ValueError("dupe_factor, num_shards and buffer_documents must be >= 1.")
    if not 0.0 <= cfg.eval_fraction < 1.0:
        raise ValueError(f"eval_fraction must be in [0, 1), got {cfg.eval_fraction}.")
    files = match_files(cfg.input_files)
    vocab = load_vocab(cfg.vocab_file)  # checks the special tokens, naming the file
    if cfg.static_masking:
        from tfbert.text.masking import MaskedLMMasker

        MaskedLMMasker.from_vocab(vocab, max_predictions=cfg.max_predictions_per_seq,
                                  mask_rate=cfg.masked_lm_prob, strategy=cfg.masking_strategy)
    output_dir = cfg.output_dir.rstrip("/")
    work_dir = f"{output_dir}/.tmp-beam-{uuid.uuid4().hex[:8]}"
    tf.io.gfile.makedirs(work_dir + "/" + local.EVAL_DIR)
    try:
        options = PipelineOptions(shlex.split(cfg.beam_pipeline_options) + [f"--runner={cfg.runner}"])
        with beam.Pipeline(options=options) as pipeline:
            build_pipeline(pipeline, cfg, files, vocab.tokens, task, work_dir)
        with tf.io.gfile.GFile(f"{work_dir}/{STATS_FILE}") as f:
            totals = json.load(f)
        stats = {split: {k: int(totals.get(f"{split}.{k}", 0)) for k in local.empty_stats()}
                 for split in ("train", "eval")}
        documents = stats["train"]["documents"] + stats["eval"]["documents"]
        if task == "nsp" and documents == 1:
            raise ValueError(
                f"{cfg.input_files}: next-sentence pairs need at least 2 documents (blank "
                "line between documents); the corpus has 1. Add documents or set use_nsp=false."
            )
        if stats["train"]["instances"] == 0:
            raise ValueError(
                f"The corpus {cfg.input_files} gave no pretraining instances: it is empty or "
                "has no tokens (one sentence per line, blank line between documents)."
            )
        masker_meta = _MaskerMeta(cfg) if cfg.static_masking else None
        metadata = None
        for split, directory, shards in (("train", output_dir, cfg.num_shards),
                                         ("eval", f"{output_dir}/{local.EVAL_DIR}", 1)):
            if not stats[split]["instances"]:
                # An earlier run's held-out split would be evaluated as this one's.
                for path in tf.io.gfile.glob(f"{directory}/pretrain-*-of-*.tfrecord"):
                    tf.io.gfile.remove(path)
                if tf.io.gfile.exists(f"{directory}/{local.METADATA_FILE}"):
                    tf.io.gfile.remove(f"{directory}/{local.METADATA_FILE}")
                continue
            tf.io.gfile.makedirs(directory)
            names = [local.SHARD_PATTERN.format(i, shards) for i in range(shards)]
            source = work_dir + ("/" + local.EVAL_DIR if split == "eval" else "")
            for name in names:
                if not tf.io.gfile.exists(f"{source}/{name}"):  # no instance drew this shard
                    tf.io.TFRecordWriter(f"{source}/{name}").close()
                tf.io.gfile.rename(f"{source}/{name}", f"{directory}/{name}", overwrite=True)
            for path in tf.io.gfile.glob(f"{directory}/pretrain-*-of-*.tfrecord"):
                if path.rsplit("/", 1)[-1] not in names:  # an earlier run's shard count
                    tf.io.gfile.remove(path)
            meta = local.data_metadata(cfg.max_seq_length, task, masker_meta, vocab.vocab_size,
                                       cfg.seed, names, stats[split], split=split,
                                       runner=cfg.runner)
            if split == "train":
                metadata = meta
                if stats["eval"]["instances"]:
                    meta["eval_instances"] = stats["eval"]["instances"]
            with tf.io.gfile.GFile(f"{directory}/{local.METADATA_FILE}.tmp", "w") as f:
                f.write(json.dumps(meta, indent=2))
            tf.io.gfile.rename(f"{directory}/{local.METADATA_FILE}.tmp",
                               f"{directory}/{local.METADATA_FILE}", overwrite=True)
    finally:
        if tf.io.gfile.exists(work_dir):
            tf.io.gfile.rmtree(work_dir)
    held_out = (f"; {stats['eval']['instances']} held out in {local.EVAL_DIR}/"
                if stats["eval"]["instances"] else "")
    label = {"nsp": "random-next", "sop": "swapped", "none": "no pair label"}[task]
    train = stats["train"]
    log(f"Wrote {train['instances']} instances from {train['documents']} documents "
        f"({train['random_next']} {label}) to {cfg.num_shards} shard(s) in {output_dir} "
        f"with Beam's {cfg.runner}{held_out}.")
    return metadata


class _MaskerMeta:
    """What `data_metadata` reads of a masker."""

    def __init__(self, cfg):
        self.max_predictions = cfg.max_predictions_per_seq
