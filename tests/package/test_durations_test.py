"""`tools/test_durations.py`: a JUnit XML file of pytest's becomes the
durations report, per test and per file, slowest first."""

import importlib.util
import json
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
spec = importlib.util.spec_from_file_location(
    "test_durations", os.path.join(REPO, "tools", "test_durations.py")
)
tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tool)

# As pytest writes it (xunit2: no file attribute; a class in one name).
JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests"><testsuite name="pytest" errors="0"
 failures="1" skipped="1" tests="5" time="12.500"
 timestamp="2026-12-07T05:00:00" hostname="ci">
<testcase classname="tests.cli.cli_test" name="test_a" time="1.250" />
<testcase classname="tests.cli.cli_test.TestGroup" name="test_b[x-1]"
 time="4.000"><failure message="no">trace</failure></testcase>
<testcase classname="tests.beam.run_test" name="test_c" time="6.500" />
<testcase classname="tests.beam.run_test" name="test_d" time="0.000">
<skipped message="needs x" /></testcase>
<testcase classname="tests.gone_test" name="test_e" time="0.250" />
</testsuite></testsuites>
"""


def _root(tmp_path):
    for name in ("tests/cli/cli_test.py", "tests/beam/run_test.py"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    (tmp_path / "junit.xml").write_text(JUNIT)
    return tmp_path


def test_tests_and_files_with_their_seconds_slowest_first(tmp_path):
    root = _root(tmp_path)
    suite, tests = tool.read_junit(str(root / "junit.xml"), str(root))
    report = tool.summarize(suite, tests)
    assert report["run"] == {
        "wall_s": 12.5,
        "timestamp": "2026-12-07T05:00:00",
        "hostname": "ci",
        "tests": 5,
        "outcomes": {"failed": 1, "passed": 3, "skipped": 1},
        "sum_of_test_s": 12.0,
    }
    assert [(t["id"], t["seconds"], t["outcome"]) for t in report["tests"]] == [
        ("tests/beam/run_test.py::test_c", 6.5, "passed"),
        ("tests/cli/cli_test.py::TestGroup::test_b[x-1]", 4.0, "failed"),
        ("tests/cli/cli_test.py::test_a", 1.25, "passed"),
        # A module that is not on disk keeps its dotted name.
        ("tests.gone_test::test_e", 0.25, "passed"),
        ("tests/beam/run_test.py::test_d", 0.0, "skipped"),
    ]
    assert report["files"] == [
        {"file": "tests/beam/run_test.py", "tests": 2, "seconds": 6.5},
        {"file": "tests/cli/cli_test.py", "tests": 2, "seconds": 5.25},
        {"file": "tests.gone_test", "tests": 1, "seconds": 0.25},
    ]


def test_the_command_writes_both_files_and_prints_the_slowest(tmp_path, capsys):
    root = _root(tmp_path)
    out = str(root / "build" / "durations")
    argv = [str(root / "junit.xml"), out, "--top", "2", "--root", str(root)]
    assert tool.main(argv + ["--note", "loaded"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("== 5 tests in 12.5 s (0.2 min) wall")
    assert printed[1:3] == [
        "     6.50 s  tests/beam/run_test.py::test_c",
        "     4.00 s  tests/cli/cli_test.py::TestGroup::test_b[x-1]",
    ]
    with open(out + ".json") as f:
        report = json.load(f)
    assert len(report["tests"]) == 5 and report["run"]["note"] == "loaded"
    with open(out + ".md") as f:
        text = f.read()
    assert "| 6.50 | `tests/beam/run_test.py::test_c` |" in text
    # Only --top tests in the Markdown table, every file.
    assert "test_a" not in text
    assert "| 0.25 | 1 | `tests.gone_test` |" in text
