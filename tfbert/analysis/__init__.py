"""What each layer knows: word vectors of every layer streamed to disk
(`layer_features`), probes trained on them beside their controls
(`tag_probe`, `structural_probe`, `sense_probe`), the geometry of the
layers (`geometry`), what attention heads attend to (`head_statistics`)
how much the loss needs each head (`head_importance`, Michel et al. 2019)
and which heads to remove (`head_pruning`);
`probe_run.run_probe` is one analysis as `tools/probe.py` runs it. Inputs:
CoNLL-U (`conllu`) and word-sense JSONL (`sense_items`).

The models analysed (a checkpoint, a strings-in model, an encoder with its
preprocessor) come from `tfbert.encoder` and `tfbert.models`; this package
takes them as arguments, as `tfbert.retrieval` does.
"""

from tfbert.analysis.layer_features import LayerFeatures
from tfbert.analysis.probe_run import ProbeConfig, run_probe

__all__ = ["LayerFeatures", "ProbeConfig", "run_probe"]
