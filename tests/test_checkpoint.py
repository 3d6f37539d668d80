import json
import os
import signal
import stat
import subprocess
import sys
import threading

import numpy as np
import pytest

from tfbert import BertConfig, BertEncoder, checkpoint


@pytest.fixture()
def vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                              + [f"w{i}" for i in range(95)]) + "\n")
    return str(path)


@pytest.fixture()
def tiny_encoder():
    return BertEncoder(BertConfig.from_preset("tiny", vocab_size=100))


def test_save_and_load_round_trip(tmp_path, vocab_file, tiny_encoder):
    out = tmp_path / "ckpt"
    heads = {"nsp": {"kernel": np.ones((128, 2), "float32"), "bias": np.zeros(2, "float32")}}
    checkpoint.save_checkpoint(str(out), tiny_encoder.config, tiny_encoder.get_named_weights(),
                               vocab_file, lower_case=False, head_weights=heads, source="test")
    assert sorted(os.listdir(out)) == ["config.json", "model.safetensors", "vocab.txt"]
    # No temporary directories are left behind.
    assert sorted(os.listdir(tmp_path)) == ["ckpt", "vocab.txt"]
    ckpt = checkpoint.read_checkpoint(str(out))
    assert ckpt.config == tiny_encoder.config and ckpt.lower_case is False
    assert ckpt.source == "test"
    np.testing.assert_array_equal(ckpt.prefixed_weights("nsp")["kernel"], heads["nsp"]["kernel"])
    loaded = BertEncoder.from_pretrained(str(out))
    for name, value in tiny_encoder.get_named_weights().items():
        np.testing.assert_array_equal(loaded.get_named_weights()[name], value)


def test_overwrite_replaces_whole_directory(tmp_path, vocab_file, tiny_encoder):
    out = str(tmp_path / "ckpt")
    weights = tiny_encoder.get_named_weights()
    checkpoint.save_checkpoint(out, tiny_encoder.config, weights, vocab_file, True)
    open(os.path.join(out, "stale.txt"), "w").close()
    checkpoint.save_checkpoint(out, tiny_encoder.config, weights, vocab_file, True)
    assert "stale.txt" not in os.listdir(out)


def test_mismatched_config_names_the_weight(tmp_path, vocab_file, tiny_encoder):
    out = str(tmp_path / "ckpt")
    checkpoint.save_checkpoint(out, tiny_encoder.config, tiny_encoder.get_named_weights(),
                               vocab_file, True)
    meta = json.load(open(os.path.join(out, "config.json")))
    meta["encoder"]["intermediate_size"] = 256
    json.dump(meta, open(os.path.join(out, "config.json"), "w"))
    with pytest.raises(ValueError, match=r"intermediate_dense/kernel: shape \(128, 512\) in "
                                         r".*model\.safetensors, encoder expects \(128, 256\)"):
        BertEncoder.from_pretrained(out)


def test_missing_and_extra_weights(tiny_encoder):
    weights = tiny_encoder.get_named_weights()
    weights.pop("pooler/bias")
    weights["pooler/scale"] = np.ones(3)
    with pytest.raises(ValueError, match=r"missing weights \['pooler/bias'\].*unexpected "
                                         r"weights \['pooler/scale'\]"):
        tiny_encoder.set_named_weights(weights)


def test_broken_directories(tmp_path, vocab_file, tiny_encoder):
    with pytest.raises(FileNotFoundError, match="directory not found"):
        checkpoint.read_checkpoint(str(tmp_path / "none"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="config.json is missing"):
        checkpoint.read_checkpoint(str(tmp_path / "empty"))
    out = str(tmp_path / "ckpt")
    checkpoint.save_checkpoint(out, tiny_encoder.config, tiny_encoder.get_named_weights(),
                               vocab_file, True)
    weights = os.path.join(out, "model.safetensors")
    data = open(weights, "rb").read()
    open(weights, "wb").write(data[: len(data) // 2])
    with pytest.raises(ValueError, match="model.safetensors: cannot read safetensors"):
        checkpoint.read_checkpoint(out)
    os.remove(os.path.join(out, "vocab.txt"))
    with pytest.raises(FileNotFoundError, match="has no vocab.txt"):
        checkpoint.read_checkpoint(out)
    with pytest.raises(FileNotFoundError, match="Vocabulary file not found"):
        checkpoint.save_checkpoint(str(tmp_path / "x"), tiny_encoder.config, {}, "nope.txt", True)


def test_atomic_dir_keeps_old_output_on_failure(tmp_path):
    out = tmp_path / "artifact"
    with checkpoint.atomic_dir(str(out)) as tmp:
        (tmp_path / tmp / "v1.txt").write_text("1")
    with pytest.raises(RuntimeError):
        with checkpoint.atomic_dir(str(out)) as tmp:
            open(os.path.join(tmp, "v2.txt"), "w").close()
            raise RuntimeError("killed mid-write")
    assert os.listdir(out) == ["v1.txt"]
    assert os.listdir(tmp_path) == ["artifact"]


# === Destinations: modes, stale temporaries, atomic replacement, bad targets ===


def test_atomic_dir_result_has_umask_mode(tmp_path):
    from tfbert.checkpoint import atomic_dir

    old = os.umask(0o022)
    try:
        with atomic_dir(str(tmp_path / "export")) as tmp:
            open(os.path.join(tmp, "saved_model.pb"), "w").close()
    finally:
        os.umask(old)
    # Readable by another user (TF Serving), not the temporary dir's 0700.
    assert stat.S_IMODE(os.stat(tmp_path / "export").st_mode) == 0o755


def test_stale_temporaries_of_killed_runs_are_removed(tmp_path, run_python):
    out = str(tmp_path / "export")
    # A run killed mid-write (SIGKILL) leaves its temporary directory behind.
    code = (f"import os, signal\nfrom tfbert.checkpoint import atomic_dir\n"
            f"with atomic_dir({out!r}) as tmp:\n"
            f"    open(os.path.join(tmp, 'half'), 'w').close()\n"
            f"    os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert proc.returncode == -signal.SIGKILL
    assert [n for n in os.listdir(tmp_path) if n.startswith(".export.tmp-")]
    # The next run (a new process) cleans up as it writes.
    run_python(f"import os\nfrom tfbert.checkpoint import atomic_dir\n"
               f"with atomic_dir({out!r}) as tmp:\n"
               f"    open(os.path.join(tmp, 'full'), 'w').close()\n")
    assert sorted(os.listdir(tmp_path)) == ["export"]
    assert os.listdir(out) == ["full"]


def test_replacing_an_export_never_leaves_no_directory(tmp_path):
    from tfbert.checkpoint import replace_dir

    dst = tmp_path / "export"
    dst.mkdir()
    missing, stop = [], threading.Event()

    def watch():
        while not stop.is_set():
            if not os.path.isdir(dst):
                missing.append(1)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for i in range(300):
            src = tmp_path / f"new{i}"
            src.mkdir()
            (src / "version").write_text(str(i))
            replace_dir(str(src), str(dst))
    finally:
        stop.set()
        watcher.join()
    assert not missing
    assert (dst / "version").read_text() == "299"
    assert sorted(os.listdir(tmp_path)) == ["export"]


def test_unwritable_destination_is_one_line(tmp_path):
    from tfbert.checkpoint import DestinationError, atomic_dir

    if os.geteuid() == 0:  # root ignores permissions: use a read-only file system path
        target = "/proc/tfbert-export"
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = str(locked / "export")
    with pytest.raises(DestinationError, match=r"^Cannot write .*export: [^\n]+\.$"):
        with atomic_dir(target):
            pass
