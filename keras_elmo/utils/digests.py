"""Content digests (sha256) of files, folders and arrays, and a
directory fsync: what resumable outputs record to recognise their inputs.
"""

import hashlib
import os

BLOCK = 1 << 20


def sha256_file(path, digest=None):
    """The sha256 hex digest of a file's bytes (or updates `digest`)."""
    own = digest is None
    digest = digest or hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(BLOCK), b""):
            digest.update(block)
    return digest.hexdigest() if own else digest


def sha256_tree(path):
    """The sha256 of a folder: every file's relative path and bytes, in
    sorted order (a file is digested as `sha256_file`)."""
    if os.path.isfile(path):
        return sha256_file(path)
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(root, name)
            digest.update(os.path.relpath(full, path).encode() + b"\0")
            sha256_file(full, digest)
    return digest.hexdigest()


def sha256_arrays(named_arrays):
    """The sha256 of `(name, array)` pairs: names, dtypes, shapes, bytes."""
    import numpy as np

    digest = hashlib.sha256()
    for name, array in named_arrays:
        array = np.ascontiguousarray(array)
        header = f"{name}\0{array.dtype.str}\0{array.shape}\0"
        digest.update(header.encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def fsync_directory(path):
    """Makes a rename or removal inside folder `path` durable (POSIX);
    a no-op where folders cannot be opened (Windows)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
