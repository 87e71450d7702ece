"""Simulated storage faults for a `keras-elmo` child process, no root
needed.

- `fsize`: `RLIMIT_FSIZE` set in the child (with `SIGXFSZ` ignored, which
  Python does anyway), so a write past that many bytes fails with `EFBIG`
  ("File too large"), as a full disk fails a write part-way.
- `read_only`: directories made `chmod 555`. Root ignores permission bits
  through `CAP_DAC_OVERRIDE`; when the tests run as root the child drops
  that capability from its bounding set before `exec`, so the directory
  is really read-only for it (the helper checks that it is, and fails
  loudly instead of skipping when neither works).
"""

import contextlib
import ctypes
import hashlib
import os
import resource
import signal
import stat
import subprocess
import sys

from tests.training.training_helpers import cli_command
from tests.training.training_helpers import cli_env

_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE = 1


def _drop_dac_override():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_CAPBSET_DROP, _CAP_DAC_OVERRIDE, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, "prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE)")


def _preexec(fsize, drop_dac):
    def setup():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        if drop_dac:
            _drop_dac_override()

    return setup


def run_cli_with_faults(*args, fsize=None, read_only=False, timeout=600):
    """Runs `keras-elmo ARGS` in a child with the given faults; returns the
    `CompletedProcess` (text stdout / stderr)."""
    drop_dac = read_only and os.geteuid() == 0
    return subprocess.run(
        cli_command(*[str(a) for a in args]),
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_preexec(fsize, drop_dac),
    )


def check_read_only_works(directory):
    """Asserts a child really cannot write into the read-only
    `directory` (so a test never passes by not simulating anything)."""
    probe = os.path.join(directory, "probe")
    code = f"open({probe!r}, 'w')"
    drop_dac = os.geteuid() == 0
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        preexec_fn=_preexec(None, drop_dac),
    )
    assert done.returncode != 0 and "PermissionError" in done.stderr, (
        "could not make a directory read-only for a child process "
        f"(euid {os.geteuid()}): {done.stderr}"
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
