"""tools/pretrain.py and tools/finetune.py under MultiWorkerMirroredStrategy:
two real worker processes on 127.0.0.1 with TF_CONFIG; identical weights,
files written once by the chief; a worker killed mid-run, then the job
restarted, resumes from the chief's backup."""

import csv
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).parents[2]
DATA = ROOT / "tests" / "data" / "pretraining"
VOCAB = DATA / "vocab.txt"
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mw")
    docs = (DATA / "corpus.txt").read_text(encoding="utf-8").split("\n\n")[:30]
    corpus = tmp / "corpus.txt"
    corpus.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    subprocess.run([sys.executable, str(ROOT / "tools" / "create_pretraining_data.py"),
                    f"--input_files={corpus}", f"--vocab_file={VOCAB}",
                    f"--output_dir={tmp / 'records'}", "--seq_length=32"],
                   check=True, env=ENV, timeout=300, capture_output=True)
    return str(tmp / "records" / "*.tfrecord")


def start_workers(configs, records, model_dir, steps, logs, steps_per_epoch=10):
    procs = []
    for i, config in enumerate(configs):
        cmd = [sys.executable, str(ROOT / "tools" / "pretrain.py"),
               f"--config={ROOT / 'configs' / 'pretrain_tiny.yaml'}",
               f"--train_files={records}", f"--vocab_file={VOCAB}", f"--model_dir={model_dir}",
               f"--num_train_steps={steps}", f"--steps_per_epoch={steps_per_epoch}",
               "--batch_size=16",
               "--distribution_strategy=multi_worker_mirrored", "--set", "train.verbose=2",
               "--set", "train.tensorboard=false"]
        log = open(logs / f"worker{i}.log", "w")
        procs.append(subprocess.Popen(cmd, env={**ENV, "TF_CONFIG": config},
                                      stdout=log, stderr=subprocess.STDOUT))
    return procs


def wait_all(procs, timeout):
    """Waits up to `timeout` s in all; kills whatever still runs (a worker
    whose peer died can block in collectives forever). Returns exit codes."""
    deadline = time.time() + timeout
    for p in procs:
        try:
            p.wait(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            break
    for p in procs:  # every process is bounded in time and cleaned up
        if p.poll() is None:
            p.kill()
            p.wait()
    return [p.returncode for p in procs]


def checksum(log_path):
    found = re.findall(r"Weights checksum at step (\d+): (\S+)", log_path.read_text())
    return found[-1] if found else None


def epochs_logged(model_dir):
    with open(model_dir / "log.csv") as f:
        return [int(r["epoch"]) for r in csv.DictReader(f)]


@pytest.mark.slow
def test_two_workers_train_in_sync_and_chief_writes_once(records, tmp_path, tf_configs):
    model_dir = tmp_path / "run"
    codes = wait_all(start_workers(tf_configs(), records, model_dir, 20, tmp_path), timeout=400)
    logs = [(tmp_path / f"worker{i}.log") for i in range(2)]
    assert codes == [0, 0], "\n".join(p.read_text()[-2000:] for p in logs)
    sums = [checksum(p) for p in logs]
    assert sums[0] is not None and sums[0] == sums[1]  # same step, same weights
    assert sums[0][0] == "20"
    assert epochs_logged(model_dir) == [0, 1]  # one log row per epoch: chief only
    assert sorted(os.listdir(model_dir / "checkpoints")) == [
        "ckpt-00000010.weights.h5", "ckpt-00000020.weights.h5"]
    summary = json.loads((model_dir / "summary.json").read_text())
    assert summary["step"] == 20 and os.path.isdir(model_dir / "pretrained")
    # One checkpoint format: the same command on a single host restores the
    # multi-worker backup (the strategy may change between runs; the config
    # may not) and ends with the same weights.
    single = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "pretrain.py"),
         f"--config={ROOT / 'configs' / 'pretrain_tiny.yaml'}", f"--train_files={records}",
         f"--vocab_file={VOCAB}", f"--model_dir={model_dir}", "--num_train_steps=20",
         "--steps_per_epoch=10", "--batch_size=16", "--set", "train.verbose=2",
         "--set", "train.tensorboard=false"],
        env=ENV, capture_output=True, text=True, timeout=300)
    assert single.returncode == 0, single.stderr[-2000:]
    assert "Resuming at epoch 2" in single.stdout
    assert re.findall(r"Weights checksum at step (\d+): (\S+)", single.stdout)[-1] == sums[0]
    assert json.loads((model_dir / "summary.json").read_text())["step"] == 20
    assert epochs_logged(model_dir) == [0, 1]


