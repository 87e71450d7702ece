"""How `make test` shares the suite between pytest-xdist's workers.

`make test` runs `pytest -n 2 --dist loadfile`: xdist sends each unit
of work (here `unit_of`) whole to one worker, and hands the units out
in the order the workers collected them. tests/conftest.py imports this
module's two hooks:

- `pytest_xdist_make_scheduler` (in the controller, for `--dist
  loadfile`): xdist's file scheduler with `unit_of` as the unit: a
  test file, so a file's module-scoped fixtures (a zygote, a trained
  model, a SavedModel, a built wheel, a Spark cluster) are built once,
  on one worker, as in a run without xdist (session-scoped ones at most
  once per worker); or a whole `ENGINES` folder, so one worker owns that
  engine (the Spark JVMs of tests/spark never run side by side on two
  cores, the Beam pipelines of tests/beam run one at a time);
- `pytest_collection_modifyitems` (in each worker, on the same
  collection, so all agree; `order_items`): the units slowest first, by the
  seconds per file of the committed durations report (`REPORTS`, the
  first that exists), so no long unit starts last and leaves a core
  idle at the end. A file the report does not know counts as 0 s and
  keeps its place; tests keep their order inside a unit.

A new test file needs nothing here: it is its own unit. (xdist's
`--dist loadgroup` marks would do the grouping, but xdist 3.8 renames a
marked test through `item._nodeid`, which pytest 9.2 no longer reads:
the marks are silently ignored.)
"""

import json
import os

import pytest

# Folders whose tests all run on one worker: they start an engine.
ENGINES = {"tests/spark/": "tests/spark", "tests/beam/": "tests/beam"}
# The committed durations reports the order comes from, first found wins.
REPORTS = ("tests/durations/after.json", "tests/durations/baseline.json")


def file_seconds(root):
    """`{test file: seconds}` of the first of `REPORTS` under `root`
    (empty if none)."""
    for name in REPORTS:
        path = os.path.join(root, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                files = json.load(f)["files"]
            return {e["file"]: e["seconds"] for e in files}
    return {}


def unit_of(nodeid):
    """The unit of work of a test id: its engine's folder, else its file."""
    path = nodeid.split("::", 1)[0]
    for folder, unit in ENGINES.items():
        if path.startswith(folder):
            return unit
    return path


def order_items(items, root):
    """Reorders `items` in place: whole units (`unit_of`), slowest first
    (`file_seconds`), ties in collection order."""
    seconds = file_seconds(root)
    units = [unit_of(item.nodeid) for item in items]
    first, files = {}, {}
    for index, (item, unit) in enumerate(zip(items, units)):
        first.setdefault(unit, index)
        files.setdefault(unit, set()).add(item.nodeid.split("::", 1)[0])
    cost = {
        unit: sum(seconds.get(path, 0.0) for path in paths)
        for unit, paths in files.items()
    }
    order = sorted(
        range(len(items)),
        key=lambda i: (-cost[units[i]], first[units[i]], i),
    )
    items[:] = [items[i] for i in order]


def make_scheduler(config, log):
    """xdist's `loadfile` scheduler with `unit_of` as its unit, handing
    the units out in collection order (`order_items`' order: xdist's
    default would sort them by their number of tests)."""
    from xdist.scheduler import LoadFileScheduling

    class UnitScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid):
            return unit_of(nodeid)

    config.option.loadscopereorder = False
    return UnitScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """In a pytest-xdist worker: the units slowest first (`order_items`)."""
    if hasattr(config, "workerinput"):
        order_items(items, str(config.rootpath))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`: `make_scheduler`'s units (else xdist's own)."""
    if config.getvalue("dist") == "loadfile":
        return make_scheduler(config, log)
    return None
