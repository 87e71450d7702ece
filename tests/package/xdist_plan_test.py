"""`tests/xdist_plan.py`: under `make test`'s pytest-xdist, whole files
(and the engines' folders) go to one worker, the slowest first."""

import json
import os
import subprocess
import sys

from tests import xdist_plan

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


class Item:
    """What `order_items` reads of a pytest item."""

    def __init__(self, nodeid):
        self.nodeid = nodeid


def _report(root, seconds):
    path = root / "tests" / "durations" / "baseline.json"
    path.parent.mkdir(parents=True)
    files = [{"file": f, "tests": 1, "seconds": s} for f, s in seconds.items()]
    path.write_text(json.dumps({"files": files}))


def test_units_are_files_or_engine_folders():
    assert xdist_plan.unit_of("tests/a_test.py::test_1[x-y]") == (
        "tests/a_test.py"
    )
    assert xdist_plan.unit_of("tests/cli/b_test.py::Class::test") == (
        "tests/cli/b_test.py"
    )
    assert xdist_plan.unit_of("tests/spark/c_test.py::test") == "tests/spark"
    assert xdist_plan.unit_of("tests/beam/d_test.py::test") == "tests/beam"
    assert xdist_plan.unit_of("tests/beamish_test.py::t") == (
        "tests/beamish_test.py"
    )


def test_whole_units_slowest_first(tmp_path):
    _report(
        tmp_path,
        {
            "tests/a_test.py": 1.0,
            "tests/b_test.py": 30.0,
            "tests/spark/one_test.py": 10.0,
            "tests/spark/two_test.py": 15.0,
            "tests/c_test.py": 5.0,
        },
    )
    items = [
        Item("tests/a_test.py::test_1"),
        Item("tests/a_test.py::test_2[x]"),
        Item("tests/spark/one_test.py::test_1"),
        Item("tests/new_test.py::test_1"),  # not in the report: 0 s
        Item("tests/b_test.py::test_1"),
        Item("tests/c_test.py::test_1"),
        Item("tests/spark/two_test.py::test_1"),
        Item("tests/b_test.py::Class::test_2"),
    ]
    xdist_plan.order_items(items, str(tmp_path))
    assert [i.nodeid for i in items] == [
        "tests/b_test.py::test_1",
        "tests/b_test.py::Class::test_2",
        # Spark's two files: 25 s, one unit.
        "tests/spark/one_test.py::test_1",
        "tests/spark/two_test.py::test_1",
        "tests/c_test.py::test_1",
        "tests/a_test.py::test_1",
        "tests/a_test.py::test_2[x]",
        "tests/new_test.py::test_1",
    ]


def test_without_a_report_the_collection_order_stays(tmp_path):
    items = [Item("tests/z_test.py::t"), Item("tests/a_test.py::t")]
    xdist_plan.order_items(items, str(tmp_path))
    assert [i.nodeid for i in items] == [
        "tests/z_test.py::t",
        "tests/a_test.py::t",
    ]


def test_two_workers_build_each_files_module_fixture_once(tmp_path):
    """A real `-n 2 --dist loadfile` run with the hooks of tests/conftest.py:
    every file's module fixture is built once, the two files of an
    `ENGINES` folder run on one worker, and both workers ran tests."""
    tests = tmp_path / "tests"
    (tests / "spark").mkdir(parents=True)
    (tests / "conftest.py").write_text(
        "import os\n"
        "import pytest\n"
        # What tests/conftest.py imports (not the rest: TensorFlow).
        "from tests.xdist_plan import pytest_collection_modifyitems\n"
        "from tests.xdist_plan import pytest_xdist_make_scheduler\n"
        "@pytest.fixture(scope='module')\n"
        "def built(request):\n"
        "    with open(os.environ['BUILT_LOG'], 'a') as f:\n"
        "        f.write(request.path.name + ' '\n"
        "                + os.environ['PYTEST_XDIST_WORKER'] + '\\n')\n"
    )
    for name in ("a_test", "b_test", "spark/c_test", "spark/d_test"):
        (tests / f"{name}.py").write_text(
            "import time\n"
            + "".join(
                f"def test_{k}(built):\n    time.sleep(0.1)\n" for k in range(4)
            )
        )
    log = tmp_path / "built.log"
    env = dict(os.environ, BUILT_LOG=str(log), PYTHONPATH=REPO)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + ["-n", "2", "--dist", "loadfile"]
        + ["--rootdir", str(tmp_path), "-c", os.devnull, "tests"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "16 passed" in done.stdout
    built = dict(line.split() for line in log.read_text().splitlines())
    assert len(log.read_text().splitlines()) == 4  # once per file
    assert sorted(built) == ["a_test.py", "b_test.py", "c_test.py", "d_test.py"]
    assert built["c_test.py"] == built["d_test.py"]
    assert set(built.values()) == {"gw0", "gw1"}


def test_the_suites_conftest_uses_these_hooks():
    import tests.conftest

    assert tests.conftest.pytest_collection_modifyitems is (
        xdist_plan.pytest_collection_modifyitems
    )
    assert tests.conftest.pytest_xdist_make_scheduler is (
        xdist_plan.pytest_xdist_make_scheduler
    )
