"""Is a results file still what its code would print today?

A figure is true of the code that measured it. `stale_commits(relative,
payload)` lists, per provenance record (one per file, or one per run),
why a results file may no longer be:

- its provenance says `uncommitted_changes: true`: the tree that printed
  it is not in git, so nobody can rerun exactly that code;
- its producing script (the command's `.py`, or `keras_elmo/cli/NAME.py`
  for `keras-elmo NAME ...`), or a package module its provenance names
  under `modules`, changed in git after the provenance commit.

A document that quotes such a file must say so, with a marker that
names the file and its commit,

    <!-- measured-at benchmarks/results/x.json 81ef643 -->

next to visible prose saying which commit the figures come from (and,
for a dirty file, that it had uncommitted changes). The marker's commit
must be the file's own, so a rerun (new commit) makes the marker stale
too. `tests/results_files_test.py` enforces it.
"""

import os
import re
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = re.compile(
    r"<!-- measured-at (?P<file>\S+) (?P<commit>[0-9a-f]{7,40}) -->"
)
SCRIPT_FOLDERS = ("benchmarks", "examples", "tools")


def _git(*args):
    done = subprocess.run(
        ["git", *args], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    return done.returncode, done.stdout.strip()


def has_history():
    """True in a git checkout (a wheel or sdist has no history to ask)."""
    return os.path.isdir(os.path.join(REPO, ".git")) or (
        os.path.isfile(os.path.join(REPO, ".git"))
    )


def records(payload):
    """The provenance records of a results file (one, or one per run)."""
    if "provenance" in payload:
        return [payload["provenance"]]
    return [
        r["provenance"] for r in payload.get("runs", []) if "provenance" in r
    ]


def producing_script(relative, command):
    """The repository path of the script `command` ran, or None."""
    words = (command or "").split()
    if words and words[0] in ("python", "python3"):
        words = words[1:]
    if not words:
        return None
    if words[0] == "keras-elmo" and len(words) > 1:
        return f"keras_elmo/cli/{words[1].replace('-', '_')}.py"
    if not words[0].endswith(".py"):
        return None
    if "/" in words[0]:
        return os.path.normpath(words[0])
    home = relative.split("/", 1)[0]
    for folder in (home,) + SCRIPT_FOLDERS:
        candidate = f"{folder}/{words[0]}"
        if os.path.exists(os.path.join(REPO, candidate)):
            return candidate
    return None


def changed_since(commit, paths):
    """The `paths` that git shows changed between `commit` and HEAD."""
    if not paths:
        return []
    code, out = _git("diff", "--name-only", commit, "HEAD", "--", *paths)
    if code != 0:
        return [f"(commit {commit[:10]} is not in this clone's history)"]
    return sorted(set(out.split()))


def record_reasons(relative, record):
    """Why one provenance record of `relative` may not hold for HEAD."""
    commit = record.get("commit") or ""
    found = []
    if record.get("uncommitted_changes"):
        found.append(f"written with uncommitted changes at {commit[:10]}")
    paths = list(record.get("modules") or [])
    script = producing_script(relative, record.get("command"))
    if script:
        paths.append(script)
    if commit:
        for path in changed_since(commit, paths):
            found.append(f"{path} changed after {commit[:10]}")
    return found


def stale_commits(relative, payload):
    """`{commit: [reason, ...]}` of the records that may not hold (a file
    of several runs, one provenance each, can hold fresh and stale ones:
    only the stale ones need a measured-at marker)."""
    found = {}
    for record in records(payload):
        why = record_reasons(relative, record)
        if why:
            found.setdefault(record.get("commit") or "", []).extend(why)
    return found


def commits(payload):
    """The provenance commits of a results file."""
    return [r.get("commit") or "" for r in records(payload)]


def markers(text):
    """`{file: [commit, ...]}` of the measured-at markers in `text`."""
    found = {}
    for match in MARKER.finditer(text):
        found.setdefault(match.group("file"), []).append(match.group("commit"))
    return found


def document_problems(text, load):
    """Problems of one document's quoted figures, as str (none: empty).

    `text` is the document; `load(relative)` returns a results file's
    payload. Each quoted file needs a measured-at marker for the commit
    of each of its stale records (`stale_commits`); each marker must name
    a quoted file and one of its commits (a rerun turns an old marker
    into a problem).
    """
    from_figures = re.compile(r"<!-- fig (\S+) ")
    quoted = sorted(set(from_figures.findall(text)))
    marked = markers(text)
    problems = []
    for relative in quoted:
        stale = stale_commits(relative, load(relative))
        for commit, found in sorted(stale.items()):
            if not any(commit.startswith(m) for m in marked.get(relative, [])):
                problems.append(
                    f"{relative}: {'; '.join(found)}; rerun it, or mark the "
                    f"figures as measured at the older commit: "
                    f"<!-- measured-at {relative} {commit[:7]} -->"
                )
    for relative, marker_commits in marked.items():
        if relative not in quoted:
            problems.append(f"measured-at marker for unquoted {relative}")
            continue
        own = commits(load(relative))
        for m in marker_commits:
            if not any(c.startswith(m) for c in own):
                problems.append(
                    f"{relative}: marked measured at {m}, but the file is "
                    f"from {', '.join(c[:10] for c in own)}: update the "
                    "prose and the marker"
                )
    return problems
