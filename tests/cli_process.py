"""`keras-elmo` commands in fresh processes, with the import paid once.

A test that runs `python -m keras_elmo.cli.main ARGS` pays for importing
TensorFlow, Keras and keras_elmo each time (about 5 s of a 2-core
machine), often more than the command itself. `run(argv, env)` gives the
same result (`subprocess.CompletedProcess`: exit status, stdout, stderr)
from a child forked off a *zygote*: one process per test process that
imported them and ran no TensorFlow op (TensorFlow's threads start on
first use, so a fork of it may run TensorFlow; `tests.robustness.
crash_points` forks its kill-point children the same way).

The child is a process of its own, as `python -m keras_elmo.cli.main`
would start it: the working folder, the whole environment and
`sys.argv` of the request, stdin on /dev/null, stdout and stderr on
files; `main()` reads the command line; its exit runs the `atexit`
functions and flushes the streams. Exit statuses are those of
`subprocess.run`: the command's, 1 for an uncaught exception (its
traceback on stderr), minus the signal's number for a signal.

What the fork cannot change is what the zygote's imports read: the
Python settings, Keras' backend and home, TensorFlow's and XLA's
environment, the thread settings. A request whose environment differs
from the zygote's in any of those (`IMPORT_TIME`), that asks for
another Keras backend than TensorFlow, or that lets TensorFlow print its
start-up lines (`TF_CPP_MIN_LOG_LEVEL` other than 3: a fresh process
prints them while it imports TensorFlow, a fork does not import it
again), runs in a real subprocess
instead; so does every request with `KERAS_ELMO_TEST_NO_ZYGOTE=1` in the
test process's environment.

After a command that succeeded, the zygote converts with AutoGraph the
functions its child converted (`record_conversions`, `warm`: Python
source to Python source, no TensorFlow op), so later children find them
in AutoGraph's cache: an `embed` of the tiny model took 2.7 s of CPU in
a child before, 1.7 s after. The crash sweeps' zygote does the same.
"""

import atexit
import inspect
import json
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback

# Environment variables read while Python starts or while TensorFlow,
# Keras or keras_elmo are imported (by name or by prefix).
IMPORT_TIME = (
    "PYTHON",
    "KERAS_BACKEND",
    "KERAS_HOME",
    "TF_",
    "XLA_",
    "JAX_",
    "CUDA_",
    "OMP_",
    "MKL_",
    "GRPC_",
    "GLOG_",
    "LD_",
)
# What the zygote imports: what `python -m keras_elmo.cli.main` imports
# before running a command, and the modules its commands load.
IMPORTS = (
    "keras_elmo.cli.main",
    "tensorflow",
    "keras",
    "keras_elmo",
    "keras_elmo.training.trainer",
    "keras_elmo.embedding.embedder",
)
MAIN = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    "keras_elmo",
    "cli",
    "main.py",
)

_zygote = None


def _import_time(env):
    return {
        key: value for key, value in env.items() if key.startswith(IMPORT_TIME)
    }


def _forkable(env):
    if os.environ.get("KERAS_ELMO_TEST_NO_ZYGOTE") == "1":
        return False
    if not hasattr(os, "fork"):
        return False
    if env.get("TF_CPP_MIN_LOG_LEVEL") != "3":
        return False  # a fresh process would print TensorFlow's start-up
    return env.get("KERAS_BACKEND", "tensorflow") == "tensorflow"


def run(argv, env, timeout=600, cwd=None, fsize=None, drop_dac=False):
    """`python -m keras_elmo.cli.main *argv` with environment `env`, in
    folder `cwd` (default: the test's working folder); a
    `subprocess.CompletedProcess` with text stdout and stderr. Raises
    `subprocess.TimeoutExpired` after `timeout` seconds, as
    `subprocess.run` would. `fsize` and `drop_dac`: the command runs
    under `restrict(fsize, drop_dac)` (simulated storage faults,
    tests/robustness/write_fault_helpers.py)."""
    global _zygote
    argv = [os.fspath(arg) for arg in argv]
    command = [sys.executable, "-m", "keras_elmo.cli.main", *argv]
    if _forkable(env):
        if _zygote is None or _zygote.settings != _import_time(env):
            if _zygote is not None:
                _zygote.close()
            _zygote = _Zygote(env)
        limits = dict(fsize=fsize, drop_dac=drop_dac)
        return _zygote.run(command, argv, env, timeout, cwd, limits)
    return subprocess.run(
        command,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=(
            (lambda: restrict(fsize, drop_dac))
            if fsize is not None or drop_dac
            else None
        ),
    )


_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE = 1
_CAPABILITY_VERSION_3 = 0x20080522


