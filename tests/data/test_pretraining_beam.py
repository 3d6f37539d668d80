"""The Apache Beam pipeline through the real tool
(`create_pretraining_data.py --runner=...`) on real engines: DirectRunner in
process and in multi-processing mode (2 workers), and the DaskRunner on a
`dask.distributed` LocalCluster of 2 worker processes on 127.0.0.1 that the
tests start and close. Every runner's output is checked against the local
writer's on the same corpus (the shipped one, and a larger one built here from
the standard library's docstrings, in 4 files): every document read, the
same documents kept and skipped, instances within 2%, NSP share, length
histogram, masked fraction; where no random draw decides an instance, the
very same examples and metadata. Also: mixed shards whatever the corpus order,
shards that feed tools/pretrain.py, a lossy runner caught by the counts, and
one-line errors for bad input.

Skipped without `apache-beam` (`pip install -e ".[beam]"`); the DaskRunner
tests also need `dask[distributed]`.
"""

import ast
import hashlib
import json
import pathlib
import re
import subprocess
import sysconfig

import numpy as np
import pytest
import tensorflow as tf
from fresh_python import python_command

pytest.importorskip("apache_beam")

from tfbert.data.pretraining.writer import write_pretraining_data  # noqa: E402
from tfbert.text.masking import MaskedLMMasker  # noqa: E402
from tfbert.text.tokenizer import BertTokenizer  # noqa: E402

ROOT = pathlib.Path(__file__).parents[2]
DATA = ROOT / "tests" / "data" / "pretraining"
VOCAB = DATA / "vocab.txt"
SETTINGS = dict(seq_length=32, dupe_factor=2, num_shards=3, max_predictions_per_seq=6)
# The runners the tests run here, as flags of the tool ({dask}: the scheduler's address).
RUNNERS = {
    "DirectRunner": ["--runner=DirectRunner"],
    "DirectRunner multi_processing": [
        "--runner=DirectRunner",
        "--beam_pipeline_options=--direct_running_mode=multi_processing --direct_num_workers=2"],
    "DaskRunner": ["--runner=DaskRunner", "--dask_address={dask}"],
}


