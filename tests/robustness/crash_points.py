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

Commands that run TensorFlow (`train`, `export`) are killed in children
of a *zygote* (`Zygote`, this module run as a script): a process that
imported TensorFlow, Keras and keras_elmo but ran no op, so that a fork
of it may run TensorFlow, and the import (the slowest part of a small
run) is paid once, and so is AutoGraph's conversion of the functions
the first finished child traced (`tests.cli_process.warm`: done in the
zygote after it). There the write points also include TensorFlow's own
(`tensorflow_points`: `file_io` writes, renames, removals and folder
creations, the `SaveV2` op that writes a checkpoint's shards and the
`MergeV2Checkpoints` op that moves them into place). A C++ op cannot be
stopped half-way from Python, so `torn=True` kills just *after* such a
point instead, having first cut its output as a kill inside it would
(`_TEARS`): the shard's data half written and no index, the merged index
half written, a `file_io` file half written.
"""

import contextlib
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback

import h5py

from keras_elmo.utils import atomic
from tests.cli_process import record_conversions
from tests.cli_process import wait_child
from tests.cli_process import warm

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
    (atomic, "exchange_paths"),  # renameat2(2) through ctypes
]


def tensorflow_points():
    """TensorFlow's write points (imports TensorFlow): the leaf `file_io`
    calls (the v1 names call these) and the checkpoint ops."""
    from tensorflow.python.lib.io import file_io
    from tensorflow.python.ops import gen_io_ops
    from tensorflow.python.ops import io_ops

    names = [
        "write_string_to_file",
        "rename_v2",
        "delete_file_v2",
        "recursive_create_dir_v2",
        "create_dir_v2",
        "copy_v2",
        "delete_recursively_v2",
    ]
    return [(file_io, n) for n in names] + [
        (io_ops, "save_v2"),
        (gen_io_ops, "merge_v2_checkpoints"),
    ]


def _label(owner, name):
    owner_name = getattr(owner, "__name__", str(owner))
    return f"{owner_name.rsplit('.', 1)[-1]}.{name}"


def _text(value):
    if hasattr(value, "numpy"):
        value = value.numpy()
    return value.decode() if isinstance(value, bytes) else str(value)


def _cut(path, keep=0.5):
    if os.path.exists(path):
        with open(path, "r+b") as f:
            f.truncate(int(os.path.getsize(path) * keep))


def _tear_shard(args, kwargs):
    prefix = _text(args[0] if args else kwargs["prefix"])
    _cut(prefix + ".data-00000-of-00001")
    if os.path.exists(prefix + ".index"):
        os.unlink(prefix + ".index")


def _tear_merge(args, kwargs):
    destination = args[1] if len(args) > 1 else kwargs["destination_prefix"]
    _cut(_text(destination) + ".index")


def _tear_file(args, kwargs):
    _cut(_text(args[0] if args else kwargs["filename"]))


# Points after which `torn=True` cuts the output as a kill inside would.
_TEARS = {
    "io_ops.save_v2": _tear_shard,
    "gen_io_ops.merge_v2_checkpoints": _tear_merge,
    "file_io.write_string_to_file": _tear_file,
}
TEARABLE = frozenset(_TEARS)


@contextlib.contextmanager
def write_points(at_point, points=None):
    """Calls `at_point(name)` before every write point inside the block
    (nested calls, e.g. `os.unlink` inside `shutil.rmtree`, count too).
    If it returns a callable, that is called with the point's `(args,
    kwargs)` after the point ran. `points`: (owner, name) pairs, default
    the ones of this module (`_PATCHED`)."""
    points = _PATCHED if points is None else points
    saved = [(owner, name, getattr(owner, name)) for owner, name in points]

    def wrap(owner, name, real):
        label = _label(owner, name)

        def point(*args, **kwargs):
            after = at_point(label)
            result = real(*args, **kwargs)
            if after is not None:
                after(args, kwargs)
            return result

        return point

    for owner, name, real in saved:
        setattr(owner, name, wrap(owner, name, real))
    try:
        yield
    finally:
        for owner, name, real in saved:
            setattr(owner, name, real)


def count_points(work, points=None):
    """`work()` in this process; the write points it passed, in order
    (`points` as `write_points`)."""
    names = []
    with write_points(names.append, points):
        work()
    return names


def _killer(k, torn=False, names=None):
    """The `at_point` of a child killed at its `k`-th point (never if
    `k` is 0); it appends the names passed to `names`."""
    seen = [0]

    def at_point(name):
        seen[0] += 1
        if names is not None:
            names.append(name)
        if seen[0] != k:
            return None
        if torn and name in _TEARS:

            def tear(args, kwargs):
                _TEARS[name](args, kwargs)
                os.kill(os.getpid(), signal.SIGKILL)

            return tear
        os.kill(os.getpid(), signal.SIGKILL)

    return at_point


def _wait(pid, k, timeout):
    """Waits for child `pid` (`tests.cli_process.wait_child`); True if
    it was SIGKILLed, else its exit code; raises after `timeout` seconds
    (having killed it)."""
    code = wait_child(pid, timeout)
    if code is None:
        raise AssertionError(f"child killed at point {k} hung")
    if code < 0:
        assert -code == signal.SIGKILL, f"child ended by signal {-code}"
        return True
    return code


def killed_at(k, work, timeout=120, torn=False, points=None):
    """Runs `work()` in a forked child killed (SIGKILL, by itself) just
    before its `k`-th write point (1-based; with `torn`, just after a
    `TEARABLE` one, cut). Returns True if it was killed, False if
    `work()` finished first; an error in the child fails with its
    traceback. `points` as `write_points`."""
    report = tempfile.mktemp(prefix="crash_child_", suffix=".txt")
    pid = os.fork()
    if pid == 0:  # the child
        try:
            with write_points(_killer(k, torn), points):
                work()
            os._exit(0)
        except BaseException:  # noqa: BLE001 (reported to the parent)
            with open(report, "w") as f:
                f.write(traceback.format_exc())
            os._exit(3)
    result = _wait(pid, k, timeout)
    if result is True:
        return True
    if result != 0:
        with open(report) as f:
            raise AssertionError(f"child failed at point {k}:\n{f.read()}")
    return False


class Zygote:
    """Forks children that may run TensorFlow, from a process that
    imported it and ran no op (this module as a script).

    `run(target, kwargs, k)` has a fresh child call `target(**kwargs)`
    (`target`: `"module:function"`) under every write point, this
    module's and TensorFlow's, and kill itself before its `k`-th (never
    for `k=0`; `torn` as `killed_at`). Returns `(killed, points)`, the
    names of the points passed (all of them when it finished). A failure
    in the child raises with its traceback and log. Use as a context
    manager; `imports` are imported once, in the zygote.
    """

    def __init__(self, imports=()):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.robustness.crash_points", *imports],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=root,
        )
        ready = self.process.stdout.readline()
        if ready.strip() != "ready":
            self.close()
            raise AssertionError(f"the zygote did not start: {ready!r}")

    def run(self, target, kwargs, k=0, torn=False, timeout=600):
        request = dict(
            target=target, kwargs=kwargs, k=k, torn=torn, timeout=timeout
        )
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        reply = json.loads(self.process.stdout.readline())
        if reply["error"]:
            raise AssertionError(
                f"child of {target} (point {k}) failed:\n{reply['error']}"
            )
        return reply["killed"], reply["points"]

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=60)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _child(request, names_path, log_path, conversions_path):
    """In a fork of the zygote: runs the request; never returns."""
    import importlib

    try:
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(log, 1)
        os.dup2(log, 2)
        module, function = request["target"].split(":")
        work = getattr(importlib.import_module(module), function)
        names, conversions = [], []
        record_conversions(conversions)
        at_point = _killer(request["k"], request["torn"], names)
        try:
            with write_points(at_point, _PATCHED + tensorflow_points()):
                work(**request["kwargs"])
        finally:
            with open(names_path, "w") as f:
                json.dump(names, f)
        with open(conversions_path, "wb") as f:
            pickle.dump(conversions, f)
        os._exit(0)
    except BaseException:  # noqa: BLE001 (reported to the parent)
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(3)


def _serve(imports):
    """The zygote: imports `imports`, then one child per request line;
    after a child that finished, converts what it converted
    (`tests.cli_process.warm`)."""
    import importlib

    for name in imports:
        importlib.import_module(name)
    folder = tempfile.mkdtemp(prefix="crash_zygote_")
    print("ready", flush=True)
    warmed = set()
    for line in sys.stdin:
        request = json.loads(line)
        names_path = os.path.join(folder, "names.json")
        log_path = os.path.join(folder, "child.log")
        conversions_path = os.path.join(folder, "conversions.pickle")
        for path in (names_path, log_path, conversions_path):
            if os.path.exists(path):
                os.remove(path)
        pid = os.fork()
        if pid == 0:
            _child(request, names_path, log_path, conversions_path)
        error = None
        try:
            result = _wait(pid, request["k"], request["timeout"])
        except AssertionError as e:
            result, error = None, str(e)
        names = []
        if os.path.exists(names_path):
            with open(names_path) as f:
                names = json.load(f)
        if result not in (True, 0) and error is None:
            with open(log_path, errors="replace") as f:
                error = f"exit code {result}; its log:\n{f.read()[-6000:]}"
        reply = dict(killed=result is True, points=names, error=error)
        print(json.dumps(reply), flush=True)
        if result == 0 and os.path.exists(conversions_path):
            with open(conversions_path, "rb") as f:
                new = [r for r in pickle.load(f) if r[:4] not in warmed]
            warm(new)
            warmed.update(r[:4] for r in new)
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    _serve(sys.argv[1:])
