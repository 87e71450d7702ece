"""A quoted figure goes stale when the code its run imported changes.

tools/results_freshness.py compares every file a results record depends
on (its script, the files under `modules`, the modules the run imported
or, for an older record, the script's static import closure) with HEAD;
a document quoting a stale record must say so in visible text that the
check holds true. These tests build small git repositories, or a clone
of this one, and commit changes to them.
"""

import hashlib
import json
import os
import shutil
import subprocess

import pytest

from tests.results_files_test import REPO
from tests.results_files_test import freshness
from tests.results_files_test import render

GIT_USER = ("-c", "user.name=t", "-c", "user.email=t@t")


def _git(repo, *args):
    done = subprocess.run(
        ["git", *GIT_USER, *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def doctored(tmp_path, monkeypatch):
    """A git repository holding a benchmark script that imports one
    package module, and a results file of it at the first commit."""
    repo = tmp_path / "repo"
    (repo / "benchmarks" / "results").mkdir(parents=True)
    (repo / "keras_elmo" / "ops").mkdir(parents=True)
    (repo / "keras_elmo" / "__init__.py").write_text("")
    (repo / "keras_elmo" / "ops" / "__init__.py").write_text("")
    (repo / "keras_elmo" / "ops" / "cell.py").write_text("x = 1\n")
    (repo / "keras_elmo" / "ops" / "unused.py").write_text("y = 1\n")
    (repo / "benchmarks" / "speed.py").write_text(
        "from keras_elmo.ops import cell\nprint(cell.x)\n"
    )
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "a")
    commit = _git(repo, "rev-parse", "HEAD")
    monkeypatch.setattr(freshness, "REPO", str(repo))
    payload = {
        "provenance": {
            "commit": commit,
            "uncommitted_changes": False,
            "command": "speed.py --runs 3",
        },
        "tokens_per_s": 1448.0,
    }

    def commit_change(path, text):
        (repo / path).write_text(text)
        _git(repo, "commit", "-qam", f"change {path}")

    return repo, commit, payload, commit_change


DOC = "1448<!-- fig benchmarks/results/speed.json tokens_per_s {:.0f} -->\n"
FILE = "benchmarks/results/speed.json"


def _problems(text, payload):
    return freshness.document_problems(text, lambda relative: payload)


def _marked(commit, visible):
    return DOC + f"<!-- measured-at {FILE} {commit[:7]} -->{visible}\n"


def test_static_closure_follows_imports_and_parent_packages(doctored):
    _, commit, _, _ = doctored
    closure = freshness.static_closure(commit, ["benchmarks/speed.py"])
    assert sorted(closure) == [
        "benchmarks/speed.py",
        "keras_elmo/__init__.py",
        "keras_elmo/ops/__init__.py",
        "keras_elmo/ops/cell.py",
    ]
    # The digests are git's own blob ids at that commit.
    blob = subprocess.run(
        ["git", "rev-parse", f"{commit}:keras_elmo/ops/cell.py"],
        cwd=freshness.REPO,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert closure["keras_elmo/ops/cell.py"] == blob


def test_an_imported_module_changed_makes_the_figure_stale(doctored):
    _, commit, payload, commit_change = doctored
    assert _problems(DOC, payload) == []
    commit_change("keras_elmo/ops/unused.py", "y = 2\n")  # not imported
    assert _problems(DOC, payload) == []
    commit_change("keras_elmo/ops/cell.py", "x = 1  # same behaviour\n")
    problems = _problems(DOC, payload)
    assert len(problems) == 1, problems
    assert "the figures 1448 of benchmarks/results/speed.json" in problems[0]
    assert "keras_elmo/ops/cell.py changed after" in problems[0]


def test_the_recorded_imports_are_compared_by_digest(doctored):
    _, commit, payload, commit_change = doctored
    blob = freshness.tree(commit)["keras_elmo/ops/unused.py"]
    # This run imported `unused.py` too (at run time, not statically).
    payload["provenance"]["imported"] = {"keras_elmo/ops/unused.py": blob}
    commit_change("keras_elmo/ops/unused.py", "y = 1  # same\n")
    problems = _problems(DOC, payload)
    assert len(problems) == 1 and "ops/unused.py changed" in problems[0]
    # A record whose digest is the new content is fresh again.
    new = freshness.tree("HEAD")["keras_elmo/ops/unused.py"]
    payload["provenance"]["imported"] = {"keras_elmo/ops/unused.py": new}
    assert _problems(DOC, payload) == []


def test_a_stale_figure_needs_visible_text_the_check_holds_true(doctored):
    _, commit, payload, commit_change = doctored
    commit_change("keras_elmo/ops/cell.py", "x = 1  # same behaviour\n")
    # The invisible marker alone no longer does.
    invisible = _marked(commit, "")
    problems = _problems(invisible, payload)
    assert len(problems) == 1 and "visible text" in problems[0]
    short = commit[:7]
    good = [
        f"Measured at `{short}`, before changes to `keras_elmo/ops/cell.py`.",
        f"(measured at `{short}` before changes to `keras_elmo/ops/`)",
        f"Measured at `{short}`, before changes to `keras_elmo/`.",
    ]
    for visible in good:
        assert _problems(_marked(commit, visible), payload) == [], visible
    bad = {
        # names no change at all
        f"Measured at `{short}`.": "does not name",
        # names a file that did not change, misses the one that did
        f"Measured at `{short}`, before changes to "
        "`keras_elmo/ops/unused.py`.": "did not change",
        # a dirty-tree claim the record does not make
        f"Measured at `{short}` with uncommitted changes, before changes "
        "to `keras_elmo/ops/cell.py`.": "uncommitted",
    }
    for visible, why in bad.items():
        problems = _problems(_marked(commit, visible), payload)
        assert problems and why in " ".join(problems), (visible, problems)
    # The suggested texts are accepted as they are: files named whole,
    # or folded into the package folder.
    whole = freshness.visible_text(FILE, payload, short, fold=False)
    assert whole.endswith("before changes to `keras_elmo/ops/cell.py`")
    assert _problems(_marked(commit, whole), payload) == []
    suggestion = freshness.visible_text(FILE, payload, short)
    assert suggestion.endswith("before changes to `keras_elmo/`")
    assert _problems(_marked(commit, suggestion), payload) == []
    # A later change to another imported file makes the text false.
    commit_change("benchmarks/speed.py", "from keras_elmo.ops import cell\n")
    problems = _problems(_marked(commit, suggestion), payload)
    assert len(problems) == 1 and "benchmarks/speed.py" in problems[0]


def test_a_dirty_record_is_stale_and_says_so(doctored):
    _, commit, payload, _ = doctored
    payload["provenance"]["uncommitted_changes"] = True
    problems = _problems(DOC, payload)
    assert len(problems) == 1 and "uncommitted changes" in problems[0]
    visible = f"Measured at `{commit[:7]}` with uncommitted changes."
    assert _problems(_marked(commit, visible), payload) == []


def test_a_marker_for_another_commit_is_a_problem(doctored):
    _, commit, payload, commit_change = doctored
    commit_change("keras_elmo/ops/cell.py", "x = 1  # same behaviour\n")
    wrong = DOC + f"<!-- measured-at {FILE} 0000000 -->Measured at `0000000`."
    assert len(_problems(wrong, payload)) == 2


def test_runs_need_markers_only_for_their_stale_runs(doctored):
    repo, commit, payload, commit_change = doctored
    old_run = payload["provenance"]
    commit_change("keras_elmo/ops/cell.py", "x = 1  # same behaviour\n")
    fresh = dict(old_run, commit=_git(repo, "rev-parse", "HEAD"))
    runs = {"runs": [{"provenance": old_run}, {"provenance": fresh}]}
    problems = _problems(DOC, runs)
    assert len(problems) == 1 and commit[:7] in problems[0], problems
    assert fresh["commit"][:7] not in problems[0]
    visible = freshness.visible_text(FILE, runs, commit[:7])
    assert _problems(_marked(commit, visible), runs) == []


def test_a_provenance_module_counts_with_its_own_imports(doctored):
    repo, commit, payload, commit_change = doctored
    (repo / "benchmarks" / "worker.py").write_text(
        "import keras_elmo.ops.unused\n"
    )
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "worker")
    payload["provenance"]["commit"] = _git(repo, "rev-parse", "HEAD")
    payload["provenance"]["modules"] = ["benchmarks/worker.py"]
    payload["provenance"]["imported"] = {}
    assert _problems(DOC, payload) == []
    commit_change("keras_elmo/ops/unused.py", "y = 1  # same\n")
    problems = _problems(DOC, payload)
    assert len(problems) == 1 and "ops/unused.py changed" in problems[0]


def test_provenance_records_the_modules_imported_by_the_end_of_the_run(
    tmp_path,
):
    from keras_elmo.utils import provenance as module

    record = module.provenance("speed.py")
    path = "keras_elmo/utils/provenance.py"
    with open(os.path.join(module.REPO, path), "rb") as f:
        data = f.read()
    header = b"blob %d\0" % len(data)
    assert record["imported"][path] == hashlib.sha1(header + data).hexdigest()
    assert all(
        p.split("/", 1)[0] in module.CODE_FOLDERS for p in record["imported"]
    )
    # write_json brings this process's records up to date (a module the
    # run imported after `provenance()`), and leaves others alone.
    del record["imported"][path]
    other = {"commit": "0" * 40, "imported": {}}
    out = tmp_path / "r.json"
    module.write_json(str(out), {"provenance": record, "runs": [other]})
    written = json.loads(out.read_text())
    assert path in written["provenance"]["imported"]
    assert written["runs"][0]["imported"] == {}


@pytest.mark.skipif(
    not freshness.has_history() or shutil.which("git") is None,
    reason="needs the git history of a clone",
)
def test_in_a_clone_an_edit_to_the_lstm_cell_stales_a_quoted_figure(
    tmp_path, monkeypatch
):
    """The acceptance case: a real benchmark's record made fresh at the
    clone's HEAD goes stale, naming the figure, once a behaviour-
    preserving edit to keras_elmo/ops/lstm_cell.py is committed."""
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--shared", "--no-checkout", REPO, str(clone)],
        check=True,
    )
    head = _git(clone, "rev-parse", "HEAD")
    _git(clone, "checkout", "-q", head, "--", "keras_elmo/ops/lstm_cell.py")
    monkeypatch.setattr(freshness, "REPO", str(clone))
    relative = "benchmarks/results/allennlp_side_by_side.json"
    with open(os.path.join(REPO, relative), encoding="utf-8") as f:
        payload = json.load(f)
    payload["provenance"].update(commit=head, uncommitted_changes=False)
    payload["provenance"].pop("imported", None)
    doc = (
        "1.97<!-- fig benchmarks/results/allennlp_side_by_side.json "
        "summary/file/ratios/keras_elmo/fp32 vs allennlp/plain/"
        "ratio_of_medians {:.2f} -->\n"
    )
    assert freshness.document_problems(doc, lambda r: payload) == []
    cell = clone / "keras_elmo" / "ops" / "lstm_cell.py"
    cell.write_text(cell.read_text() + "# a comment: behaviour unchanged\n")
    _git(clone, "commit", "-qm", "comment", "--", "keras_elmo/ops/lstm_cell.py")
    problems = freshness.document_problems(doc, lambda r: payload)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"the figures 1.97 of {relative}")
    assert "keras_elmo/ops/lstm_cell.py changed after" in problems[0]


