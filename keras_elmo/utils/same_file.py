"""An output never replaces one of its own inputs, even when forced.

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

import os


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
