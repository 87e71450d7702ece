"""Crash injection: count a writer's write points, then SIGKILL a forked
child at each one in turn.

A *write point* is a call that changes what is on disk or makes it
durable: `os.replace` / `rename` / `remove` / `unlink` / `mkdir` /
`rmdir` / `fsync`, `shutil.rmtree`, `tempfile.mkstemp` / `mkdtemp`,
and h5py's `create_dataset`, attribute writes, `flush` and `close`.
`count_points(work)` runs `work()` in this process and returns the
names of the points it passed, in order. `killed_at(k, work)` forks; the
child runs `work()` and sends itself SIGKILL just before its `k`-th
point (so the points before it happened, it and the rest did not), as a
kill -9 or a crash would stop it: no `finally`, no `atexit`, no flush of
HDF5's caches. The child must not run TensorFlow ops (this process's
TensorFlow threads do not survive a fork): the embedding tests give it a
runner that replays vectors computed beforehand.
"""

import contextlib
import os
import shutil
import signal
import tempfile
import time
import traceback

import h5py

_PATCHED = [
    (os, "replace"),
    (os, "rename"),
    (os, "remove"),
    (os, "unlink"),
    (os, "mkdir"),
    (os, "rmdir"),
    (os, "fsync"),
    (shutil, "rmtree"),
    (tempfile, "mkstemp"),
    (tempfile, "mkdtemp"),
    (h5py.Group, "create_dataset"),
    (h5py.AttributeManager, "__setitem__"),
    (h5py.File, "flush"),
    (h5py.File, "close"),
]


@contextlib.contextmanager
def write_points(at_point):
    """Calls `at_point(name)` before every write point inside the block
    (nested calls, e.g. `os.unlink` inside `shutil.rmtree`, count too)."""
    saved = [(owner, name, getattr(owner, name)) for owner, name in _PATCHED]

    def wrap(owner, name, real):
        label = f"{getattr(owner, '__name__', owner)}.{name}"

        def point(*args, **kwargs):
            at_point(label)
            return real(*args, **kwargs)

        return point

    for owner, name, real in saved:
        setattr(owner, name, wrap(owner, name, real))
    try:
        yield
    finally:
        for owner, name, real in saved:
            setattr(owner, name, real)


def count_points(work):
    """`work()` in this process; the write points it passed, in order."""
    names = []
    with write_points(names.append):
        work()
    return names


def killed_at(k, work, timeout=120):
    """Runs `work()` in a forked child killed (SIGKILL, by itself) just
    before its `k`-th write point (1-based). Returns True if it was
    killed, False if `work()` finished first; an error in the child
    fails with its traceback."""
    report = tempfile.mktemp(prefix="crash_child_", suffix=".txt")
    pid = os.fork()
    if pid == 0:  # the child
        try:
            seen = [0]

            def at_point(name):
                seen[0] += 1
                if seen[0] == k:
                    os.kill(os.getpid(), signal.SIGKILL)

            with write_points(at_point):
                work()
            os._exit(0)
        except BaseException:  # noqa: BLE001 (reported to the parent)
            with open(report, "w") as f:
                f.write(traceback.format_exc())
            os._exit(3)
    deadline = time.time() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.time() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"child killed at point {k} hung")
        time.sleep(0.005)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    code = os.WEXITSTATUS(status)
    if code != 0:
        with open(report) as f:
            raise AssertionError(f"child failed at point {k}:\n{f.read()}")
    return False
