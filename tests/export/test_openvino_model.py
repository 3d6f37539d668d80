"""Without the `openvino` extra: exporting to and serving an OpenVINO IR is one
line saying how to install it, and nothing else needs the extra. Runs in the
default suite whether or not the extra is installed: each check runs in a
fresh process where `openvino` and `openvino_tokenizers` cannot be imported.
(With the extra: tests/export/test_openvino.py.)"""

import os
import subprocess
from fresh_python import python_command

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Runs a tool as `python tools/<name>.py` would, with the extra's packages hidden.
WITHOUT_OPENVINO = """
import runpy, sys
sys.modules.update(openvino=None, openvino_tokenizers=None)  # `import openvino` fails
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
HINT = 'OpenVINO export and serving need the openvino extra (pip install -e ".[openvino]")'


def run_without_openvino(*args):
    return subprocess.run([python_command(), "-c", WITHOUT_OPENVINO, *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


def test_tools_say_which_extra_is_missing(tmp_path):
    export = run_without_openvino("tools/export.py", "--format=openvino",
                                  f"--saved_model_dir={tmp_path}", f"--output_dir={tmp_path / '1'}")
    assert export.returncode == 1
    assert export.stderr.strip().splitlines()[-1].startswith(f"export: error: {HINT}: ")
    assert "Traceback" not in export.stderr
    (tmp_path / "model.xml").write_text("<net/>")
    predict = run_without_openvino("tools/predict.py", f"--saved_model_dir={tmp_path}",
                                   "--text=A wonderful film.")
    assert predict.returncode == 1
    assert predict.stderr.strip().splitlines()[-1].startswith(f"predict: error: {HINT}: ")
    assert "Traceback" not in predict.stderr
    assert not (tmp_path / "1").exists()


def test_the_package_and_the_other_exports_need_no_openvino(run_python):
    out = run_python("""
import sys
sys.modules.update(openvino=None, openvino_tokenizers=None)
import tfbert, tfbert.export.openvino, tfbert.export.openvino_model, tfbert.export.task_model
from tfbert.export.openvino_model import OpenVINOModel, require_openvino
try:
    require_openvino()
except ImportError as e:
    print(str(e).splitlines()[0])
""")
    assert out.strip().startswith(HINT)
