r"""Pictures of a model and a run, as PNG files (matplotlib, imported only
when a picture is drawn).

- `draw_attention(checkpoint_dir, text, output)`: attention maps, a layer x head
  grid of heatmaps with the wordpieces on the axes;
- `draw_curves(model_dir, output)`: loss per epoch and the dev metrics, from a
  run's `log.csv`;
- `draw_confusion(model_dir, output)`: the confusion matrix of the dev
  predictions (`dev_predictions.tsv`) that a classification run wrote;
- `draw_probe(results_json, output)`: a `tools/probe.py` analysis, scores by
  layer beside their controls, the scalar-mix weights (tags), heads x layers
  heatmaps (heads).

Each returns the path it wrote; `tools/visualize.py` is these calls.
"""

import csv
import json
import os

import numpy as np

from tfbert.encoder import BertEncoder
from tfbert.text.preprocessor import BertPreprocessor


def _pyplot():
    """matplotlib.pyplot, drawing to files (imported here, when a picture is drawn)."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def draw_attention(checkpoint_dir, text, output, text_b=None, layers=None):
    """Attention probabilities of every head of the chosen layers for one input:
    a layer x head grid of heatmaps, wordpieces on the axes (`layers`: indices,
    default all)."""
    pre = BertPreprocessor.from_pretrained(checkpoint_dir, seq_length=128)
    encoder = BertEncoder.from_pretrained(checkpoint_dir, return_attention_probs=True)
    inputs = pre([[text]] + ([[text_b]] if text_b else []))
    length = int(inputs["input_mask"].numpy().sum())
    tokens = [t.decode() for t in pre.id_to_token(inputs["input_word_ids"][0, :length]).numpy()]
    probs = encoder({k: v[:, :length] for k, v in inputs.items()})["attention_probs"]
    layers = [int(i) for i in layers] if layers else list(range(len(probs)))
    heads = probs[0].shape[1]
    plt = _pyplot()
    size = max(2.0, 0.18 * length)
    fig, axes = plt.subplots(len(layers), heads, figsize=(size * heads, size * len(layers)),
                             squeeze=False)
    for row, layer in enumerate(layers):
        for head in range(heads):
            ax = axes[row][head]
            ax.imshow(np.asarray(probs[layer][0, head]), cmap="viridis", vmin=0, vmax=1)
            ax.set_title(f"layer {layer} head {head}", fontsize=8)
            ax.set_xticks(range(length), tokens, rotation=90, fontsize=6)
            ax.set_yticks(range(length), tokens, fontsize=6)
    fig.tight_layout()
    fig.savefig(output, dpi=80)
    plt.close(fig)
    return output


def read_log(model_dir):
    """`(path, rows)` of `<model_dir>/log.csv`, one dict per finished epoch."""
    path = os.path.join(model_dir, "log.csv")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No training log: {path} (written by tools/finetune.py and "
                                "tools/pretrain.py).")
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{path}: no finished epoch yet.")
    return path, rows


def draw_curves(model_dir, output):
    """Training loss (and other losses) and the dev metrics per epoch."""
    path, rows = read_log(model_dir)
    epochs = [int(r["epoch"]) + 1 for r in rows]

    def number(text):  # CSVLogger writes "NA" for a missing value
        try:
            return float(text)
        except (TypeError, ValueError):
            return float("nan")

    def series(names):
        found = {n: [number(r.get(n)) for r in rows] for n in names}
        return {n: v for n, v in found.items() if any(x == x for x in v)}  # not all NaN

    losses = series([k for k in rows[0] if k.endswith("loss")])
    scores = series([k for k in rows[0] if k.startswith("dev_") or k.endswith("accuracy")])
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for name, values in losses.items():
        left.plot(epochs, values, marker="o", label=name)
    left.set(title="loss", xlabel="epoch")
    for name, values in scores.items():
        right.plot(epochs, values, marker="o", label=name)
    right.set(title="metrics", xlabel="epoch")
    for ax in (left, right):
        if ax.lines:
            ax.legend(fontsize=8)
    fig.suptitle(path, fontsize=8)
    fig.tight_layout()
    fig.savefig(output, dpi=80)
    plt.close(fig)
    return output


def draw_confusion(model_dir, output):
    """Gold x predicted label counts from `<model_dir>/dev_predictions.tsv`."""
    path = os.path.join(model_dir, "dev_predictions.tsv")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No dev predictions: {path} (tools/finetune.py writes it for "
                                "classification tasks).")
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    if not rows:
        raise ValueError(f"{path}: no predictions.")
    labels = sorted({r["gold"] for r in rows} | {r["predicted"] for r in rows})
    index = {l: i for i, l in enumerate(labels)}
    counts = np.zeros((len(labels), len(labels)), np.int64)
    for r in rows:
        counts[index[r["gold"]], index[r["predicted"]]] += 1
    plt = _pyplot()
    size = 2 + 0.6 * len(labels)
    # At least 4 inches: the title (accuracy and count) fits above small matrices.
    fig, ax = plt.subplots(figsize=(max(size, 4.0), max(size, 3.5)))
    ax.imshow(counts, cmap="Blues")
    for i in range(len(labels)):
        for j in range(len(labels)):
            ax.text(j, i, str(counts[i, j]), ha="center", va="center",
                    color="white" if counts[i, j] > counts.max() / 2 else "black")
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    ax.set(xlabel="predicted", ylabel="gold",
           title=f"dev accuracy {np.trace(counts) / counts.sum():.3f} ({counts.sum()} examples)")
    fig.tight_layout()
    fig.savefig(output, dpi=80)
    plt.close(fig)
    return output


def draw_probe(results_json, output):
    """The `results.json` of `tools/probe.py`: the main score by layer with its
    controls (random init; the control task, the most-frequent-sense
    baseline), then the mix weights (tags) or one layers x heads heatmap per
    attention statistic (heads)."""
    if not os.path.isfile(results_json):
        raise FileNotFoundError(f"No probe results: {results_json} (written by tools/probe.py).")
    with open(results_json, encoding="utf-8") as f:
        results = json.load(f)
    missing = [k for k in ("task", "metric", "layers", "per_layer") if k not in results]
    if missing:
        raise ValueError(f"{results_json}: not a tools/probe.py result (no {missing[0]!r}).")
    plt = _pyplot()
    layers = results["layers"]
    extra = results.get("statistics") or {}
    panels = 1 + (1 if results.get("mix_weights") else 0) + len(extra)
    fig, axes = plt.subplots(1, panels, figsize=(5 * min(panels, 2) + 2.5 * max(panels - 2, 0),
                                                 4), squeeze=False)
    axes = axes[0]
    ax = axes[0]

    def values(key):
        return [float("nan") if v is None else v for v in results[key]]

    ax.plot(layers, values("per_layer"), marker="o", label=results["task"])
    if results.get("per_layer_spread"):
        mean, spread = np.array(values("per_layer")), np.array(values("per_layer_spread"))
        ax.fill_between(layers, mean - spread, mean + spread, alpha=0.2)
    for key, label in (("random_init_per_layer", "random init"),
                       ("control_task_per_layer", "control task")):
        if results.get(key):
            ax.plot(layers, values(key), marker=".", linestyle="--", label=label)
    for key, label in (("baseline", "most frequent sense"), ("majority_baseline", "majority")):
        if isinstance(results.get(key), (int, float)):
            ax.axhline(results[key], color="grey", linestyle=":", label=label)
    ax.set(xlabel="layer (0 = embeddings)", ylabel=results["metric"], title=results["task"])
    ax.legend(fontsize=8)
    panel = 1
    if results.get("mix_weights"):
        axes[panel].bar(layers, results["mix_weights"])
        axes[panel].set(xlabel="layer", ylabel="softmax weight",
                        title=f"scalar mix (E[l] = {results.get('expected_layer') or 0:.2f})")
        panel += 1
    for name, grid in extra.items():
        image = axes[panel].imshow(np.array(grid, dtype=float).T, aspect="auto", cmap="viridis")
        axes[panel].set(xlabel="layer", ylabel="head", title=name)
        axes[panel].set_xticks(range(len(layers)), layers)
        axes[panel].set_yticks(range(len(grid[0])))
        fig.colorbar(image, ax=axes[panel])
        panel += 1
    fig.tight_layout()
    fig.savefig(output, dpi=80)
    plt.close(fig)
    return output
