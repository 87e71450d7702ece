"""The durations report of a test run: where the suite's time goes.

Reads the JUnit XML that `pytest --junitxml=FILE -o
junit_duration_report=total` writes (each test's time is its setup,
call and teardown together, so a module- or session-scoped fixture is
charged to the first test that asked for it) and writes:

- `OUT.json`: the run (wall time, counts, when, where) and every test
  and every test file with its seconds, slowest first;
- `OUT.md`: the same as tables, the `--top` slowest tests and every
  file;

and prints the `--top` slowest tests (CI's log shows them). `make test`
runs it on its own run (`build/test-durations.*`); the committed
reports are in `tests/durations/` (see its README).

    python tools/test_durations.py build/junit.xml build/test-durations \
        --top 20 --note "2 cores, 4 other jobs running"

Under pytest-xdist the wall time is less than the sum of the tests'
times (the workers run side by side); both are reported.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import xml.etree.ElementTree as ET


def _file_of(classname, root):
    """`tests.cli.cli_test.TestX` -> `tests/cli/cli_test.py`: the longest
    dotted prefix that is a file under `root` (else the dotted name)."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        path = "/".join(parts[:end]) + ".py"
        if os.path.isfile(os.path.join(root, path)):
            return path
    return classname


def _outcome(case):
    for tag in ("failure", "error", "skipped"):
        if case.find(tag) is not None:
            return {"failure": "failed", "error": "error"}.get(tag, tag)
    return "passed"


def read_junit(path, root="."):
    """`(suite, tests)`: the run's attributes and one dict per test
    (`id`, `file`, `seconds`, `outcome`), in the file's order."""
    tree = ET.parse(path)
    top = tree.getroot()
    suites = [top] if top.tag == "testsuite" else list(top.iter("testsuite"))
    suite = {
        "wall_s": round(sum(float(s.get("time", 0)) for s in suites), 3),
        "timestamp": suites[0].get("timestamp") if suites else None,
        "hostname": suites[0].get("hostname") if suites else None,
    }
    tests = []
    for s in suites:
        for case in s.iter("testcase"):
            classname = case.get("classname", "")
            file = _file_of(classname, root)
            if file.endswith(".py"):
                inner = classname[len(file) - 2 :]  # a class, or ""
            else:
                inner = ""
            name = "::".join(p for p in (file, inner, case.get("name")) if p)
            tests.append(
                {
                    "id": name,
                    "file": file,
                    "seconds": round(float(case.get("time", 0)), 3),
                    "outcome": _outcome(case),
                }
            )
    return suite, tests


def summarize(suite, tests):
    """The report's payload: totals, files and tests, slowest first."""
    files = {}
    for t in tests:
        entry = files.setdefault(t["file"], {"tests": 0, "seconds": 0.0})
        entry["tests"] += 1
        entry["seconds"] += t["seconds"]
    by_file = sorted(
        (
            {"file": f, "tests": e["tests"], "seconds": round(e["seconds"], 3)}
            for f, e in files.items()
        ),
        key=lambda e: (-e["seconds"], e["file"]),
    )
    outcomes = {}
    for t in tests:
        outcomes[t["outcome"]] = outcomes.get(t["outcome"], 0) + 1
    return {
        "run": dict(
            suite,
            tests=len(tests),
            outcomes=dict(sorted(outcomes.items())),
            sum_of_test_s=round(sum(t["seconds"] for t in tests), 3),
        ),
        "files": by_file,
        "tests": sorted(tests, key=lambda t: (-t["seconds"], t["id"])),
    }


def _commit(root):
    try:
        out = subprocess.run(
            ["git", "-C", root, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        dirty = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "--untracked=no"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None, None
    return out.stdout.strip(), bool(dirty.stdout.strip())


def _minutes(seconds):
    return f"{seconds:,.1f} s ({seconds / 60:.1f} min)"


def markdown(report, top):
    run = report["run"]
    lines = [
        "# Test durations",
        "",
        "Each test's seconds are its setup, call and teardown together "
        "(a module- or session-scoped fixture is charged to the first "
        "test that uses it). Written by `tools/test_durations.py`.",
        "",
        f"- wall time: {_minutes(run['wall_s'])}",
        f"- sum of the tests' times: {_minutes(run['sum_of_test_s'])}",
        f"- tests: {run['tests']} "
        + ", ".join(f"{k} {v}" for k, v in run["outcomes"].items()),
    ]
    for key in ("commit", "uncommitted_changes", "command", "machine", "note"):
        if run.get(key) is not None:
            lines.append(f"- {key.replace('_', ' ')}: {run[key]}")
    lines += [
        f"- when: {run.get('timestamp')}",
        "",
        f"## The {top} slowest tests",
        "",
        "| seconds | test |",
        "| ---: | --- |",
    ]
    lines += [
        f"| {t['seconds']:.2f} | `{t['id']}` |" for t in report["tests"][:top]
    ]
    lines += [
        "",
        "## Every test file",
        "",
        "| seconds | tests | file |",
        "| ---: | ---: | --- |",
    ]
    lines += [
        f"| {f['seconds']:.2f} | {f['tests']} | `{f['file']}` |"
        for f in report["files"]
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("junit", help="pytest's --junitxml file")
    parser.add_argument("out", help="OUT: writes OUT.json and OUT.md")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--root", default=".", help="the repository root")
    parser.add_argument("--command", help="the test command, recorded")
    parser.add_argument("--note", help="e.g. how loaded the machine was")
    args = parser.parse_args(argv)

    suite, tests = read_junit(args.junit, args.root)
    report = summarize(suite, tests)
    commit, dirty = _commit(args.root)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    report["run"].update(
        commit=commit,
        uncommitted_changes=dirty,
        command=args.command,
        machine=(
            f"{platform.machine()}, {os.cpu_count()} cores, load average "
            f"at the end {' '.join(f'{x:.2f}' for x in load)}"
            if load
            else None
        ),
        note=args.note,
    )
    folder = os.path.dirname(args.out)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(args.out + ".json", "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    with open(args.out + ".md", "w", encoding="utf-8") as f:
        f.write(markdown(report, args.top))
    run = report["run"]
    print(
        f"== {run['tests']} tests in {_minutes(run['wall_s'])} wall "
        f"(sum of test times {_minutes(run['sum_of_test_s'])}); "
        f"the {args.top} slowest (setup + call + teardown):"
    )
    for t in report["tests"][: args.top]:
        print(f"{t['seconds']:9.2f} s  {t['id']}")
    print(f"== report: {args.out}.md, {args.out}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
