"""Where a figure came from: commit, machine, load, date; written atomically.

Every results file (`benchmarks/results/`, `examples/results/`, the model
card's) holds `provenance()`, so a number can be traced to the code and
the machine that printed it (benchmarks/README.md, "Results discipline").
The commit is that of the git checkout holding this package, or None for
an installed copy.
"""

import datetime
import json
import os
import platform
import subprocess
import sys

from keras_elmo.utils.atomic import atomic_write

REPO = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)


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


def provenance(command=None, written=(), modules=()):
    """A dict: the git commit (and whether the tree had changes), the
    command line, CPU model, cores, 1/5/15-minute load averages, UTC date,
    Python / TensorFlow / Keras versions.

    `written`: the files the command itself writes (a results file it
    rewrites after each round), which are not counted as changes.
    `modules`: repository paths of the package modules the figures
    depend on (e.g. "keras_elmo/layers/char_cnn_embedding.py"), recorded
    as `modules`; tests/results_files_test.py then treats a change to
    any of them after the commit like a change to the script.
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
    return {
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
    }


def write_json(path, payload):
    """Writes `payload` as indented JSON to `path`, atomically."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with atomic_write(path) as f:
        json.dump(payload, f, indent=1)
        f.write("\n")
    return path
