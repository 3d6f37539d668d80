"""tools/distill.py: init_student, general (masked-LM) distillation and its
errors, run as a user would (subprocess)."""

import os
import subprocess

import pytest

from tfbert import checkpoint
from fresh_python import python_command

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(REPO, "tests", "data", "pretraining")


def tool(*args):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run([python_command(), os.path.join(REPO, "tools", "distill.py"), *args],
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def teacher_and_data(tmp_path_factory):
    import keras

    from tfbert import BertConfig, BertEncoder
    from tfbert.data.pretraining.writer import write_pretraining_data
    from tfbert.models.pretrainer import BertPretrainer
    from tfbert.text.tokenizer import BertTokenizer

    tmp = tmp_path_factory.mktemp("distill_tool")
    vocab = os.path.join(DATA, "vocab.txt")
    write_pretraining_data(os.path.join(DATA, "corpus.txt"), str(tmp / "data"),
                           BertTokenizer(vocab_file=vocab, lower_case=True), seq_length=32,
                           next_sentence_task="none", log=lambda *a: None)
    keras.utils.set_random_seed(0)
    teacher = BertPretrainer(BertEncoder(BertConfig.from_preset(
        "tiny", vocab_size=1931, max_position_embeddings=32)), next_sentence_task="none")
    return teacher.save_checkpoint(str(tmp / "teacher"), vocab, True), str(tmp / "data")


def test_init_student_then_general_distillation(teacher_and_data, tmp_path):
    teacher, data = teacher_and_data
    proc = tool("--mode=init_student", f"--teacher={teacher}", "--set", "layers=[1]",
                f"--output_dir={tmp_path / 'student'}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Wrote a 1-layer student" in proc.stdout
    proc = tool("--mode=general", f"--teacher={teacher}", f"--init_checkpoint={tmp_path / 'student'}",
                "--set", f"train_files={data}/*.tfrecord", "--set", "num_train_steps=10",
                "--set", "train.batch_size=8", "--set", "train.verbose=0",
                "--set", "train.jit_compile=false", f"--model_dir={tmp_path / 'run'}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = checkpoint.read_checkpoint(str(tmp_path / "run" / "pretrained"))
    assert out.config.num_layers == 1 and out.prefixed_weights("mlm")


def test_errors_are_one_line(teacher_and_data, tmp_path):
    teacher, _ = teacher_and_data
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "blank.txt").write_text("\n  \n")
    task = ("--mode=task", f"--teacher={tmp_path}", f"--model_dir={tmp_path / 'run'}", "--set",
            f"task.train_file={REPO}/tests/data/finetune/sentiment_train.tsv")
    for args, message in [
            ((*task, f"--transfer_file={tmp_path / 'missing.txt'}"),
             f"transfer_file: file not found: {tmp_path / 'missing.txt'}"),
            ((*task, f"--transfer_file={tmp_path / 'empty.txt'}"),
             f"transfer_file: {tmp_path / 'empty.txt'}: the file is empty"),
            ((*task, f"--transfer_file={tmp_path / 'blank.txt'}"),
             f"transfer_file: {tmp_path / 'blank.txt'}: no examples"),
            (("--mode=general", f"--teacher={teacher}",
              f"--transfer_file={tmp_path / 'blank.txt'}"),
             "transfer_file is for --mode=task, not --mode=general"),
            ((f"--teacher={tmp_path / 'nowhere'}", f"--model_dir={tmp_path / 'run'}"),
             "Teacher export directory not found"),
            (("--mode=general", f"--teacher={teacher}", f"--model_dir={tmp_path / 'run'}"),
             "--mode=general needs"),
            (("--mode=init_student", f"--teacher={teacher}", "--every_k=5",
              f"--output_dir={tmp_path / 'x'}"), "k=5 exceeds the teacher's 2 layers")]:
        proc = tool(*args)
        assert proc.returncode == 1 and message in proc.stderr, proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr
