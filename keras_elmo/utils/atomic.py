"""Atomic file writes: a reader sees the old file or the new one, never half."""

import contextlib
import ctypes
import errno
import os
import re
import shutil
import socket
import sys

from keras_elmo.utils import file_modes
from keras_elmo.utils import write_faults

# renameat2(2) (Linux >= 3.15, glibc >= 2.28).
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside `path`; renames it onto `path` after.

    As `_atomic_path`; a full disk, a file size limit or an unwritable
    directory raises `write_faults.WriteFailed` naming `path` (which is
    untouched).
    """
    with write_faults.guard(path), _atomic_path(path) as tmp:
        yield tmp


@contextlib.contextmanager
def _atomic_path(path):
    """Yields a temporary path beside `path`; renames it onto `path` after.

    The temporary file lives in the same directory, so the final
    `os.replace` is atomic on POSIX. On an exception the temporary file is
    removed and `path` is untouched.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    remove_abandoned(path)
    # The mode a plain `open(path, "w")` would give (not mkstemp's 0600).
    fd, tmp = file_modes.mkstemp(
        dir=directory, prefix=_temporary_prefix(path), suffix=".tmp"
    )
    os.close(fd)
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


@contextlib.contextmanager
def atomic_write(path, mode="w", encoding="utf-8"):
    """Opens a temporary file for writing; atomically replaces `path` after."""
    with atomic_path(path) as tmp:
        kwargs = {} if "b" in mode else {"encoding": encoding}
        with open(tmp, mode, **kwargs) as f:
            yield f


def save_keras_atomically(model, path):
    """`model.save(path)` through a temporary file and a rename.

    Keras insists on a `.keras` suffix, so the model is saved to
    `<tmp>.keras` beside `path` and renamed into place.
    """
    path = os.fspath(path)
    if not path.endswith(".keras"):
        raise ValueError(
            f"A Keras model file must end in .keras, received {path!r}."
        )
    with atomic_path(path) as tmp:
        tmp_keras = tmp + ".keras"
        try:
            model.save(tmp_keras)
            os.replace(tmp_keras, tmp)
        finally:
            if os.path.exists(tmp_keras):
                os.remove(tmp_keras)


def exchange_paths(a, b):
    """Atomically swaps two existing paths (files or directories).

    Uses Linux's `renameat2(..., RENAME_EXCHANGE)`: at every instant each
    name holds one complete entry. Returns False where the platform, the C
    library or the file system does not offer it (the caller falls back).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    renameat2.restype = ctypes.c_int
    result = renameat2(
        _AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE
    )
    if result == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(error, os.strerror(error), a, None, b)


@contextlib.contextmanager
def atomic_directory(path):
    """Yields a temporary directory beside `path`; moves it there after.

    As `_atomic_directory`; a storage fault raises
    `write_faults.WriteFailed` naming `path` (which is untouched).
    """
    with write_faults.guard(path), _atomic_directory(path) as tmp:
        yield tmp


@contextlib.contextmanager
def _atomic_directory(path):
    """Yields a temporary directory beside `path`; moves it there after.

    A non-empty existing `path` is swapped with the new directory in one
    atomic step (`exchange_paths`) and then removed, so `path` always
    holds a complete directory, old or new. Where the swap is not
    available the old directory is renamed aside first: for an instant
    `path` is absent, and a kill then leaves the old copy beside it as
    `.NAME.*.tmp.old`. On an exception the temporary directory is removed
    and `path` is untouched.
    """
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    remove_abandoned(path)
    # The mode a plain `os.mkdir(path)` would give (not mkdtemp's 0700).
    tmp = file_modes.mkdtemp(
        dir=parent, prefix=_temporary_prefix(path), suffix=".tmp"
    )
    try:
        yield tmp
        if os.path.isdir(path) and os.listdir(path):
            if exchange_paths(tmp, path):
                shutil.rmtree(tmp, ignore_errors=True)  # now the old one
                return
            old = tmp + ".old"  # unique, as `tmp` is
            os.rename(path, old)
            os.rename(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
            return
        if os.path.isdir(path):
            os.rmdir(path)
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _temporary_prefix(path):
    """`.NAME.HOST-PID.`: the temporaries of a write of `path` name the
    writer, so that a later write can tell those of dead writers."""
    name = os.path.basename(os.path.abspath(path))
    return f".{name}.{socket.gethostname()}-{os.getpid()}."


def remove_abandoned(path):
    """Removes the temporary files and folders of writes of `path` that
    a kill interrupted (`.NAME.HOST-PID.*.tmp` beside it, with the
    `.tmp.keras` of `save_keras_atomically`), so that a killed write
    costs no disk once `path` is written again.

    Only the temporaries of this host's processes that no longer run are
    removed (a live writer's, another host's on a shared folder, and
    those of earlier versions without a PID in the name stay). Never
    touches `.NAME.*.tmp.old`, the previous copy the fallback of
    `atomic_directory` leaves after a kill.
    """
    parent = os.path.dirname(os.path.abspath(path))
    name = os.path.basename(os.path.abspath(path))
    host = re.escape(socket.gethostname())
    pattern = re.compile(rf"\.{re.escape(name)}\.{host}-(\d+)\.[^.]+\.tmp")
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for entry in entries:
        match = pattern.fullmatch(entry)
        if not match or _alive(int(match.group(1))):
            continue
        leftover = os.path.join(parent, entry)
        if os.path.isdir(leftover):
            shutil.rmtree(leftover, ignore_errors=True)
        for path in (leftover, leftover + ".keras"):
            with contextlib.suppress(OSError):  # gone, a folder, read-only
                os.remove(path)


def _alive(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, not ours to signal
    return True
