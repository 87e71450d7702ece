"""A killed atomic write leaves its temporary; the next write of the same
path removes it, but never a live writer's (`atomic.remove_abandoned`)."""

import glob
import os
import signal
import time

import pytest

from keras_elmo.utils import atomic
from tests.robustness.crash_points import count_points
from tests.robustness.crash_points import killed_at

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork"), reason="kills forked writers (POSIX only)"
)


def _write(path, text):
    with atomic.atomic_write(path) as f:
        f.write(text)


def _make_tree(path):
    with atomic.atomic_directory(path) as tmp:
        with open(os.path.join(tmp, "part"), "w") as f:
            f.write("new")


def _live_writer(path, kind):
    """A forked writer that holds its temporary open until killed."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        opened = atomic.atomic_write(path) if kind == "file" else None
        opened = opened or atomic.atomic_directory(path)
        with opened:
            os.write(write_end, b"x")
            time.sleep(600)
        os._exit(0)
    os.read(read_end, 1)
    return pid


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_the_next_write_removes_a_killed_writes_temporary(tmp_path, kind):
    path = str(tmp_path / "out")
    write = (lambda: _write(path, "new")) if kind == "file" else None
    write = write or (lambda: _make_tree(path))
    pattern = str(tmp_path / ".out.*.tmp")
    points = count_points(write)
    atomic.shutil.rmtree(path) if kind == "directory" else os.remove(path)
    # Killed just before the rename into place.
    last = max(
        i for i, n in enumerate(points, 1) if n in ("os.replace", "os.rename")
    )
    assert killed_at(last, write)
    abandoned = glob.glob(pattern)
    assert len(abandoned) == 1 and not os.path.exists(path)
    live = _live_writer(path, kind)  # a writer too: removes the killed one
    try:
        held = glob.glob(pattern)
        assert len(held) == 1 and held != abandoned
        write()
        assert glob.glob(pattern) == held  # a live writer's stays
    finally:
        os.kill(live, signal.SIGKILL)
        os.waitpid(live, 0)
    write()  # the live writer is dead now: its temporary goes too
    assert glob.glob(pattern) == []
    assert os.listdir(str(tmp_path)) == ["out"]