def tool(name, *flags, timeout=600):
    """The tool in a fresh Python (tests/fresh_python.py: TensorFlow imported once per
    worker; tests/conftest.py sets TF_CPP_MIN_LOG_LEVEL for it)."""
    return subprocess.run([python_command(), str(ROOT / "tools" / name), *flags],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def beam_output(two_sources, tmp_path_factory):
    out = tmp_path_factory.mktemp("beam")
    result = tool("create_pretraining_data.py", "--runner=DirectRunner",
                  f"--input_files={two_sources.path}", f"--vocab_file={VOCAB}",
                  f"--output_dir={out}", "--static_masking", "--eval_fraction=0.02",
                  *(f"--{k}={v}" for k, v in SETTINGS.items()))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "with Beam's DirectRunner" in result.stdout
    return out


def instance_stats(directory):
    """NSP share, length histogram, masked fraction of the records in `directory`."""
    labels, lengths, masked = [], [], 0
    for path in sorted(directory.glob("*.tfrecord")):
        for raw in tf.data.TFRecordDataset(str(path)):
            f = tf.train.Example.FromString(raw.numpy()).features.feature
            labels.append(f["next_sentence_labels"].int64_list.value[0])
            lengths.append(sum(f["input_mask"].int64_list.value))
            masked += sum(f["masked_lm_weights"].float_list.value)
    lengths = np.array(lengths)
    return {
        "instances": len(labels),
        "random_next": float(np.mean(labels)),
        "full": float(np.mean(lengths == SETTINGS["seq_length"])),
        "mean_length": float(lengths.mean()),
        "short": float(np.mean(lengths < 16)),
        "masked": masked / (lengths.sum() - 3 * len(lengths)),
        # Share of instances per length bin of 4 tokens.
        "histogram": np.bincount(lengths // 4, minlength=9)[:9] / len(lengths),
    }


def assert_same_statistics(beam, ours, instances_tolerance=0.02):
    assert abs(beam["instances"] / ours["instances"] - 1) < instances_tolerance
    assert abs(beam["random_next"] - 0.5) < 0.02 and abs(ours["random_next"] - 0.5) < 0.02
    assert abs(beam["mean_length"] - ours["mean_length"]) < 0.5
    assert abs(beam["full"] - ours["full"]) < 0.03
    assert abs(beam["short"] - ours["short"]) < 0.02
    assert np.abs(beam["histogram"] - ours["histogram"]).max() < 0.03
    assert abs(beam["masked"] - ours["masked"]) < 0.005


def test_beam_shards_are_mixed_and_match_the_local_writer(beam_output, two_sources, tmp_path):
    meta = json.loads((beam_output / "pretraining_data.json").read_text())
    assert meta["runner"] == "DirectRunner" and meta["static_masking"]
    assert sorted(meta["files"]) == sorted(p.name for p in beam_output.glob("*.tfrecord"))
    assert (beam_output / "eval" / "pretraining_data.json").is_file()
    assert not list(beam_output.glob(".tmp-*"))

    examples = two_sources.training_stream(str(beam_output / "*.tfrecord"))
    share, shares = two_sources.assert_mixed(examples)
    print(f"Beam: {len(examples)} examples, reference share {share:.3f}, windows of 1000: "
          f"{min(shares):.3f}..{max(shares):.3f}")

    tokenizer = BertTokenizer(vocab_file=str(VOCAB), lower_case=True)
    masker = MaskedLMMasker.from_vocab(tokenizer.vocab, max_predictions=6)
    write_pretraining_data(two_sources.path, str(tmp_path), tokenizer, masker=masker,
                           eval_fraction=0.02, log=lambda *_: None,
                           **{k: v for k, v in SETTINGS.items() if k != "max_predictions_per_seq"})
    beam, ours = instance_stats(beam_output), instance_stats(tmp_path)
    print("Beam ", beam, "\nlocal", ours)
    assert_same_statistics(beam, ours)


@pytest.mark.slow
def test_beam_shards_feed_pretrain(beam_output, tmp_path):
    model_dir = tmp_path / "run"
    result = tool("pretrain.py", f"--config={ROOT / 'configs' / 'pretrain_tiny.yaml'}",
                  f"--train_files={beam_output / '*.tfrecord'}", f"--vocab_file={VOCAB}",
                  f"--model_dir={model_dir}", "--num_train_steps=40", "--steps_per_epoch=20",
                  "--set", "pretrain.dynamic_masking=false", "--set", "encoder.num_layers=1",
                  "--set", "train.verbose=2", "--batch_size=16", "--nojit_compile")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((model_dir / "summary.json").read_text())
    assert summary["step"] == 40 and summary["eval_files"].endswith("eval/*.tfrecord")
    assert summary["final_metrics"]["val_nsp_accuracy"] >= 0.0
    assert summary["final_metrics"]["mlm_loss"] < np.log(1931)


@pytest.mark.slow
def test_beam_bad_input_gives_one_line_errors(tmp_path):
    def error_of(*flags):
        result = tool("create_pretraining_data.py", "--runner=DirectRunner",
                      f"--output_dir={tmp_path / 'out'}", *flags, timeout=300)
        assert result.returncode == 1
        assert "Traceback" not in result.stderr, result.stderr[-3000:]
        return result.stderr.strip().splitlines()[-1]

    line = error_of(f"--input_files={tmp_path / 'nope*.txt'}", f"--vocab_file={VOCAB}")
    assert line.startswith("create_pretraining_data: error: No input file matches")
    assert "nope*.txt" in line

    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n   \n")
    line = error_of(f"--input_files={empty}", f"--vocab_file={VOCAB}")
    assert "gave no pretraining instances" in line and str(empty) in line

    single = tmp_path / "single.txt"
    single.write_text("One document.\nWith two sentences.\n")
    line = error_of(f"--input_files={single}", f"--vocab_file={VOCAB}")
    assert "at least 2 documents" in line

    line = error_of(f"--input_files={DATA / 'corpus.txt'}", f"--vocab_file={VOCAB}",
                    "--dask_address=tcp://127.0.0.1:8786")
    assert line.endswith("--dask_address is for --runner=DaskRunner, not DirectRunner.")

    bad_vocab = tmp_path / "vocab.txt"
    bad_vocab.write_text("\n".join(t for t in VOCAB.read_text().split("\n") if t != "[CLS]"))
    line = error_of(f"--input_files={DATA / 'corpus.txt'}", f"--vocab_file={bad_vocab}")
    assert str(bad_vocab) in line and "[CLS]" in line
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.tfrecord"))


def examples(directory):
    """The examples of the shards in `directory`, as sorted (feature, values) tuples."""
    found = []
    for path in sorted(directory.glob("*.tfrecord")):
        for raw in tf.data.TFRecordDataset(str(path)):
            f = tf.train.Example.FromString(raw.numpy()).features.feature
            found.append(tuple((k, tuple(f[k].int64_list.value) + tuple(f[k].float_list.value))
                               for k in sorted(f)))
    return found


@pytest.mark.parametrize("runner", ["DirectRunner", "DaskRunner"])
def test_without_random_draws_beam_writes_the_local_writers_examples(runner, request, tmp_path):
    """The two runners share everything but the plumbing: where no random draw
    decides an instance (MLM only, no short sequences, no held-out split, no
    stored masks), they write the same examples, each as often, and the same
    metadata. Only the order differs (Beam's bundles decide it)."""
    flags = [f"--input_files={DATA / 'corpus.txt'}", f"--vocab_file={VOCAB}",
             "--next_sentence_task=none", "--short_seq_prob=0", "--eval_fraction=0",
             "--seq_length=48", "--dupe_factor=2", "--num_shards=3"]
    beam_flags = [f"--runner={runner}"]
    if runner == "DaskRunner":
        beam_flags += [f"--dask_address={request.getfixturevalue('dask_address')}"]
    ours, beam = tmp_path / "local", tmp_path / "beam"
    result = tool("create_pretraining_data.py", *flags, f"--output_dir={ours}")
    assert result.returncode == 0, result.stderr[-3000:]
    result = tool("create_pretraining_data.py", *flags, *beam_flags, f"--output_dir={beam}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"with Beam's {runner}" in result.stdout
    ours_examples, beam_examples = examples(ours), examples(beam)
    assert len(ours_examples) > 1000
    assert sorted(beam_examples) == sorted(ours_examples)
    assert beam_examples != ours_examples  # shuffled all the same
    ours_meta, beam_meta = (json.loads((d / "pretraining_data.json").read_text()) for d in (ours, beam))
    assert beam_meta.pop("runner") == runner
    assert beam_meta.pop("summary")["documents_read"] == ours_meta.pop("summary")["documents_read"]
    assert beam_meta == ours_meta
    assert not (beam / "eval").exists() or not list((beam / "eval").iterdir())


# -- Every runner against the local writer --------------------------------------
def docstring_documents():
    """Paragraphs (>= 2 sentences, one per line) of the docstrings of the
    standard library's modules, classes and functions: real text, about 3,000
    documents on Python 3.11 (5x the shipped corpus)."""
    stdlib = pathlib.Path(sysconfig.get_paths()["stdlib"])
    documents = []
    for path in sorted(stdlib.glob("**/*.py")):
        parts = path.relative_to(stdlib).parts
        if any(p in ("test", "tests", "idlelib", "site-packages", "dist-packages") for p in parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                for paragraph in (ast.get_docstring(node) or "").split("\n\n"):
                    if paragraph.startswith(" ") or ">>>" in paragraph:
                        continue
                    text = " ".join(paragraph.split())
                    sentences = [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", text) if s]
                    if len(sentences) >= 2:
                        documents.append(sentences)
    return documents


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    """name -> --input_files: the shipped corpus; the docstrings in 4 files,
    with 3 documents that have no tokens (a zero-width space only: skipped as
    empty, and counted) among them."""
    directory = tmp_path_factory.mktemp("docstrings")
    documents = docstring_documents()
    assert len(documents) > 2000
    documents[100:100] = [["\u200b"]] * 3
    quarter = -(-len(documents) // 4)
    for i in range(4):
        part = documents[i * quarter:(i + 1) * quarter]
        (directory / f"part-{i}.txt").write_text(
            "\n\n".join("\n".join(d) for d in part) + "\n", encoding="utf-8")
    return {"shipped": str(DATA / "corpus.txt"), "docstrings": str(directory / "part-*.txt")}


@pytest.fixture(scope="module")
def generate(corpora, tmp_path_factory, request):
    """(corpus name, runner name or "local") -> (output dir, stdout) of one
    run of the tool, each run once per module."""
    runs = {}

    def run(corpus, runner):
        if (corpus, runner) not in runs:
            out = tmp_path_factory.mktemp(f"{corpus}-{runner.replace(' ', '-')}")
            flags = []
            if runner != "local":
                dask = request.getfixturevalue("dask_address") if runner == "DaskRunner" else ""
                flags = [f.format(dask=dask) for f in RUNNERS[runner]]
            result = tool("create_pretraining_data.py", *flags, f"--input_files={corpora[corpus]}",
                          f"--vocab_file={VOCAB}", f"--output_dir={out}", "--static_masking",
                          *(f"--{k}={v}" for k, v in SETTINGS.items()))
            assert result.returncode == 0, result.stderr[-3000:]
            runs[corpus, runner] = out, result.stdout
        return runs[corpus, runner]

    return run


def summary_of(directory):
    return json.loads((directory / "pretraining_data.json").read_text())["summary"]


@pytest.mark.parametrize("corpus", ["shipped", pytest.param("docstrings", marks=pytest.mark.slow)])
@pytest.mark.parametrize("runner", list(RUNNERS))
def test_every_runner_keeps_every_document(generate, corpus, runner):
    (ours_dir, ours_stdout), (beam_dir, beam_stdout) = generate(corpus, "local"), generate(corpus, runner)
    ours, beam = summary_of(ours_dir), summary_of(beam_dir)
    print(f"{corpus}, {runner}:\n" + beam_stdout.split("Summary", 1)[1])
    print(f"{corpus}, local writer:\n" + ours_stdout.split("Summary", 1)[1])
    # Every document read, per file; the same ones skipped; the same ones kept (the
    # train/eval draw differs: the local writer draws in corpus order, Beam per document key).
    assert beam["files"] == ours["files"]
    assert beam["documents_read"] == ours["documents_read"] > 500
    assert beam["documents_skipped"] == ours["documents_skipped"]
    assert sum(beam["documents"].values()) == sum(ours["documents"].values())
    assert beam["documents_skipped"]["empty"] == (3 if corpus == "docstrings" else 0)
    assert beam["runner"].startswith(runner.split()[0])
    written = {s: beam["instances"][s] for s in ("train", "eval")}
    meta = json.loads((beam_dir / "pretraining_data.json").read_text())
    assert written["train"] == meta["instances"] and written["eval"] == meta.get("eval_instances", 0)
    assert sum(written.values()) / sum(ours["instances"].values()) == pytest.approx(1, abs=0.02)
    # What the end of the run printed.
    assert f"documents read     {beam['documents_read']:,} " in beam_stdout
    assert f"instances written  train {written['train']:,} in 3 shard(s)" in beam_stdout
    assert_same_statistics(instance_stats(beam_dir), instance_stats(ours_dir))


def test_a_lossy_runner_fails_and_keeps_the_earlier_output(generate, dask_address, tmp_path):
    """A stage between building and writing the instances that loses elements on
    the DaskRunner: the run fails with one line naming the runner and both
    numbers, and the earlier output stays as it was."""
    import apache_beam as beam

    from tfbert.data.pretraining.beam import DataLossError, run_pipeline

    good, _ = generate("shipped", "DaskRunner")
    before = {p.relative_to(good): hashlib.sha256(p.read_bytes()).hexdigest()
              for p in good.rglob("*") if p.is_file()}
    from tfbert.data.pretraining.data_config import PretrainingDataConfig

    cfg = PretrainingDataConfig(input_files=str(DATA / "corpus.txt"), vocab_file=str(VOCAB),
                                output_dir=str(good), static_masking=True,
                                runner="DaskRunner", dask_address=dask_address, **SETTINGS)
    # The DaskRunner itself drops what a bundle's finish_bundle emits (Beam's
    # BatchElements' last batch), but how much follows its partitions: with
    # one batch per bundle a clean-clone CI run lost nothing. A stage that
    # drops every instance is the loss made certain.
    lossy = beam.Filter(lambda instance: False)
    with pytest.raises(DataLossError) as error:
        run_pipeline(cfg, between=lossy)
    message = str(error.value)
    print(message)
    assert "\n" not in message and message.startswith(f"Beam's DaskRunner at {dask_address} lost data")
    built, written = map(int, re.search(r"(\d+) train instances built but (\d+) train instances "
                                        r"written", message).groups())
    assert written < built
    after = {p.relative_to(good): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in good.rglob("*") if p.is_file()}
    assert after == before


@pytest.mark.slow
def test_skipped_documents_are_counted_with_their_reason(tmp_path):
    """With SOP, a document of one one-token sentence gives no instance; a
    document of characters without tokens is empty. Both are counted, by
    reason, in what the run prints and in pretraining_data.json."""
    documents = [d for d in (DATA / "corpus.txt").read_text(encoding="utf-8").split("\n\n")][:40]
    documents += ["\u200b"] * 3 + ["The"] * 4  # "the": one token
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(documents) + "\n", encoding="utf-8")
    result = tool("create_pretraining_data.py", "--runner=DirectRunner", f"--input_files={corpus}",
                  f"--vocab_file={VOCAB}", f"--output_dir={tmp_path / 'out'}",
                  "--next_sentence_task=sop", "--seq_length=32")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = summary_of(tmp_path / "out")
    assert summary["documents_read"] == 47
    assert summary["documents_skipped"] == {"empty": 3, "one_sentence": 4, "no_instance": 0}
    assert sum(summary["documents"].values()) == 40
    assert "documents skipped  7 (3 empty, 4 one sentence)" in result.stdout
