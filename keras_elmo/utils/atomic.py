"""How the package writes files: atomically, with the modes `open()` would
give, failing clearly on storage faults, and never over its own inputs.

Atomic file writes: a reader sees the old file or the new one, never half.

The permission bits of what the package writes: those `open()` and
`os.mkdir` would give, 0666 and 0777 minus the process umask.

`tempfile.mkstemp` and `mkdtemp` make private entries (0600, 0700) on
purpose; an output renamed from one of them would keep that mode, so a
TF Serving process or a colleague could not read an exported model or
an HDF5 file of vectors. Every temporary that becomes an output is
given the usual mode here, right after it is made.

The umask is read from `/proc/self/status` (Linux >= 4.7), which is
safe while other threads create files; elsewhere it is read by setting
and restoring it (`os.umask`), the only portable way, which another
thread creating a file at that instant could see.

Storage faults (disk full, quota, file size limit, read-only or
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

An output never replaces one of its own inputs, even when forced.

`keras-elmo embed X X --force` would rename an HDF5 file onto the corpus
it is reading, and `export --model runs/a --out runs/a --force` would
swap the trained model folder for a SavedModel. `overwrite` / `force`
say that an *old output* may go, never an input: these are refused
before any work, whatever the flags.

Two paths are the same file when they resolve to the same place
(`os.path.realpath`: symlinks, `..`) or name the same inode on the
same device (`os.stat`: hard links, bind mounts). A folder output also
may not hold an input, since it is replaced as a whole.
"""

import contextlib
import ctypes
import errno
import os
import re
import resource
import shutil
import socket
import sys
import tempfile

FILE_MODE = 0o666
FOLDER_MODE = 0o777


def current_umask():
    """The process umask, without changing it where the OS allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def give_folder_mode(path):
    """chmod `path` to 0777 minus the umask (a plain `os.mkdir(path)`)."""
    os.chmod(path, FOLDER_MODE & ~current_umask())


def mkstemp(**kwargs):
    """`tempfile.mkstemp` whose file has the mode `open()` would give."""
    fd, path = tempfile.mkstemp(**kwargs)
    try:
        os.fchmod(fd, FILE_MODE & ~current_umask())
    except BaseException:
        os.close(fd)
        os.remove(path)
        raise
    return fd, path


def mkdtemp(**kwargs):
    """`tempfile.mkdtemp` whose folder has the mode `os.mkdir` would give."""
    path = tempfile.mkdtemp(**kwargs)
    try:
        give_folder_mode(path)
    except BaseException:
        os.rmdir(path)
        raise
    return path


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


class OutputIsInput(ValueError):
    """An output path that is, resolves to or holds one of the inputs.

    Attributes:
        argument: str, the name of the output argument.
        input_argument: str, the name of the input it would replace.
    """

    def __init__(self, message, argument, input_argument):
        super().__init__(message)
        self.argument = argument
        self.input_argument = input_argument


def same_file(a, b):
    """Whether paths `a` and `b` are one file (path or inode)."""
    a, b = os.fspath(a), os.fspath(b)
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        first, second = os.stat(a), os.stat(b)
    except (OSError, ValueError):
        return False
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def _holds(folder, path):
    """Whether `path` lies inside `folder` (after resolving both)."""
    folder = os.path.realpath(folder)
    path = os.path.realpath(path)
    return os.path.commonpath([folder, path]) == folder and path != folder


def check_not_an_input(output, inputs, argument="output", folder=False):
    """Refuses an output that would replace one of `inputs`.

    Args:
        output: str or None. The output path (None: nothing to check).
        inputs: dict, argument name -> path (or None: absent) of every
            file or folder the run reads.
        argument: str. The output's argument name, for the message.
        folder: bool. The output is a folder replaced as a whole, so an
            input inside it is refused too.

    Raises:
        OutputIsInput: naming both arguments and paths.
    """
    if output is None:
        return
    for name, path in inputs.items():
        if path is None or isinstance(path, (list, tuple)):
            for one in path or ():
                check_not_an_input(output, {name: one}, argument, folder)
            continue
        if same_file(output, path):
            how = _how_same(output, path)
            raise OutputIsInput(
                f"Output `{argument}` {os.fspath(output)!r} is the input "
                f"`{name}` {os.fspath(path)!r} ({how}); writing it would "
                "destroy the input, so it is refused even with "
                "`force=True`: choose another output path.",
                argument,
                name,
            )
        if folder and _holds(output, path):
            raise OutputIsInput(
                f"Output folder `{argument}` {os.fspath(output)!r} holds "
                f"the input `{name}` {os.fspath(path)!r}; the folder is "
                "replaced as a whole, which would destroy the input, so it "
                "is refused even with `force=True`: choose another output "
                "folder.",
                argument,
                name,
            )


def _how_same(a, b):
    if os.path.abspath(a) == os.path.abspath(b):
        return "the same path"
    if os.path.realpath(a) == os.path.realpath(b):
        return f"both resolve to {os.path.realpath(a)!r}"
    return "the same file through a hard link: same device and inode"


# renameat2(2) (Linux >= 3.15, glibc >= 2.28).
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside `path`; renames it onto `path` after.

    As `_atomic_path`; a full disk, a file size limit or an unwritable
    directory raises `WriteFailed` naming `path` (which is
    untouched).
    """
    with guard(path), _atomic_path(path) as tmp:
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
    fd, tmp = mkstemp(
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
    `WriteFailed` naming `path` (which is untouched).
    """
    with guard(path), _atomic_directory(path) as tmp:
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
    tmp = mkdtemp(dir=parent, prefix=_temporary_prefix(path), suffix=".tmp")
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
