"""The CPU inference engines the benchmarks run beside tfbert, and the machine they run on.

ONNX Runtime on the transformer optimizer's fused graph (fp32, dynamic int8),
OpenVINO, LiteRT with XNNPACK; the CPU's model and fast-path flags; the load
average printed beside each row. `bench_peers` (same weights in every engine)
and `bench_latency` (serving latency from strings) use them.
"""

import os

SEQ = 128  # the sequence length of the peers' rows and the ONNX export's default


def load_average():
    """The 1-minute load average: a busy machine makes every number smaller."""
    return round(os.getloadavg()[0], 2)


def cpu_info():
    """CPU model name and the flags that decide the fast paths (from
    /proc/cpuinfo; `lscpu` shows the same)."""
    model, flags = "unknown", set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "unknown":
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    wanted = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni",
              "amx_tile", "amx_bf16", "amx_int8", "avx512_fp16")
    return {"model": model, "cores": os.cpu_count(),
            "flags": [name for name in wanted if name in flags]}


def export_onnx(model_dir, path, seq=SEQ):
    """transformers `BertModel` -> ONNX (TorchScript exporter, opset 17),
    batch and sequence dynamic, outputs `last_hidden_state` and
    `pooler_output`. Eager attention: ONNX Runtime's transformer optimizer
    fuses its pattern into `Attention` (the SDPA export is left unfused)."""
    import torch
    import transformers

    model = transformers.BertModel.from_pretrained(model_dir, attn_implementation="eager").eval()

    class Outputs(torch.nn.Module):
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                            token_type_ids=token_type_ids)
            return out.last_hidden_state, out.pooler_output

    names = ["input_ids", "attention_mask", "token_type_ids"]
    ids = torch.ones((2, seq), dtype=torch.long)
    torch.onnx.export(Outputs(model), (ids, ids, torch.zeros_like(ids)), path,
                      input_names=names, output_names=["last_hidden_state", "pooler_output"],
                      dynamic_axes={n: {0: "batch", 1: "seq"} for n in names},
                      opset_version=17, dynamo=False)
    return model.config


def onnx_variants(model_dir, workdir, seq=SEQ):
    """{"fp32": fused model path, "int8": its dynamic int8 quantization,
    "plain": the unoptimized export} plus the fused-operator counts."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    plain = os.path.join(workdir, "model.onnx")
    config = export_onnx(model_dir, plain, seq)
    fused = optimizer.optimize_model(plain, model_type="bert", num_heads=config.num_attention_heads,
                                     hidden_size=config.hidden_size)
    stats = {k: v for k, v in fused.get_fused_operator_statistics().items() if v}
    paths = {"plain": plain, "fp32": os.path.join(workdir, "model_fused.onnx"),
             "int8": os.path.join(workdir, "model_fused_int8.onnx")}
    fused.save_model_to_file(paths["fp32"])
    # The fused ops (Attention, SkipLayerNormalization...) are com.microsoft
    # ops that ONNX shape inference cannot type: float is their type here.
    quantize_dynamic(paths["fp32"], paths["int8"], weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return paths, stats


def ort_session(path, threads=None):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or os.cpu_count()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def openvino_model(onnx_path, precision=None):
    """OpenVINO compiled for the CPU: `precision="f32"` forces fp32; None
    keeps OpenVINO's default (bf16 where the CPU has AMX / AVX-512 BF16).
    Returns (compiled model, the precision it runs)."""
    import openvino as ov

    core = ov.Core()
    config = {"INFERENCE_PRECISION_HINT": precision} if precision else {}
    compiled = core.compile_model(core.read_model(onnx_path), "CPU", config)
    return compiled, str(compiled.get_property("INFERENCE_PRECISION_HINT"))


def tflite_interpreter(path, threads=None, custom_ops=False):
    """LiteRT with its default XNNPACK delegate (latest features on: XNNPACK
    then runs dynamic-range int8 fully-connected layers with int8 kernels)."""
    from ai_edge_litert import interpreter as litert

    kwargs = dict(model_path=path, num_threads=threads or os.cpu_count(),
                  experimental_default_delegate_latest_features=True)
    if custom_ops:
        import tensorflow_text as tf_text

        return litert.InterpreterWithCustomOps(
            custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS, **kwargs)
    return litert.Interpreter(**kwargs)
