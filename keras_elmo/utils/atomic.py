"""Atomic file writes: a reader sees the old file or the new one, never half."""

import contextlib
import os
import tempfile


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside `path`; renames it onto `path` after.

    The temporary file lives in the same directory, so the final
    `os.replace` is atomic on POSIX. On an exception the temporary file is
    removed and `path` is untouched.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp"
    )
    os.close(fd)
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
