"""Is a results file still what its code would print today?

A figure is true of the code that measured it. `record_reasons(relative,
record)` says, per provenance record (one per file, or one per run), why
a results file may no longer be:

- its provenance says `uncommitted_changes: true`: the tree that printed
  it is not in git, so nobody can rerun exactly that code;
- a file of the repository its run depended on differs at HEAD from
  what the run had: its producing script (the command's `.py`, or
  `keras_elmo/cli/NAME.py` for `keras-elmo NAME ...`), a file its
  provenance names under `modules`, and every module the run imported.

Which modules a run imported: a record written since provenance learned
it lists them under `imported`, with each file's git blob digest, taken
from `sys.modules` when the results file was written. An older record
has no such list; for it, and for the scripts under `modules` (worker
processes whose imports the parent never sees), the list is the static
import closure of the script at the record's commit
(`static_closure`): every `import` of a repository module anywhere in
the script and, recursively, in the modules it reaches, parent
packages included, and the repository scripts it names as `.py`
strings (the workers it starts). That over-counts (an import inside
a function the run never called) and never under-counts a plain
import, so a figure may be called stale by caution, never fresh by
omission; a module loaded by a computed name is not followed.

A document that quotes a stale file says so where a reader sees it:
right after a marker naming the file and its commit,

    <!-- measured-at benchmarks/results/x.json 81ef643 -->Measured at
    `81ef643`, before changes to `keras_elmo/ops/` and `benchmarks/x.py`.

("with uncommitted changes" after the commit for a dirty file). The
check holds that text true: the commit is the record's; the backquoted
paths (a folder ending in `/` stands for the files under it) cover
every changed file, and each names at least one. A rerun (new commit)
makes the marker wrong, and a change to a file the text does not cover
makes the text wrong: `tests/results_files_test.py` fails, naming the
figures. (A folder is a trade: `keras_elmo/` stays true through every
later change to the package; naming files keeps each new change
visible, at the cost of a long list.)
"""

import ast
import functools
import os
import re
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = re.compile(
    r"<!-- measured-at (?P<file>\S+) (?P<commit>[0-9a-f]{7,40}) -->"
)
# The visible text a marker must be followed by.
VISIBLE = re.compile(
    r"\s*\(?[Mm]easured\s+at\s+`(?P<commit>[0-9a-f]{7,40})`"
    r"(?P<dirty>\s+with\s+uncommitted\s+changes)?"
    r"(?:,?\s+before\s+changes\s+to\s+"
    r"(?P<paths>`[^`\s]+`(?:(?:,\s+|,?\s+and\s+)`[^`\s]+`)*))?"
)
SCRIPT_FOLDERS = ("benchmarks", "examples", "tools")
PACKAGE = "keras_elmo"


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
    at_head = tree("HEAD") or {}
    for folder in (home,) + SCRIPT_FOLDERS:
        candidate = f"{folder}/{words[0]}"
        if candidate in at_head or os.path.exists(
            os.path.join(REPO, candidate)
        ):
            return candidate
    return None


def tree(commit):
    """`{path: blob}` of every file at `commit` (None: not in history)."""
    return _tree(REPO, commit, _git("rev-parse", "HEAD")[1])


@functools.lru_cache(maxsize=None)
def _tree(repo, commit, head):
    done = subprocess.run(
        ["git", "ls-tree", "-r", "-z", commit],
        cwd=repo,
        capture_output=True,
        timeout=60,
    )
    if done.returncode != 0:
        return None
    found = {}
    for entry in done.stdout.decode("utf-8").split("\0"):
        if entry:
            meta, path = entry.split("\t", 1)
            found[path] = meta.split()[2]
    return found


