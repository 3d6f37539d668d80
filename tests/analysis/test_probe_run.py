"""tfbert.analysis.probe_run.run_probe in-process on the tiny checkpoint:
senses (WordNet sample), geometry and heads write results.json with their
keys and a picture; structural runs its wiring; a layer out of range and a
missing dev file are one line. The three task runs are `slow` (CI runs them
after the default suite)."""

import json

import pytest

from tfbert.analysis.probe_run import ProbeConfig, run_probe


def config(tmp_path, analysis_data, task, train="syntax_train.conllu", dev="syntax_dev.conllu",
           **kwargs):
    return ProbeConfig(task=task, train_file=str(analysis_data / train),
                       dev_file=str(analysis_data / dev) if dev else None,
                       output_dir=str(tmp_path / task), seeds=[0], **kwargs)


@pytest.mark.slow  # 15-20 s each: the wiring of one task (its maths: test_<module>.py)
def test_senses(tiny_pair, tmp_path, analysis_data, assert_png):
    cfg = config(tmp_path, analysis_data, "senses", "senses_train.jsonl", "senses_dev.jsonl")
    results = run_probe(cfg, model=tiny_pair)
    assert json.loads((tmp_path / "senses" / "results.json").read_text()) == results
    assert results["metric"] == "accuracy" and results["layers"] == [0, 1, 2]
    assert results["scored"] == 58 and 0 < results["baseline"] < 1
    assert len(results["per_layer"]) == len(results["random_init_per_layer"]) == 3
    assert_png(tmp_path / "senses" / "probe.png")


@pytest.mark.slow  # 15-20 s each: the wiring of one task (its maths: test_<module>.py)
def test_geometry_and_heads(tiny_pair, tmp_path, analysis_data, assert_png):
    geometry = run_probe(config(tmp_path, analysis_data, "geometry", dev=None), model=tiny_pair)
    assert geometry["types"] > 10 and len(geometry["anisotropy"]) == 3
    heads = run_probe(config(tmp_path, analysis_data, "heads", dev=None, layers=[2]),
                      model=tiny_pair)
    assert heads["layers"] == [2] and len(heads["statistics"]["cls"]) == 1
    assert heads["relations"]["det"]["count"] == 41
    assert_png(tmp_path / "heads" / "probe.png")


@pytest.mark.slow  # 15-20 s each: the wiring of one task (its maths: test_<module>.py)
def test_structural_wiring(tiny_pair, tmp_path, analysis_data):
    results = run_probe(config(tmp_path, analysis_data, "structural", epochs=1, rank=4,
                               layers=[0, 1]), model=tiny_pair)
    assert results["metric"] == "uuas" and len(results["spearman"]) == 2
    assert all(0 <= u <= 1 for u in results["per_layer"] + results["random_init_per_layer"])


@pytest.mark.parametrize("task, layers, pattern", [
    ("tags", [3], r"--layers: layer 3 is out of range; the encoder has layers 0\.\.2 "
                  r"\(0 = the embeddings\)"),
    ("heads", [0], r"--layers: layer 0 is out of range; the encoder has layers 1\.\.2"),
])
def test_a_layer_out_of_range(tiny_pair, tmp_path, analysis_data, raises_one_line_from_tfbert,
                              task, layers, pattern):
    cfg = config(tmp_path, analysis_data, task, layers=layers)
    raises_one_line_from_tfbert("layer", lambda: run_probe(cfg, model=tiny_pair), pattern)


def test_missing_files_and_settings(tiny_pair, tmp_path, analysis_data,
                                    raises_one_line_from_tfbert):
    cfg = config(tmp_path, analysis_data, "structural", dev=None)
    raises_one_line_from_tfbert("dev", lambda: run_probe(cfg, model=tiny_pair),
                                r"--task=structural needs --dev_file")
    cfg = config(tmp_path, analysis_data, "tags", dev="nowhere.conllu")
    raises_one_line_from_tfbert("file", lambda: run_probe(cfg, model=tiny_pair),
                                r"--dev_file: no such file: .*nowhere\.conllu")
    raises_one_line_from_tfbert("task", lambda: ProbeConfig(task="parse"),
                                r"ProbeConfig\.task: must be one of")


def test_bad_paths_and_seeds_are_one_line_before_any_work(tiny_pair, tmp_path, analysis_data,
                                                          raises_one_line_from_tfbert):
    check = raises_one_line_from_tfbert
    (tmp_path / "taken").write_text("a file")
    cfg = config(tmp_path, analysis_data, "tags")
    cfg.output_dir = str(tmp_path / "taken")  # os.makedirs failed here after all the probes
    check("output_dir", lambda: run_probe(cfg, model=tiny_pair),
          r"--output_dir: \S*taken is a file, not a directory: name a directory to write\.$")
    cfg = config(tmp_path, analysis_data, "tags")
    cfg.train_file = str(analysis_data)
    check("train_file", lambda: run_probe(cfg, model=tiny_pair),
          r"--train_file: \S*analysis is a directory, not a file\.$")
    latin1 = tmp_path / "latin1.conllu"
    latin1.write_bytes("1\tCaf\xe9\t_\tNOUN\t_\t_\t0\troot\t_\t_\n\n".encode("latin-1"))
    cfg = config(tmp_path, analysis_data, "tags")
    cfg.train_file = str(latin1)
    check("not UTF-8", lambda: run_probe(cfg, model=tiny_pair),
          r"latin1\.conllu, line 1: not UTF-8 text \(invalid continuation byte at byte 5 of "
          r"the line\)\.$")
    check("seeds", lambda: ProbeConfig(seeds=[0, -1]),  # NumPy's own error, before
          r"ProbeConfig\.seeds\[1\] must be in \[0, 4294967295\] \(an integer\), got -1\.$")
