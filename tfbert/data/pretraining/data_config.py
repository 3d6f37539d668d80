"""One pretraining-data run: its settings (`PretrainingDataConfig`, the
fields of `tools/create_pretraining_data.py`) and `create_pretraining_data`,
which runs the local writer or the Apache Beam pipeline on them, and
`summary_lines`, what the end of a run prints."""

import dataclasses

from tfbert import config_loader
from tfbert.data.pretraining.writer import write_pretraining_data
from tfbert.data.pretraining.instances import NEXT_SENTENCE_TASKS, next_sentence_task_of
from tfbert.text.masking import STRATEGIES as MASKING_STRATEGIES, MaskedLMMasker
from tfbert.text.tokenizer import BertTokenizer


# Old names, one release: `use_nsp` (the pair task), `max_seq_length` (the
# house name is seq_length, as in every task's config).
@config_loader.renamed(use_nsp=("next_sentence_task", next_sentence_task_of),
                       max_seq_length="seq_length")
@dataclasses.dataclass
class PretrainingDataConfig:
    """The settings of one pretraining-data run (`tools/create_pretraining_data.py`
    flags, YAML keys and `--set`); `runner` empty runs the local writer."""

    input_files: str = ""
    output_dir: str = ""
    vocab_file: str = ""
    lower_case: bool = True
    seq_length: int = config_loader.at_least(5, 128)  # [CLS] a [SEP] b [SEP]
    short_seq_prob: float = config_loader.in_range(0.0, 1.0, 0.1)
    dupe_factor: int = config_loader.at_least(1, 1)
    num_shards: int = config_loader.at_least(1, 1)
    seed: int = 12345
    # nsp (BERT's next sentence) | sop (ALBERT's sentence order) | none (MLM only).
    next_sentence_task: str = config_loader.one_of(NEXT_SENTENCE_TASKS, "nsp")
    static_masking: bool = False
    masking_strategy: str = config_loader.one_of(MASKING_STRATEGIES, "token")
    masked_lm_prob: float = config_loader.in_range(0.0, 1.0, 0.15, high_open=True)
    max_predictions_per_seq: int = config_loader.at_least(1, 20)
    # Documents tokenized at a time.
    buffer_documents: int = config_loader.at_least(1, 1000)
    # Reservoir of documents for random "next" segments.
    random_next_pool: int = config_loader.at_least(2, 10000)
    # Instances per temporary shuffle bucket (memory unit).
    bucket_instances: int = config_loader.at_least(1, 50000)
    # Share of documents held out in <output_dir>/eval/.
    eval_fraction: float = config_loader.in_range(0.0, 1.0, 0.01, high_open=True)
    runner: str = ""  # empty: the local writer; else an Apache Beam runner
    beam_pipeline_options: str = ""  # more Beam options, e.g. "--project=p --region=r"
    dask_address: str = ""  # --runner=DaskRunner: the scheduler, e.g. tcp://10.0.0.5:8786

    def __post_init__(self):
        config_loader.validate(self)


def create_pretraining_data(cfg, log=print):
    """Writes the shards and `pretraining_data.json` that `cfg` describes, with
    the local writer or, with `cfg.runner`, Apache Beam; returns the metadata."""
    for name in ("input_files", "output_dir", "vocab_file"):
        if not getattr(cfg, name):
            raise ValueError(f"--{name} is required.")
    if cfg.runner:
        from tfbert.data.pretraining.beam import run_pipeline

        return run_pipeline(cfg, log=log)
    if cfg.dask_address:
        raise ValueError("--dask_address is for --runner=DaskRunner.")
    tokenizer = BertTokenizer(vocab_file=cfg.vocab_file, lower_case=cfg.lower_case)
    masker = None
    if cfg.static_masking:
        masker = MaskedLMMasker.from_vocab(
            tokenizer.vocab,
            max_predictions=cfg.max_predictions_per_seq,
            mask_rate=cfg.masked_lm_prob,
            strategy=cfg.masking_strategy,
        )
    return write_pretraining_data(
        cfg.input_files,
        cfg.output_dir,
        tokenizer,
        seq_length=cfg.seq_length,
        short_seq_prob=cfg.short_seq_prob,
        dupe_factor=cfg.dupe_factor,
        num_shards=cfg.num_shards,
        seed=cfg.seed,
        masker=masker,
        buffer_documents=cfg.buffer_documents,
        next_sentence_task=cfg.next_sentence_task,
        random_next_pool=cfg.random_next_pool,
        bucket_instances=cfg.bucket_instances,
        eval_fraction=cfg.eval_fraction,
        log=log,
    )


def summary_lines(summary):
    """What the end of a run prints (the `summary` of pretraining_data.json)."""
    skipped = summary["documents_skipped"]
    reasons = ", ".join(f"{n} {r.replace('_', ' ')}" for r, n in skipped.items() if n) or "none"
    files = summary["files"]
    docs, inst, shards = summary["documents"], summary["instances"], summary["num_shards"]
    return [
        f"Summary ({summary['runner']}):",
        f"  documents read     {summary['documents_read']:,} ({summary['sentences_read']:,} "
        f"sentences) from {len(files)} file(s)",
        f"  documents skipped  {sum(skipped.values()):,} ({reasons})",
        f"  documents used     train {docs['train']:,}, eval {docs['eval']:,}",
        f"  instances written  train {inst['train']:,} in {shards['train']} shard(s), "
        f"eval {inst['eval']:,} in {shards['eval']} shard(s)",
    ]