@functools.lru_cache(maxsize=None)
def _imports(blob):
    """The dotted names a Python file (a git blob) imports, anywhere in
    it, with `from A import B` giving both `A` and `A.B`; string
    constants that spell a package module (`import_module("...")`), and
    `file:NAME` for a string naming a `.py` file (a script it runs in
    another process, `[sys.executable, "worker.py", ...]`)."""
    done = subprocess.run(
        ["git", "cat-file", "blob", blob],
        cwd=REPO,
        capture_output=True,
        timeout=60,
    )
    try:
        module = ast.parse(done.stdout)
    except SyntaxError:
        return ()
    names = []
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and not (node.level)
        ):
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and re.fullmatch(rf"{PACKAGE}(\.\w+)+", node.value)
        ):
            names.append(node.value)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and re.fullmatch(r"[\w./-]+\.py", node.value)
        ):
            names.append("file:" + node.value)  # a script it runs
    return tuple(names)


def _module_files(name, folder, files):
    """The files that importing `name` runs, from a script in `folder`:
    a package module and its parent packages' `__init__.py`, a sibling
    script of the same folder, or a script it runs (`file:PATH`)."""
    if name.startswith("file:"):
        path = name[len("file:") :]
        near = f"{folder}/{os.path.basename(path)}" if folder else path
        return [p for p in (path, near) if p in files][:1]
    parts = name.split(".")
    if parts[0] != PACKAGE:
        sibling = f"{folder}/{parts[0]}.py"
        return [sibling] if folder and sibling in files else []
    found = []
    for end in range(1, len(parts) + 1):
        base = "/".join(parts[:end])
        for candidate in (f"{base}/__init__.py", f"{base}.py"):
            if candidate in files:
                found.append(candidate)
    return found


def static_closure(commit, scripts):
    """`{path: blob}` at `commit` of `scripts` and every repository
    module they import, directly or not (module docstring); None when
    `commit` is not in this clone's history."""
    files = tree(commit)
    if files is None:
        return None
    seen = {}
    stack = [s for s in scripts if s in files]
    while stack:
        path = stack.pop()
        if path in seen:
            continue
        seen[path] = files[path]
        folder = os.path.dirname(path)
        for name in _imports(files[path]):
            stack += _module_files(name, folder, files)
    return dict(sorted(seen.items()))


def depended_on(relative, record):
    """`{path: blob}` of the files the record's figures depend on (None:
    its commit is not in this clone's history)."""
    commit = record.get("commit") or ""
    script = producing_script(relative, record.get("command"))
    listed = list(record.get("modules") or [])
    imported = record.get("imported")
    scripts = listed + ([script] if script else [])
    if not imported:
        closure = static_closure(commit, scripts) if commit else {}
        return closure
    files = tree(commit) if commit else {}
    if files is None:
        return None
    found = {p: files[p] for p in scripts if p in files}
    python = [p for p in listed if p.endswith(".py")]
    found.update(static_closure(commit, python) or {})
    found.update(imported)
    return found


def changed_paths(relative, record):
    """The files the record depends on that differ at HEAD (sorted), or
    None when its commit is not in this clone's history."""
    files = depended_on(relative, record)
    if files is None:
        return None
    head = tree("HEAD") or {}
    return sorted(p for p, blob in files.items() if head.get(p) != blob)


def record_reasons(relative, record):
    """Why one provenance record of `relative` may not hold for HEAD."""
    commit = (record.get("commit") or "")[:10]
    found = []
    if record.get("uncommitted_changes"):
        found.append(f"written with uncommitted changes at {commit}")
    changed = changed_paths(relative, record)
    if changed is None:
        found.append(f"(commit {commit} is not in this clone's history)")
    else:
        found += [f"{path} changed after {commit}" for path in changed]
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


def visible_text(relative, payload, commit, fold=True):
    """The text a reader must see after the measured-at marker of the
    record of `relative` at `commit`: what `text_problems` accepts.
    `fold`: package modules named as the package folder (`keras_elmo/`),
    other files one by one; else every changed file by name."""
    record = next(r for r in records(payload) if r["commit"].startswith(commit))
    changed = changed_paths(relative, record) or []
    inside = PACKAGE + "/"
    names = sorted(
        {
            f"`{inside}`" if fold and p.startswith(inside) else f"`{p}`"
            for p in changed
        }
    )
    text = f"measured at `{commit}`"
    if record.get("uncommitted_changes"):
        text += " with uncommitted changes"
    if names:
        text += ", before changes to " + (
            names[0]
            if len(names) == 1
            else ", ".join(names[:-1]) + " and " + names[-1]
        )
    return text