@pytest.mark.slow
def test_killed_worker_then_restarted_job_resumes(records, tmp_path, tf_configs):
    model_dir = tmp_path / "run"
    procs = start_workers(tf_configs(), records, model_dir, 60, tmp_path)
    try:
        deadline = time.time() + 300
        while time.time() < deadline:
            if (model_dir / "log.csv").exists() and epochs_logged(model_dir):
                break
            assert all(p.poll() is None for p in procs), "a worker exited early"
            time.sleep(0.5)
        else:
            pytest.fail("no epoch finished in time")
        procs[1].send_signal(signal.SIGKILL)
        procs[1].wait()
    finally:
        # The chief's collectives cannot finish without its peer: stop it too.
        wait_all(procs, timeout=20)
    done_before = epochs_logged(model_dir)
    assert 1 <= len(done_before) < 6
    codes = wait_all(start_workers(tf_configs(), records, model_dir, 60, tmp_path), timeout=400)
    logs = [(tmp_path / f"worker{i}.log") for i in range(2)]
    assert codes == [0, 0], "\n".join(p.read_text()[-2000:] for p in logs)
    assert "Resuming at epoch" in logs[0].read_text()
    assert checksum(logs[0]) == checksum(logs[1]) and checksum(logs[0])[0] == "60"
    epochs = epochs_logged(model_dir)
    # Every epoch exactly once, except one the kill may have cut after logging
    # but before its backup landed (it is redone, never skipped).
    assert sorted(set(epochs)) == list(range(6))
    assert len(epochs) - len(set(epochs)) <= 1


@pytest.mark.slow
def test_sigterm_to_one_worker_stops_both_at_one_step_and_the_rerun_redoes_none(
        records, tmp_path, tf_configs):
    """Two minutes: three two-worker jobs (a reference, the interrupted one and
    its rerun), each two real processes that start TensorFlow and meet over
    gRPC; the stop and the resume are what is tested, so no job can be skipped."""
    ref_logs, logs = tmp_path / "ref", tmp_path / "logs"
    ref_logs.mkdir(), logs.mkdir()
    codes = wait_all(start_workers(tf_configs(), records, tmp_path / "ref_run", 80, ref_logs,
                                   steps_per_epoch=40), timeout=400)
    assert codes == [0, 0], (ref_logs / "worker0.log").read_text()[-2000:]

    model_dir = tmp_path / "run"
    procs = start_workers(tf_configs(), records, model_dir, 80, logs, steps_per_epoch=40)
    meta = model_dir / "backup" / "training_metadata.json"
    try:
        deadline = time.time() + 300
        while not meta.exists() and time.time() < deadline:
            assert all(p.poll() is None for p in procs), "a worker exited early"
            time.sleep(0.05)
        time.sleep(0.5)  # into epoch 1
        procs[1].send_signal(signal.SIGTERM)  # the non-chief only: the chief must follow
    finally:
        codes = wait_all(procs, timeout=300)
    texts = [(logs / f"worker{i}.log").read_text() for i in range(2)]
    assert codes == [0, 0], "\n".join(t[-2000:] for t in texts)
    stops = [re.search(r"preempted \(SIGTERM\) at step (\d+)", t) for t in texts]
    assert all(stops), "\n".join(t[-2000:] for t in texts)
    stopped = int(stops[0].group(1))
    assert stopped == int(stops[1].group(1)) and 40 < stopped < 80
    assert json.loads(meta.read_text()) == {"epoch": 1, "batch": stopped - 40}  # the chief's save

    codes = wait_all(start_workers(tf_configs(), records, model_dir, 80, logs,
                                   steps_per_epoch=40), timeout=400)
    texts = [(logs / f"worker{i}.log").read_text() for i in range(2)]
    assert codes == [0, 0], "\n".join(t[-2000:] for t in texts)
    assert f"Resuming at epoch 1 (step {stopped})" in texts[0]
    assert checksum(logs / "worker0.log") == checksum(ref_logs / "worker0.log")
    assert checksum(logs / "worker1.log") == checksum(ref_logs / "worker0.log")


@pytest.mark.slow
def test_finetune_two_workers(tmp_path, tf_configs, uncased_vocab_file):
    model_dir, export_dir = tmp_path / "run", tmp_path / "export" / "1"
    scratch = tmp_path / "tmp"  # the workers' TMPDIR: the non-chief's scratch files go
    scratch.mkdir()
    procs = []
    for i, config in enumerate(tf_configs()):
        cmd = [sys.executable, str(ROOT / "tools" / "finetune.py"), "--task=classification",
               f"--config={ROOT / 'configs' / 'finetune_sentiment.yaml'}",
               f"--model_dir={model_dir}", f"--export_dir={export_dir}",
               "--distribution_strategy=multi_worker_mirrored",
               "--set", "preset=tiny", "--set", f"vocab_file={uncased_vocab_file}",
               "--set", "train.epochs=2", "--set", "train.tensorboard=false"]
        log = open(tmp_path / f"worker{i}.log", "w")
        env = {**ENV, "TF_CONFIG": config, "TMPDIR": str(scratch)}
        procs.append(subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=log,
                                      stderr=subprocess.STDOUT))
    codes = wait_all(procs, timeout=400)
    logs = [(tmp_path / f"worker{i}.log").read_text() for i in range(2)]
    assert codes == [0, 0], "\n".join(text[-2000:] for text in logs)
    sums = [re.findall(r"Weights checksum: (\S+)", text) for text in logs]
    assert sums[0] and sums[0] == sums[1]
    assert os.path.isfile(export_dir / "saved_model.pb")  # exported once, by the chief
    assert json.loads((model_dir / "results.json").read_text())["export_dir"] == str(export_dir)
    assert epochs_logged(model_dir) == [0, 1]
    # The non-chief's best weights and predictions lived in scratch dirs: gone.
    assert not list(scratch.glob("tfbert-worker-*"))
