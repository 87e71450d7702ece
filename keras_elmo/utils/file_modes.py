"""The permission bits of what the package writes: those `open()` and
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
"""

import os
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


def give_file_mode(path):
    """chmod `path` to 0666 minus the umask (a plain `open(path, "w")`)."""
    os.chmod(path, FILE_MODE & ~current_umask())


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
