"""Every code block of README.md and docs/*.md runs in a test or says
what it needs.

The line right before a fenced block may carry a marker:

    <!-- docs: tested by tests/docs/readme_test.py -->
    <!-- docs: needs network (the package index) -->
    <!-- docs: needs Spark -->
    <!-- docs: not code (a diagram) -->
    <!-- docs: runs after docs/TRAINING.md -->

`tested by FILE`: FILE exists and names the page. `needs ...`: what the
block needs that a test here does not start (the network, Spark, Beam,
a cluster, a file made elsewhere); `not code`: a diagram, a file excerpt
or a transcript; `runs after PAGE`: it runs here, in a copy of the
folder where PAGE's unmarked blocks ran (it uses what they made). An
unmarked `python`, `bash` or `sh` block runs here
(`test_a_block_runs_here_as_written`): a Python block in a fresh
process in an empty folder; a shell block, whose lines must all be
`keras-elmo ...` commands, line by line, each in a process of its own
(`markdown_blocks.keras_elmo`), in one folder holding a small
corpus (`corpus/train-0.txt.gz`, `corpus/valid.txt.gz`,
`corpus/test.txt.gz`) and `sentences.txt`. Any other unmarked block
fails.
"""

import glob
import gzip
import os
import shutil
import subprocess
import sys

import pytest

from tests.docs.markdown_blocks import REPO
from tests.docs.markdown_blocks import code_blocks
from tests.docs.markdown_blocks import keras_elmo
from tests.docs.markdown_blocks import shell_commands

PAGES = ["README.md"] + sorted(
    os.path.relpath(p, REPO)
    for p in glob.glob(os.path.join(REPO, "docs", "*.md"))
)
RUNNABLE = ("python", "bash", "sh")


BLOCKS = [(page, *block) for page in PAGES for block in code_blocks(page)]
UNMARKED = [b for b in BLOCKS if b[4] is None]
RUN_HERE = [
    b for b in BLOCKS if b[4] is None or b[4].group("kind") == "runs after"
]


def test_the_pages_have_code_blocks():
    assert len(BLOCKS) >= 30
    assert {p for p, *_ in BLOCKS} >= {"README.md", "docs/TRAINING.md"}


@pytest.mark.parametrize(
    "page, line, lang, code, marker",
    BLOCKS,
    ids=[f"{b[0]}:{b[1]}" for b in BLOCKS],
)
def test_every_block_runs_here_or_says_what_it_needs(
    page, line, lang, code, marker
):
    if marker is None:
        assert lang in RUNNABLE, (
            f"{page}:{line}: a {lang or 'plain'} block needs a marker, "
            "e.g. <!-- docs: not code (a diagram) -->"
        )
        if lang != "python":
            for command in shell_commands(code):
                assert command[0] == "keras-elmo", (
                    f"{page}:{line}: {' '.join(command)} does not run here: "
                    "mark the block with what it needs"
                )
        return
    rest = marker.group("rest").strip()
    if marker.group("kind") == "runs after":
        assert any(b[0] == rest for b in UNMARKED), (
            f"{page}:{line}: {rest!r} has no block that runs here"
        )
    elif marker.group("kind") == "tested by":
        test = rest.split()[0] if rest else ""
        path = os.path.join(REPO, test)
        assert os.path.isfile(path), f"{page}:{line}: no test file {test!r}"
        with open(path, encoding="utf-8") as f:
            assert os.path.basename(page) in f.read(), (
                f"{page}:{line}: {test} does not name {page}"
            )
    else:
        assert rest or marker.group("kind") == "not code", (
            f"{page}:{line}: say what the block needs"
        )


def _workspace(work):
    (work / "corpus").mkdir(parents=True)
    lines = [
        "the cat sat on the mat .",
        "a dog ran in the park .",
        "the bank of the river is green .",
    ] * 8
    for name, count in (("train-0", 24), ("valid", 6), ("test", 6)):
        with gzip.open(work / "corpus" / f"{name}.txt.gz", "wt") as f:
            f.write("\n".join(lines[:count]) + "\n")
    (work / "sentences.txt").write_text("Hello world .\nThe bank .\n")


def _env(tmp_path):
    env = dict(os.environ)
    env.pop("KERAS_ELMO_PRESET_MIRROR", None)
    env.update(
        PYTHONPATH=REPO,
        KERAS_ELMO_CACHE=str(tmp_path / "cache"),
        TF_CPP_MIN_LOG_LEVEL="2",
    )
    return env


_RAN = {}


def _run_block(block, tmp_path_factory):
    """`(folder, error)` of running `block` once per session: in a fresh
    workspace, or for `runs after PAGE` in a copy of the folder of
    PAGE's last unmarked block (run first)."""
    page, line, lang, code, marker = block
    if (page, line) in _RAN:
        return _RAN[(page, line)]
    work = tmp_path_factory.mktemp("block") / "work"
    if marker is not None:
        before = [b for b in UNMARKED if b[0] == marker.group("rest").strip()]
        folder, error = _run_block(before[-1], tmp_path_factory)
        if error:
            _RAN[(page, line)] = (work, f"{before[-1][0]} failed: {error}")
            return _RAN[(page, line)]
        shutil.copytree(folder, work)
    else:
        _workspace(work)
    error = None
    if lang == "python":
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=work,
            env=_env(work.parent),
            capture_output=True,
            text=True,
            timeout=900,
        )
        if done.returncode != 0:
            error = f"python -c: {done.stderr[-3000:]}"
    else:
        for argv in shell_commands(code):
            done = keras_elmo(argv, work, _env(work.parent))
            if done.returncode != 0:
                error = f"{argv}: {done.stderr[-3000:]}"
                break
    _RAN[(page, line)] = (work, error)
    return _RAN[(page, line)]


@pytest.mark.large
@pytest.mark.parametrize(
    "block", RUN_HERE, ids=[f"{b[0]}:{b[1]}" for b in RUN_HERE]
)
def test_a_block_runs_here_as_written(block, tmp_path_factory):
    _, error = _run_block(block, tmp_path_factory)
    assert error is None, (block[0], block[1], error)