def _covers(name, path):
    return path.startswith(name) if name.endswith("/") else path == name


def text_problems(relative, payload, commit, visible):
    """Why the visible text after a marker of `relative` at `commit`
    is not true of it (a list; empty when it holds)."""
    record = next(
        (
            r
            for r in records(payload)
            if (r.get("commit") or "").startswith(commit)
        ),
        None,
    )
    if record is None:
        return []  # reported as a marker for another commit
    example = visible_text(relative, payload, commit)
    match = VISIBLE.match(visible)
    if match is None:
        return [
            f"{relative}: the measured-at marker for {commit} must be "
            f"followed by visible text, e.g. {example}"
        ]
    problems = []
    if not record["commit"].startswith(match.group("commit")):
        problems.append(
            f"{relative}: the text says measured at {match.group('commit')}"
            f", the marker {commit}"
        )
    if bool(match.group("dirty")) != bool(record.get("uncommitted_changes")):
        problems.append(
            f"{relative}: the text must say whether it had uncommitted "
            f"changes ({bool(record.get('uncommitted_changes'))})"
        )
    named = re.findall(r"`([^`]+)`", match.group("paths") or "")
    changed = changed_paths(relative, record) or []
    missing = [p for p in changed if not any(_covers(n, p) for n in named)]
    spare = [n for n in named if not any(_covers(n, p) for p in changed)]
    if missing:
        problems.append(
            f"{relative}: measured at {commit}, the text does not name the "
            f"changes to {', '.join(missing)}; e.g. {example}"
        )
    if spare:
        problems.append(
            f"{relative}: measured at {commit}, the text names "
            f"{', '.join(spare)}, which did not change; e.g. {example}"
        )
    return problems


def document_problems(text, load):
    """Problems of one document's quoted figures, as str (none: empty).

    `text` is the document; `load(relative)` returns a results file's
    payload. Each quoted file needs a measured-at marker for the commit
    of each of its stale records (`stale_commits`), followed by visible
    text that is true of it (`text_problems`); each marker must name a
    quoted file and one of its commits (a rerun turns an old marker
    into a problem).
    """
    from_figures = re.compile(r"([0-9][0-9.,eE+-]*%?)<!-- fig (\S+) ")
    figures = {}
    for number, relative in from_figures.findall(text):
        figures.setdefault(relative, []).append(number)
    quoted = sorted(figures)
    marked = markers(text)
    problems = []
    for relative in quoted:
        stale = stale_commits(relative, load(relative))
        for commit, found in sorted(stale.items()):
            if not any(commit.startswith(m) for m in marked.get(relative, [])):
                problems.append(
                    f"the figures {', '.join(figures[relative])} of "
                    f"{relative}: {'; '.join(found)}; rerun it, or mark the "
                    f"figures as measured at the older commit: "
                    f"<!-- measured-at {relative} {commit[:7]} -->"
                    + visible_text(relative, load(relative), commit[:7])
                )
    for match in MARKER.finditer(text):
        relative, m = match.group("file"), match.group("commit")
        if relative not in quoted:
            problems.append(f"measured-at marker for unquoted {relative}")
            continue
        own = commits(load(relative))
        if not any(c.startswith(m) for c in own):
            problems.append(
                f"{relative}: marked measured at {m}, but the file is "
                f"from {', '.join(c[:10] for c in own)}: update the "
                "prose and the marker"
            )
            continue
        problems += text_problems(
            relative, load(relative), m, text[match.end() :]
        )
    return problems


def visible_spans(text):
    """`(start, end)` of each marker and the visible text after it that
    `VISIBLE` reads (the commit a reader sees there is checked)."""
    spans = []
    for match in MARKER.finditer(text):
        after = VISIBLE.match(text, match.end())
        spans.append((match.start(), after.end() if after else match.end()))
    return spans
