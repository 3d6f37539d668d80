"""tools/probe.py end to end, once (a subprocess: the tool as a user runs it):
UPOS probes of a tiny checkpoint on the hand-annotated sample write
results.json with every key the issue names and a picture that
`tfbert.visualize.draw_probe` (tools/visualize.py --kind=probe) draws again."""

import json
import os
import subprocess
from fresh_python import python_command

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


def tool(name, *args):
    return subprocess.run([python_command(), os.path.join(ROOT, "tools", name), *args],
                          capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=600)


def test_tags_end_to_end(tiny_checkpoint, analysis_data, tmp_path, assert_png):
    out = tmp_path / "upos"
    proc = tool("probe.py", f"--checkpoint_dir={tiny_checkpoint}", "--task=tags",
                f"--train_file={analysis_data / 'syntax_train.conllu'}",
                f"--dev_file={analysis_data / 'syntax_dev.conllu'}", "--field=upos",
                f"--output_dir={out}", "--set=seeds=[0]", "--set=epochs=8", "--layers=0,2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines()[0] == str(out / "results.json")
    results = json.loads((out / "results.json").read_text())
    assert (results["task"], results["metric"], results["layers"]) == ("tags", "accuracy", [0, 2])
    for key in ("per_layer", "random_init_per_layer", "control_task_per_layer", "mix_weights"):
        assert len(results[key]) == 2, key
    assert 0 <= results["expected_layer"] <= 2 and results["field"] == "upos"
    assert "center_of_gravity" in results and results["config"]["seeds"] == [0]
    assert_png(out / "probe.png")
    # What tools/visualize.py --kind=probe calls (in-process: a second tool run costs ~8 s).
    from tfbert.visualize import draw_probe

    assert_png(draw_probe(str(out / "results.json"), str(tmp_path / "again.png")))
