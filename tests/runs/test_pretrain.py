"""`PretrainConfig`'s layout (issue 50): the encoder and the runtime at the top,
`train:` (a TrainConfig with pretraining's defaults) and `pretrain:`; the old
flat keys load with one rename line each; runs stored flat resume."""

import dataclasses
import glob
import json
import os
import warnings

import pytest

from tfbert import config_loader
from tfbert.runs.pretrain import (OLD_KEYS, TRAIN_FIELDS, PretrainConfig, PretrainSettings,
                                  PretrainTrainConfig, _stored_in_layout, evaluation_dataset,
                                  find_eval_files, read_stored_config, stored_config)
from tfbert.train.run_config import claim_model_dir
from tfbert.train.train_config import TrainConfig

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# What the flat PretrainConfig stored in pretrain_config.json (its defaults; 41 fields).
OLD_STORED = {
    "adam_epsilon": 1e-06, "batch_size": 32, "beta_1": 0.9, "beta_2": 0.999,
    "budget_minutes": None, "checkpoint_every_epochs": 1, "clipnorm": 1.0,
    "distribution_strategy": "off", "dtype_policy": "", "dynamic_masking": True,
    "encoder_overrides": {}, "end_learning_rate": 0.0, "eval_files": "",
    "gradient_accumulation_steps": 1, "init_checkpoint": "", "jit_compile": True,
    "keep_checkpoints": 3, "learning_rate": 0.0001, "loss_spike_threshold": 0.5,
    "lower_case": True, "masked_lm_prob": 0.15, "masking_strategy": "token",
    "max_predictions_per_seq": 20, "model_dir": "", "next_sentence_task": "nsp",
    "num_devices": 0, "num_train_steps": 1000, "optimizer_type": "adamw", "power": 1.0,
    "preset": "base", "seed": 0, "shuffle_buffer": 10000, "span_boundary_objective": False,
    "steps_per_epoch": 100, "tensorboard": True, "tpu": "", "train_files": "", "verbose": 1,
    "vocab_file": "", "warmup_steps": 100, "weight_decay": 0.01,
}

# configs/pretrain_tiny.yaml as it was written in the flat layout.
OLD_TINY = """\
preset: tiny
encoder_overrides:
  dropout_rate: 0.0
  attention_dropout_rate: 0.0
masking_strategy: token
max_predictions_per_seq: 10
batch_size: 32
num_train_steps: 500
warmup_steps: 50
steps_per_epoch: 50
learning_rate: 2.0e-3
beta_2: 0.98
optimizer_type: adamw
weight_decay: 0.01
clipnorm: 1.0
jit_compile: true
shuffle_buffer: 2000
"""


def caught_messages(action):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = action()
    assert all(w.category is FutureWarning for w in caught), [str(w.message) for w in caught]
    return result, [str(w.message) for w in caught]


def test_defaults_are_pretrainings_and_finetunings_stay_finetunings():
    train = PretrainConfig().train
    assert isinstance(train, TrainConfig)
    assert (train.batch_size, train.learning_rate, train.adam_epsilon, train.seed,
            train.steps_per_epoch, train.verbose, train.clipnorm) == (32, 1e-4, 1e-6, 0, 100, 1, 1.0)
    finetune = TrainConfig()
    assert (finetune.batch_size, finetune.learning_rate, finetune.adam_epsilon, finetune.seed,
            finetune.steps_per_epoch, finetune.verbose) == (None, None, 1e-8, 42, None, 2)
    with pytest.raises(ValueError, match="clipnorm"):
        TrainConfig(clipnorm=0.0)  # fine-tuning still refuses 0; pretraining's 0 is no clipping
    assert PretrainTrainConfig(clipnorm=0.0).clipnorm == 0.0
    # A TrainConfig given in Python: the fields left at fine-tuning's defaults take pretraining's.
    given = PretrainConfig(train=TrainConfig(batch_size=64, seed=42)).train
    assert type(given) is PretrainTrainConfig
    assert (given.batch_size, given.learning_rate, given.seed) == (64, 1e-4, 0)


