"""How fast `keras-elmo --help` and each `keras-elmo COMMAND --help`
answer, as fresh processes, and that none of them imports TensorFlow.

    python benchmarks/cli_help.py [--runs 7] \\
        [--results benchmarks/results/cli_help.json]

Each help is run `--runs` times as `python -m keras_elmo.cli.main ARGS`
(a new interpreter each time, this checkout first on PYTHONPATH, no
`TF_CPP_MIN_LOG_LEVEL` in the environment), commands taking turns; the
wall time of each process is recorded and the median reported. Once per
help, the same arguments run in a process that then lists the modules
it imported, so the results say whether `tensorflow` (or `keras`) was
loaded. Prints one row per help; `--results` writes them with their
provenance (JSON).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs the CLI as `python -m keras_elmo.cli.main ARGS` does, then prints
# the top-level names of the modules the process imported (JSON).
_IMPORTS = """
import json, runpy, sys
sys.argv = ["keras-elmo"] + sys.argv[1:]
try:
    runpy.run_module("keras_elmo.cli.main", run_name="__main__")
except SystemExit:
    pass
names = sorted({m.split(".")[0] for m in sys.modules})
sys.stdout.write("\\n" + json.dumps(names))
"""


def help_commands():
    """The argument lists timed: `--help`, then `COMMAND --help` for
    every command of `keras_elmo.cli.main.COMMANDS`, in its order."""
    sys.path.insert(0, REPO)
    from keras_elmo.cli.main import COMMANDS
    from keras_elmo.cli.main import build_parser

    # The parser imports every command's module here too, so that the
    # results' provenance lists the code the timed processes ran.
    build_parser()
    return [["--help"]] + [[name, "--help"] for name in COMMANDS]


def environment():
    """This checkout first on PYTHONPATH, TensorFlow's log level unset (as
    a newcomer runs the command)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    for name in ("TF_CPP_MIN_LOG_LEVEL", "GLOG_minloglevel"):
        env.pop(name, None)
    return env


def timed_run(args, env):
    """Wall seconds of one `python -m keras_elmo.cli.main ARGS` process."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "keras_elmo.cli.main", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(
            f"keras-elmo {' '.join(args)} exited {done.returncode}: "
            f"{done.stderr.decode(errors='replace')[-500:]}"
        )
    return seconds


def imported_packages(args, env):
    """The top-level packages a `keras-elmo ARGS` process imported."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTS, *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.rstrip().rsplit("\n", 1)[-1])


def summarize(args, seconds, packages):
    """One results row: the runs' seconds, their median, and whether
    TensorFlow or Keras was imported."""
    return {
        "command": "keras-elmo " + " ".join(args),
        "seconds": [round(s, 4) for s in seconds],
        "median_seconds": round(statistics.median(seconds), 4),
        "tensorflow_imported": "tensorflow" in packages,
        "keras_imported": "keras" in packages,
    }


def measure(commands, runs, env):
    """Rows of `summarize`, the commands taking turns within each round."""
    samples = {tuple(args): [] for args in commands}
    for _ in range(runs):
        for args in commands:
            samples[tuple(args)].append(timed_run(args, env))
    return [
        summarize(args, samples[tuple(args)], imported_packages(args, env))
        for args in commands
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--results", default=None)
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    commands = help_commands()
    rows = measure(commands, args.runs, environment())
    for row in rows:
        print(
            f"{row['command']:32s} median {row['median_seconds']:6.3f} s  "
            f"tensorflow imported: {row['tensorflow_imported']}"
        )
    payload = {
        "runs": args.runs,
        "rows": rows,
        "slowest_median_seconds": max(r["median_seconds"] for r in rows),
        "any_tensorflow_imported": any(r["tensorflow_imported"] for r in rows),
    }
    if args.results:
        from benchmarks.provenance import provenance
        from benchmarks.provenance import write_json

        command = "python benchmarks/cli_help.py " + " ".join(
            argv if argv is not None else sys.argv[1:]
        )
        write_json(
            args.results, {"provenance": provenance(command.strip()), **payload}
        )
    return payload


if __name__ == "__main__":
    main()
