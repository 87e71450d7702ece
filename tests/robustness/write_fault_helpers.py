"""Simulated storage faults for a `keras-elmo` child process, no root
needed.

- `fsize`: `RLIMIT_FSIZE` set in the child (with `SIGXFSZ` ignored, which
  Python does anyway), so a write past that many bytes fails with `EFBIG`
  ("File too large"), as a full disk fails a write part-way.
- `read_only`: directories made `chmod 555`. Root ignores permission bits
  through `CAP_DAC_OVERRIDE`; when the tests run as root the child drops
  that capability (effective, permitted and bounding set: a forked child
  and anything it executes), so the directory is really read-only for it
  (the helper checks that it is for a fresh process and for a fork, and
  fails loudly instead of skipping when it is not).

The child is a fork of the CLI zygote (`tests.cli_process`, TensorFlow
imported once), which applies the faults after the fork
(`cli_process.restrict`); under a size limit its output goes through
pipes, which the limit does not cover, as a fresh process's would.
"""

import contextlib
import hashlib
import os
import stat
import subprocess
import sys

from tests import cli_process
from tests.training.training_helpers import cli_env


def run_cli_with_faults(*args, fsize=None, read_only=False, timeout=600):
    """Runs `keras-elmo ARGS` in a child with the given faults
    (`cli_process.restrict`): a fork of the CLI zygote, as `run_cli`
    runs a command, or a fresh process where the zygote cannot serve;
    returns the `CompletedProcess` (text stdout / stderr)."""
    drop_dac = read_only and os.geteuid() == 0
    return cli_process.run(
        [str(a) for a in args],
        cli_env(),
        timeout=timeout,
        fsize=fsize,
        drop_dac=drop_dac,
    )


def check_read_only_works(directory):
    """Asserts a child really cannot write into the read-only
    `directory`, both a fresh process and a fork (so a test never passes
    by not simulating anything)."""
    probe = os.path.join(directory, "probe")
    drop_dac = os.geteuid() == 0
    done = subprocess.run(
        [sys.executable, "-c", f"open({probe!r}, 'w')"],
        capture_output=True,
        text=True,
        preexec_fn=lambda: cli_process.restrict(None, drop_dac),
    )
    assert done.returncode != 0 and "PermissionError" in done.stderr, (
        "could not make a directory read-only for a child process "
        f"(euid {os.geteuid()}): {done.stderr}"
    )
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            cli_process.restrict(None, drop_dac)
            open(probe, "w").close()
            code = 0
        except PermissionError:
            code = 1
        finally:
            os._exit(code)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    assert code == 1, (
        "could not make a directory read-only for a forked child "
        f"(euid {os.geteuid()}, exit {code})"
    )
    assert not os.path.exists(probe)


@contextlib.contextmanager
def read_only_dir(directory):
    """`chmod 555` on `directory` for the block (restored after)."""
    mode = stat.S_IMODE(os.stat(directory).st_mode)
    os.chmod(directory, 0o555)
    try:
        check_read_only_works(directory)
        yield directory
    finally:
        os.chmod(directory, mode)


def tree_digest(root, skip=()):
    """`{relative path: sha256}` of every file under `root`, except names
    in `skip` (files or directories)."""
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skip]
        for name in files:
            if name in skip:
                continue
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            out[os.path.relpath(path, root)] = digest
    return out


def leftovers(directory):
    """Temporary files and directories our writers or TensorFlow leave
    behind on failure (`.NAME.*.tmp`, `ckpt-N_temp`)."""
    names = []
    for folder, dirs, files in os.walk(directory):
        for name in dirs + files:
            if name.endswith((".tmp", ".tmp.keras")) or "_temp" in name:
                names.append(os.path.join(folder, name))
    return names