def test_the_old_defaults_are_the_new_ones():
    """The flat config's defaults, read into the new layout, are the new
    layout's defaults: no result of a run changes."""
    cfg, messages = caught_messages(lambda: read_stored_config(dict(OLD_STORED)))
    assert messages == []  # a stored config: the user did not write the old names
    assert cfg == PretrainConfig()


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "configs", "pretrain*.yaml"))))
def test_shipped_configs_use_the_layout(path):
    cfg, messages = caught_messages(lambda: config_loader.load(PretrainConfig, path))
    assert messages == []
    with open(path, encoding="utf-8") as f:
        keys = set(config_loader.load_yaml(f))
    assert keys <= {"train", "pretrain", "preset", "encoder", "init_checkpoint"}
    assert cfg.train.verbose == 1 and cfg.train.seed == 0


def test_an_old_flat_yaml_loads_with_one_line_per_key(tmp_path):
    old = tmp_path / "old.yaml"
    old.write_text(OLD_TINY)
    cfg, messages = caught_messages(lambda: config_loader.load(PretrainConfig, str(old)))
    new = config_loader.load(PretrainConfig, os.path.join(ROOT, "configs", "pretrain_tiny.yaml"))
    assert cfg == new
    section = {"encoder_overrides": "encoder"}
    expected = []
    for line in OLD_TINY.splitlines():
        key = line.split(":")[0]
        if line and not line.startswith(" "):
            if key in section:
                expected.append(f"{old}: {key} is deprecated: use {section[key]}.")
            elif key != "preset":
                where = "train" if key in TRAIN_FIELDS else "pretrain"
                expected.append(f"{old}: {key} is deprecated: use {where}.{key}.")
    assert messages == expected
    assert all("\n" not in m for m in messages)


def test_every_old_flat_key_has_a_new_place():
    new_fields = ({f"train.{f.name}" for f in dataclasses.fields(PretrainTrainConfig)}
                  | {f"pretrain.{f.name}" for f in dataclasses.fields(PretrainSettings)}
                  | {f.name for f in dataclasses.fields(PretrainConfig)})
    flat_moved = set(OLD_STORED) - {f.name for f in dataclasses.fields(PretrainConfig)}
    assert flat_moved <= set(OLD_KEYS)
    for old, new in OLD_KEYS.items():
        new = new[0] if isinstance(new, tuple) else new
        assert new in new_fields, (old, new)


def test_set_flags_and_keywords_take_the_old_names():
    overrides = config_loader.parse_overrides(["batch_size=8", "encoder_overrides.num_layers=1",
                                               "pretrain.warmup_steps=5"])
    cfg, messages = caught_messages(lambda: config_loader.load(PretrainConfig, None, overrides))
    assert (cfg.train.batch_size, cfg.encoder, cfg.pretrain.warmup_steps) == (
        8, {"num_layers": 1}, 5)
    assert messages == ["--set batch_size is deprecated: use train.batch_size.",
                        "config: encoder_overrides is deprecated: use encoder."]
    cfg, messages = caught_messages(lambda: PretrainConfig(num_train_steps=200, seed=3))
    assert (cfg.pretrain.num_train_steps, cfg.train.seed) == (200, 3)
    assert messages == [
        "PretrainConfig.num_train_steps is deprecated: use PretrainConfig.pretrain.num_train_steps.",
        "PretrainConfig.seed is deprecated: use PretrainConfig.train.seed."]