def restrict(fsize=None, drop_dac=False):
    """In a child, before it runs the command: a write past `fsize`
    bytes of any file fails with `EFBIG` ("File too large", as a full
    disk fails a write part-way: `RLIMIT_FSIZE`, `SIGXFSZ` ignored);
    `drop_dac`: the process (and anything it starts) loses root's
    `CAP_DAC_OVERRIDE`, so permission bits hold for it. A fork without
    `exec` keeps its effective capabilities, so they are cleared here
    (`capset`) as well as dropped from the bounding set, which is what
    an `exec` reads."""
    import ctypes
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if fsize is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    if not drop_dac:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_CAPBSET_DROP, _CAP_DAC_OVERRIDE, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, "prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE)")

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [
            ("effective", ctypes.c_uint32),
            ("permitted", ctypes.c_uint32),
            ("inheritable", ctypes.c_uint32),
        ]

    header = Header(_CAPABILITY_VERSION_3, 0)
    data = (Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    keep = ~(1 << _CAP_DAC_OVERRIDE) & 0xFFFFFFFF
    for field in ("effective", "permitted", "inheritable"):
        setattr(data[0], field, getattr(data[0], field) & keep)
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


class _Zygote:
    """The process children fork from (this module run as a script)."""

    def __init__(self, env):
        self.settings = _import_time(env)
        self.folder = tempfile.mkdtemp(prefix="cli_zygote_")
        repo = os.path.dirname(os.path.dirname(os.path.dirname(MAIN)))
        # TensorFlow's start-up lines while the zygote imports it go to a
        # file, shown if the zygote does not start.
        self.log = os.path.join(self.folder, "zygote.log")
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.cli_process", self.folder],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=env,
                cwd=repo,
            )
        ready = self.process.stdout.readline()
        if ready.strip() != "ready":
            with open(self.log, errors="replace") as f:
                log = f.read()[-6000:]
            self.close()
            raise AssertionError(f"the CLI zygote did not start:\n{log}")
        atexit.register(self.close)

    def run(self, command, argv, env, timeout, cwd=None, limits=None):
        cwd = os.fspath(cwd) if cwd is not None else os.getcwd()
        request = dict(argv=argv, env=env, cwd=cwd, timeout=timeout)
        request.update(limits or {})
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise AssertionError("the CLI zygote stopped")
        reply = json.loads(line)
        outputs = []
        for name in ("stdout", "stderr"):
            with open(reply[name], encoding="utf-8", errors="replace") as f:
                outputs.append(f.read())
            os.remove(reply[name])
        if reply["timed_out"]:
            raise subprocess.TimeoutExpired(command, timeout, *outputs)
        return subprocess.CompletedProcess(
            command, reply["returncode"], *outputs
        )

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=60)
        if os.path.isdir(self.folder):
            for name in os.listdir(self.folder):
                os.remove(os.path.join(self.folder, name))
            os.rmdir(self.folder)


def _child(request, stdout, stderr, conversions_path):
    """In a fork of the zygote: the command as a fresh process runs it;
    never returns. `stdout`, `stderr`: a file's path, or the write end
    of a pipe (a descriptor) where the request limits file sizes. If it
    succeeds, what AutoGraph converted goes to `conversions_path`
    (`record_conversions`)."""
    code = 1
    conversions = []
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, stdout), (2, stderr)):
            if isinstance(path, int):
                out = path
            else:
                flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
                out = os.open(path, flags, 0o600)
            os.dup2(out, fd)
            os.close(out)
        restrict(request.get("fsize"), request.get("drop_dac", False))
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
        sys.argv = [MAIN, *request["argv"]]
        record_conversions(conversions)
        from keras_elmo.cli.main import main

        try:
            code = main()
        except SystemExit as e:
            code = e.code
        if code is None:
            code = 0
        elif not isinstance(code, int):
            sys.stderr.write(f"{code}\n")
            code = 1
    except BaseException:  # noqa: BLE001 (as the interpreter would)
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        if code == 0:
            with open(conversions_path, "wb") as f:
                pickle.dump(conversions, f)
    finally:
        os._exit(code)


def wait_child(pid, timeout):
    """Waits for child `pid` (without polling where the kernel gives a
    descriptor for it, `os.pidfd_open`); its `subprocess` return code
    (minus the signal's number if a signal ended it), or None if it ran
    past `timeout` seconds (it is then SIGKILLed and reaped). The
    crash sweeps' zygote (`tests.robustness.crash_points`) waits with it
    too."""
    deadline = time.monotonic() + timeout
    try:
        ready = select.poll()
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd: poll every 10 ms
        ready, fd = None, None
    try:
        if fd is not None:
            ready.register(fd, select.POLLIN)
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return None
            if fd is None:
                time.sleep(min(0.01, left))
            else:
                ready.poll(left * 1000)
    finally:
        if fd is not None:
            os.close(fd)


