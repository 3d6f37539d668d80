"""Run drivers: one library call per script. `finetune.run_experiment`
(`tools/finetune.py`), `pretrain.run` (`tools/pretrain.py`), `distill.distill`
(`tools/distill.py`), `export.export` (`tools/export.py`). Each takes the run's config dataclass
(`tfbert.config_loader` loads it from YAML and `--set`) and knows no flags.
"""
