"""Where a figure came from: commit, machine, load, date; written atomically.

Every results file (`benchmarks/results/`, `examples/results/`, the model
card's) holds `provenance()`, so a number can be traced to the code and
the machine that printed it (benchmarks/README.md, "Results discipline").
The commit is that of the git checkout holding this package, or None for
an installed copy.
"""

import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys

from keras_elmo.utils.atomic import atomic_write

REPO = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)
# The repository folders whose imported modules a record lists.
CODE_FOLDERS = ("keras_elmo", "benchmarks", "examples", "tools")
# The records `provenance()` made in this process; `write_json` brings
# their `imported` up to date when it writes them (end of the run).
_LIVE = []


def _git(*args):
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def cpu_model():
    """The CPU model name from /proc/cpuinfo (else `platform.processor`)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def blob_digest(data):
    """The git blob id of `data` (bytes): `git hash-object` without git,
    so a digest compares with `git ls-tree` at any commit."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def imported_modules():
    """`{path: blob digest}` of the repository's modules this process has
    imported (`sys.modules`, files under `CODE_FOLDERS`), the running
    script included; paths relative to the repository."""
    found = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path or not path.endswith(".py"):
            continue
        relative = os.path.relpath(os.path.abspath(path), REPO)
        if relative.split(os.sep, 1)[0] not in CODE_FOLDERS:
            continue
        try:
            with open(path, "rb") as f:
                found[relative.replace(os.sep, "/")] = blob_digest(f.read())
        except OSError:
            continue
    return dict(sorted(found.items()))


def provenance(command=None, written=(), modules=()):
    """A dict: the git commit (and whether the tree had changes), the
    command line, CPU model, cores, 1/5/15-minute load averages, UTC date,
    Python / TensorFlow / Keras versions.

    `written`: the files the command itself writes (a results file it
    rewrites after each round), which are not counted as changes.
    `modules`: repository paths of other files the figures depend on
    (a worker script run in another process, a reference harness),
    recorded as `modules`; tools/results_freshness.py treats a change to
    any of them after the commit like a change to the script.

    `imported` records `imported_modules()`: every module of the
    repository the process imported, with its git blob digest. It is
    taken now and again when `write_json` writes the record, so modules
    imported after this call (the run itself) are listed too; a figure
    is stale once any of them differs at HEAD.
    """
    versions = {"python": platform.python_version()}
    for name in ("tensorflow", "keras", "numpy"):
        module = sys.modules.get(name)
        if module is not None:
            versions[name] = getattr(module, "__version__", "?")
    excluded = [
        ":(exclude)" + os.path.relpath(os.path.abspath(path), REPO)
        for path in written
    ]
    status = _git(
        "status", "--porcelain", "--untracked-files=no", "--", ".", *excluded
    )
    record = {
        "commit": _git("rev-parse", "HEAD"),
        "uncommitted_changes": bool(status) if status is not None else None,
        "command": command
        or " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]),
        "cpu_model": cpu_model(),
        "cpu_cores": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M:%S"
        ),
        "versions": versions,
        **({"modules": list(modules)} if modules else {}),
        "imported": imported_modules(),
    }
    _LIVE.append(record)
    return record


def _refresh_imported(value):
    """Updates `imported` of the records of this process inside `value`."""
    if isinstance(value, dict):
        if any(value is live for live in _LIVE):
            value["imported"] = {
                **value.get("imported", {}),
                **imported_modules(),
            }
            return
        for item in value.values():
            _refresh_imported(item)
    elif isinstance(value, list):
        for item in value:
            _refresh_imported(item)


def write_json(path, payload):
    """Writes `payload` as indented JSON to `path`, atomically; the
    provenance records this process made list every module imported by
    now (`imported_modules`)."""
    _refresh_imported(payload)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with atomic_write(path) as f:
        json.dump(payload, f, indent=1)
        f.write("\n")
    return path
