"""Storage faults (disk full, quota, file size limit, read-only or
unwritable directory) turned into one clear error naming the destination,
and an interruption (Ctrl-C) into one saying what was kept.

A write that fails part-way raises, depending on the library, an
`OSError` with an errno (Python files, zip), a `RuntimeError` whose text
holds `errno = 27` (HDF5 through h5py), or a `tf.errors.OpError` whose
message holds the C library's text (TensorFlow checkpoints and
SavedModels), and each names a temporary file, not the path the user
asked for. `storage_fault(error)` recognises all three (following
`__cause__` / `__context__`); `guard(path)` re-raises such an error as a
`WriteFailed` that names `path`, what became of it and what to do, and
lets every other error through unchanged.
"""

import contextlib
import errno
import os
import re
import resource

# errno -> (the C library's text, what it means for the user)
_FAULTS = {
    errno.ENOSPC: ("No space left on device", "the disk is full"),
    errno.EDQUOT: ("Disk quota exceeded", "the disk quota is used up"),
    errno.EFBIG: (
        "File too large",
        "the file size limit was reached (see `ulimit -f`)",
    ),
    errno.EROFS: ("Read-only file system", "the file system is read-only"),
    errno.EACCES: (
        "Permission denied",
        "permission denied (the directory is not writable)",
    ),
    errno.EPERM: (
        "Operation not permitted",
        "permission denied (the directory is not writable)",
    ),
}
_ADVICE = (
    "free space (or make the directory writable) and rerun the same command"
)
_ERRNO_IN_TEXT = re.compile(r"errno = (\d+)")


class WriteFailed(OSError):
    """A write failed for lack of space or permission (the message names
    the destination, the reason and what was kept). `errno` is the
    underlying error number and `filename` the destination."""

    def __init__(self, message, error_number, filename):
        super().__init__(message)
        self.message = message
        self.errno = error_number
        self.filename = filename

    def __str__(self):
        return self.message


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped a run that writes; the message says what
    was kept and how to continue (a command prints it as one line)."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message

    def __str__(self):
        return self.message


@contextlib.contextmanager
def interrupted(describe):
    """Re-raises a `KeyboardInterrupt` as `Interrupted(describe())`, the
    callable saying what was kept (a plain `KeyboardInterrupt` goes on
    where it cannot tell)."""
    try:
        yield
    except Interrupted:
        raise
    except KeyboardInterrupt as e:
        try:
            message = describe()
        except Exception:  # noqa: BLE001 (the interruption comes first)
            message = None
        if not message:
            raise
        raise Interrupted(message) from e


def storage_fault(error):
    """`(errno, meaning)` if `error` (or an error it chains from) is a
    storage fault, else None."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, WriteFailed):
            return error.errno, _FAULTS[error.errno][1]
        number = getattr(error, "errno", None)
        if number in _FAULTS:
            return number, _FAULTS[number][1]
        text = str(error)
        match = _ERRNO_IN_TEXT.search(text)
        if match and int(match.group(1)) in _FAULTS:
            number = int(match.group(1))
            return number, _FAULTS[number][1]
        for number, (c_text, meaning) in _FAULTS.items():
            if c_text in text:
                return number, meaning
        error = error.__cause__ or error.__context__
    return None


def _what_was_kept(path, existed):
    if existed:
        return f"{path!r} is unchanged"
    return f"nothing was written to {path!r}"


@contextlib.contextmanager
def guard(path, kept=None, advice=None):
    """Re-raises a storage fault inside the block as `WriteFailed`.

    Args:
        path: the destination the user named.
        kept: str or None, what became of earlier output (default: "PATH
            is unchanged" or "nothing was written to PATH", from whether
            `path` exists when the block starts).
        advice: str or None, what to do (default: free space or make the
            directory writable, then rerun).
    """
    path = os.fspath(path)
    existed = os.path.exists(path)
    try:
        yield
    except WriteFailed:
        raise
    except Exception as e:
        fault = storage_fault(e)
        if fault is None:
            raise
        number, meaning = fault
        kept = kept or _what_was_kept(path, existed)
        advice = advice or _ADVICE
        raise WriteFailed(
            f"Could not write {path!r}: {meaning} ({os.strerror(number)}). "
            f"{kept}; {advice}.",
            number,
            path,
        ) from e


def ensure_room(path, nbytes):
    """Raises `OSError(ENOSPC)` / `OSError(EFBIG)` unless `nbytes` more
    bytes fit: in the free space of `path`'s file system and under the
    process's file size limit (`RLIMIT_FSIZE`) for `path`.

    For writers that do not survive a failed write (HDF5 may crash on
    one): checking first keeps their file consistent. It cannot see a
    quota or another process filling the disk meanwhile, so the write
    stays inside `guard` too.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    stats = os.statvfs(directory)
    free = stats.f_bavail * stats.f_frsize
    if nbytes > free:
        raise OSError(
            errno.ENOSPC,
            f"{os.strerror(errno.ENOSPC)}: {nbytes} bytes needed, {free} free",
            path,
        )
    limit, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    size = os.path.getsize(path) if os.path.exists(path) else 0
    if limit != resource.RLIM_INFINITY and size + nbytes > limit:
        raise OSError(
            errno.EFBIG,
            f"{os.strerror(errno.EFBIG)}: {size} + {nbytes} bytes over the "
            f"limit of {limit}",
            path,
        )