def _wait_draining(pid, timeout, drains):
    """`wait_child(pid, timeout)` for a child whose stdout and stderr are
    pipes: `drains` holds `(read end, file path)` pairs, copied into
    their files while the child runs and once more when it has ended
    (what a process it started, still holding the pipe, writes later is
    not waited for, as with output files)."""
    deadline = time.monotonic() + timeout
    files = {read: open(path, "wb") for read, path in drains}
    open_ends = set(files)
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                returncode = os.waitstatus_to_exitcode(status)
                break
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                returncode = None
                break
            ready, _, _ = select.select(
                list(open_ends), [], [], min(left, 0.05)
            )
            for read in ready:
                data = os.read(read, 1 << 16)
                if data:
                    files[read].write(data)
                else:
                    open_ends.discard(read)
        for read in open_ends:
            os.set_blocking(read, False)
            while True:
                try:
                    data = os.read(read, 1 << 16)
                except BlockingIOError:
                    break
                if not data:
                    break
                files[read].write(data)
        return returncode
    finally:
        for read, f in files.items():
            f.close()
            os.close(read)


def record_conversions(records):
    """Appends `(module, qualname, file, line, options)` to `records`
    for each function AutoGraph converts in this process (not those
    defined inside another function: `warm` could not find them)."""
    from tensorflow.python.autograph.pyct import transpiler

    real = transpiler.PyToPy.transform_function

    def recording(self, fn, user_context):
        function = getattr(fn, "__func__", fn)
        code = function.__code__
        if "<locals>" not in function.__qualname__:
            records.append(
                (
                    function.__module__,
                    function.__qualname__,
                    code.co_filename,
                    code.co_firstlineno,
                    user_context.options,
                )
            )
        return real(self, fn, user_context)

    transpiler.PyToPy.transform_function = recording


def warm(records):
    """In a zygote: AutoGraph's conversion (Python source to Python
    source, no TensorFlow op) of the functions a child converted
    (`record_conversions`), so that the next children find them in
    AutoGraph's cache instead of converting them again (a second of CPU
    for an export: 4.5 s of a child's CPU before, 3.2 s after). A
    function not found as it was in the child is left to the
    children."""
    import importlib

    from tensorflow.python.autograph.core import converter
    from tensorflow.python.autograph.impl import api

    for module, qualname, filename, line, options in records:
        try:
            fn = importlib.import_module(module)
            for part in qualname.split("."):
                fn = inspect.getattr_static(fn, part)
            fn = getattr(fn, "python_function", fn)
            fn = getattr(fn, "__func__", fn)
            code = fn.__code__
            if (code.co_filename, code.co_firstlineno) != (filename, line):
                continue
            api._TRANSPILER.transform(fn, converter.ProgramContext(options))
        except Exception:  # noqa: BLE001 (then the children convert it)
            continue


def _serve(folder):
    """The zygote: imports `IMPORTS`, then one child per request line;
    after a child that succeeded, converts what it converted (`warm`)."""
    import importlib

    for name in IMPORTS:
        importlib.import_module(name)
    print("ready", flush=True)
    warmed = set()
    for n, line in enumerate(sys.stdin):
        request = json.loads(line)
        stdout = os.path.join(folder, f"{n}.stdout")
        stderr = os.path.join(folder, f"{n}.stderr")
        conversions = os.path.join(folder, f"{n}.conversions")
        # A command under a file-size limit writes its output into pipes
        # (which the limit does not cover) that this process drains.
        pipes = [os.pipe(), os.pipe()] if request.get("fsize") else []
        pid = os.fork()
        if pid == 0:
            if pipes:
                for read, _ in pipes:
                    os.close(read)
                stdout, stderr = (write for _, write in pipes)
            _child(request, stdout, stderr, conversions)
        if pipes:
            for _, write in pipes:
                os.close(write)
            drains = [
                (read, path) for (read, _), path in zip(pipes, (stdout, stderr))
            ]
            returncode = _wait_draining(pid, request["timeout"], drains)
        else:
            returncode = wait_child(pid, request["timeout"])
        for path in (stdout, stderr):
            if not os.path.exists(path):
                open(path, "w").close()
        reply = dict(
            returncode=returncode,
            timed_out=returncode is None,
            stdout=stdout,
            stderr=stderr,
        )
        print(json.dumps(reply), flush=True)
        if os.path.exists(conversions):
            with open(conversions, "rb") as f:
                new = [r for r in pickle.load(f) if r[:4] not in warmed]
            os.remove(conversions)
            warm(new)
            warmed.update(r[:4] for r in new)


if __name__ == "__main__":
    _serve(sys.argv[1])
