"""Atomic file writes: a reader sees the old file or the new one, never half."""

import contextlib
import ctypes
import errno
import os
import shutil
import sys
import tempfile

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
    fd, tmp = tempfile.mkstemp(
        dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp"
    )
    if not _lock(fd):  # held until the write ends: a live writer's mark
        os.close(fd)
        fd = None
    # mkstemp makes the file private (0600); give it the permissions a
    # plain `open(path, "w")` would (0666 minus the umask).
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
    finally:
        if fd is not None:
            os.close(fd)


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
    name = os.path.basename(os.path.abspath(path))
    remove_abandoned(path)
    tmp = tempfile.mkdtemp(dir=parent, prefix=f".{name}.", suffix=".tmp")
    fd = None
    if sys.platform != "win32":
        fd = os.open(tmp, os.O_RDONLY)
        _lock(fd)
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
    finally:
        if fd is not None:
            os.close(fd)


def _lock(fd):
    """Takes an exclusive `flock` on `fd`; False where fcntl is missing."""
    try:
        import fcntl
    except ImportError:
        return False
    fcntl.flock(fd, fcntl.LOCK_EX)
    return True


def remove_abandoned(path):
    """Removes the temporary files and folders of writes of `path` that
    a kill interrupted (`.NAME.*.tmp` beside it, with the `.tmp.keras` of
    `save_keras_atomically`), so that a killed write costs no disk once
    `path` is written again.

    A writer holds an exclusive `flock` on its temporary entry until it
    ends (a kill releases it): an entry that can be locked has no live
    writer. Never touches `.NAME.*.tmp.old`, the previous copy that the
    fallback of `atomic_directory` leaves after a kill. Does nothing
    where fcntl is missing (Windows).
    """
    try:
        import fcntl
    except ImportError:
        return
    parent = os.path.dirname(os.path.abspath(path))
    prefix = "." + os.path.basename(os.path.abspath(path)) + "."
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for entry in entries:
        if not (entry.startswith(prefix) and entry.endswith(".tmp")):
            continue
        leftover = os.path.join(parent, entry)
        try:
            fd = os.open(leftover, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # a live writer
        try:
            if os.path.isdir(leftover):
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(leftover)
            with contextlib.suppress(FileNotFoundError):
                os.remove(leftover + ".keras")
        finally:
            os.close(fd)
