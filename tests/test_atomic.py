"""tfbert.atomic: files and directories published by rename, never half-written."""

import os
import signal
import stat
import subprocess
import sys
import threading

import pytest

from tfbert.atomic import DestinationError, atomic_dir, atomic_file, replace_dir, write_json


def test_atomic_file_keeps_old_file_on_failure_and_gets_umask_mode(tmp_path):
    path = tmp_path / "results.json"
    write_json(str(path), {"a": 1})
    with pytest.raises(RuntimeError):
        with atomic_file(str(path)) as tmp:
            with open(tmp, "w") as f:
                f.write("{half")
            raise RuntimeError("killed mid-write")
    assert path.read_text() == '{\n  "a": 1\n}' and os.listdir(tmp_path) == ["results.json"]
    old = os.umask(0o022)
    try:
        with atomic_file(str(tmp_path / "m.weights.h5"), suffix=".weights.h5") as tmp:
            assert tmp.endswith(".weights.h5")
            open(tmp, "w").close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "m.weights.h5").st_mode) == 0o644


def test_atomic_dir_keeps_old_output_on_failure(tmp_path):
    out = tmp_path / "artifact"
    with atomic_dir(str(out)) as tmp:
        (tmp_path / tmp / "v1.txt").write_text("1")
    with pytest.raises(RuntimeError):
        with atomic_dir(str(out)) as tmp:
            open(os.path.join(tmp, "v2.txt"), "w").close()
            raise RuntimeError("killed mid-write")
    assert os.listdir(out) == ["v1.txt"]
    assert os.listdir(tmp_path) == ["artifact"]


# === Destinations: modes, stale temporaries, atomic replacement, bad targets ===


def test_atomic_dir_result_has_umask_mode(tmp_path):
    
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
    code = (f"import os, signal\nfrom tfbert.atomic import atomic_dir\n"
            f"with atomic_dir({out!r}) as tmp:\n"
            f"    open(os.path.join(tmp, 'half'), 'w').close()\n"
            f"    os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert proc.returncode == -signal.SIGKILL
    assert [n for n in os.listdir(tmp_path) if n.startswith(".export.tmp-")]
    # The next run (a new process) cleans up as it writes.
    run_python(f"import os\nfrom tfbert.atomic import atomic_dir\n"
               f"with atomic_dir({out!r}) as tmp:\n"
               f"    open(os.path.join(tmp, 'full'), 'w').close()\n")
    assert sorted(os.listdir(tmp_path)) == ["export"]
    assert os.listdir(out) == ["full"]


def test_replacing_an_export_never_leaves_no_directory(tmp_path):
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
    if os.geteuid() == 0:  # root ignores permissions: use a read-only file system path
        target = "/proc/tfbert-export"
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = str(locked / "export")
    with pytest.raises(DestinationError, match=r"^Cannot write .*export: [^\n]+\.$"):
        with atomic_dir(target):
            pass


def test_write_json_to_a_url_goes_through_gfile_and_a_rename():
    """A URL (gs://... in use; TensorFlow's in-memory ram:// here) is written
    under a temporary name and renamed: only the final file is left."""
    import tensorflow as tf

    path = "ram://atomic-test/out/meta.json"
    write_json(path, {"a": 1})
    write_json(path, {"a": 2})
    with tf.io.gfile.GFile(path) as f:
        assert f.read() == '{\n  "a": 2\n}'
    assert tf.io.gfile.listdir("ram://atomic-test/out") == ["meta.json"]


@pytest.mark.parametrize("target", ["", ".", ".."])
def test_the_current_directory_and_its_parents_are_never_replaced(tmp_path, monkeypatch, target):
    """An export to "" once replaced a whole working tree (the current directory)."""
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "keep.txt").write_text("mine")
    monkeypatch.chdir(work / "src")
    with pytest.raises(DestinationError, match=r"empty|Refusing to replace"):
        with atomic_dir(target):
            pass
    assert (work / "src" / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in work.iterdir()) == ["src"]


def test_none_is_no_path_not_an_empty_one():
    """`save_pretrained(None)` once said "The output directory is empty"."""
    with pytest.raises(TypeError, match=r"^output directory must be a path \(a string\), got "
                                        r"None\.$"):
        with atomic_dir(None):
            pass
    with pytest.raises(TypeError, match=r"^save_pretrained must be a path \(a string\), got 3\.$"):
        with atomic_dir(3, "save_pretrained"):
            pass


def test_a_new_directory_below_the_current_one_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with atomic_dir("export") as tmp:
        open(os.path.join(tmp, "saved_model.pb"), "w").close()
    assert os.listdir(tmp_path / "export") == ["saved_model.pb"]


def test_a_file_is_never_replaced_by_a_directory(tmp_path):
    """`CrossEncoder.export(<a checkpoint's config.json>)` once swapped the file
    for a SavedModel directory and left the file under a hidden name."""
    path = tmp_path / "config.json"
    path.write_text("{}")
    with pytest.raises(DestinationError, match=r"config\.json is a file, not a directory"):
        with atomic_dir(str(path)):
            pass
    assert path.read_text() == "{}" and sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]