def test_bad_keys_and_values_are_one_line_naming_the_key(tmp_path, raises_one_line_from_tfbert):
    def load(text=None, *sets):
        path = None
        if text is not None:
            path = tmp_path / "bad.yaml"
            path.write_text(text)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return config_loader.load(PretrainConfig, path and str(path),
                                      config_loader.parse_overrides(sets))

    check = raises_one_line_from_tfbert
    check("unknown train key", lambda: load("train:\n  batch_sise: 8\n"),
          r"bad\.yaml:train: unknown key\(s\) \['batch_sise'\]")
    check("unknown pretrain key", lambda: load(None, "pretrain.num_steps=8"),
          r"unknown key\(s\) \['num_steps'\] for PretrainSettings")
    check("unknown top key", lambda: load("batch: 8\n"), r"bad\.yaml: unknown key\(s\) \['batch'\]")
    check("bad value, new key", lambda: load("train:\n  batch_size: lots\n"),
          r"bad\.yaml:train: batch_size: expected an integer, got 'lots'")
    check("bad value, old key", lambda: load("batch_size: lots\n"),
          r"bad\.yaml:train: batch_size: expected an integer, got 'lots'")
    check("bad value, --set", lambda: load(None, "pretrain.masked_lm_prob=2"),
          r"--set pretrain\.masked_lm_prob=2: must be in \[0\.0, 1\.0\)")
    check("old and new key", lambda: load("batch_size: 8\ntrain:\n  batch_size: 16\n"),
          r"bad\.yaml: batch_size and train\.batch_size are one setting")
    check("fine-tuning field", lambda: load("train:\n  epochs: 3\n"),
          r"bad\.yaml:train: train\.epochs is a fine-tuning setting")
    check("across sections", lambda: load("pretrain:\n  num_train_steps: 250\n"),
          r"bad\.yaml: pretrain\.num_train_steps \(250\) must be a multiple of "
          r"train\.steps_per_epoch \(100\)")
    check("section not a mapping", lambda: load("train: 3\n"), r"bad\.yaml: .*train.*3")


def test_a_run_stored_flat_resumes(tmp_path):
    """pretrain_config.json of the flat layout (and of the names before it:
    `mixed_precision`, `use_nsp` beside `next_sentence_task`) resumes under
    the same config, warn-free, and refuses a changed one naming the new key."""
    olds = [dict(OLD_STORED, num_train_steps=500, encoder_overrides={"num_layers": 2}),
            {**{k: v for k, v in OLD_STORED.items() if k not in ("dtype_policy",
                                                                  "next_sentence_task")},
             "mixed_precision": "", "use_nsp": True, "next_sentence_task": "",
             "num_train_steps": 500, "encoder_overrides": {"num_layers": 2}}]
    for old in olds:
        model_dir = tmp_path / str(len(old))
        model_dir.mkdir()
        (model_dir / "pretrain_config.json").write_text(json.dumps(old))
        cfg = PretrainConfig(pretrain={"num_train_steps": 500}, encoder={"num_layers": 2})

        def claim(cfg):
            claim_model_dir(str(model_dir), stored_config(cfg), name="pretrain_config.json",
                            renamed=config_loader.renamed_keys(PretrainConfig),
                            upgrade=_stored_in_layout)

        _, messages = caught_messages(lambda: claim(cfg))
        assert messages == []
        changed = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, batch_size=64))
        with pytest.raises(ValueError, match=r"train\.batch_size: 32 -> 64"):
            claim(changed)
        # Only the runtime steps_per_execution may change on resume.
        claim(dataclasses.replace(cfg, pretrain=dataclasses.replace(cfg.pretrain,
                                                                    steps_per_execution=5)))
        # export_step reads it back as a config.
        read, messages = caught_messages(lambda: read_stored_config(old))
        assert messages == [] and read == cfg


def test_the_evaluation_split_is_found_and_its_length_declared(tmp_path):
    """The run evaluates the shards' eval/ split with a declared length: with an
    unknown one, Keras' fit waited ~24 s per epoch (docs/pretraining.md)."""
    from tfbert.data.pretraining.writer import write_pretraining_data
    from tfbert.text.masking import MaskedLMMasker
    from tfbert.text.tokenizer import BertTokenizer

    data = os.path.join(ROOT, "tests", "data", "pretraining")
    docs = open(os.path.join(data, "corpus.txt"), encoding="utf-8").read().split("\n\n")[:60]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    vocab = os.path.join(data, "vocab.txt")
    meta = write_pretraining_data(str(corpus), str(tmp_path / "shards"),
                                  BertTokenizer(vocab_file=vocab, lower_case=True),
                                  seq_length=64, eval_fraction=0.2, log=lambda *_: None)
    cfg = PretrainConfig(pretrain={"train_files": str(tmp_path / "shards" / "*.tfrecord")})
    eval_files = find_eval_files(cfg)
    assert eval_files and "eval" in eval_files
    masker = MaskedLMMasker.from_vocab(vocab, max_predictions=8)
    dataset = evaluation_dataset(cfg, eval_files, 8, masker)
    batches = -(-meta["eval_instances"] // 8)
    assert int(dataset.cardinality()) == batches > 1
    assert sum(1 for _ in dataset) == batches  # the declared length is the real one