def test_mark_stale_writes_the_text_the_check_holds_true(doctored, monkeypatch):
    _, commit, payload, commit_change = doctored
    monkeypatch.setattr(render, "load", lambda relative: payload)
    # Fresh: nothing to mark.
    assert render.mark_stale(DOC) == DOC
    commit_change("keras_elmo/ops/cell.py", "x = 1  # same behaviour\n")
    marked = render.mark_stale(DOC)
    assert marked.startswith(DOC)
    assert render.OLDER_HEADING in marked
    assert _problems(marked, payload) == []
    # A marker whose text a later change made false is reworded.
    commit_change("benchmarks/speed.py", "from keras_elmo.ops import cell\n")
    assert _problems(marked, payload) != []
    reworded = render.mark_stale(marked)
    assert _problems(reworded, payload) == []
    assert "`benchmarks/speed.py` and `keras_elmo/`" in reworded
    assert reworded.count("<!-- measured-at") == 1


def test_mark_stale_drops_listed_markers_a_rerun_made_obsolete(
    doctored, monkeypatch
):
    _, commit, payload, commit_change = doctored
    monkeypatch.setattr(render, "load", lambda relative: payload)
    commit_change("keras_elmo/ops/cell.py", "x = 1  # same behaviour\n")
    marked = render.mark_stale(DOC)
    # Listed twice (two merges each marked it): one bullet stays.
    doubled = marked + marked[len(DOC) :].split("\n\n", 2)[-1]
    assert doubled.count("<!-- measured-at") == 2
    assert render.mark_stale(doubled) == marked
    # The file rerun at HEAD: its old marker goes, and the list with it.
    rerun = dict(payload, provenance=dict(payload["provenance"]))
    rerun["provenance"]["commit"] = _git(doctored[0], "rev-parse", "HEAD")
    monkeypatch.setattr(render, "load", lambda relative: rerun)
    assert render.mark_stale(marked) == DOC
    assert _problems(DOC, rerun) == []
