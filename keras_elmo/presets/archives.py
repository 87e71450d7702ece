"""Unpacks a model `.zip` (NLPL / EMBEDDIA archives) safely into the cache.

NLPL's vector repository and EMBEDDIA distribute ELMo models as ZIP files
holding `options.json`, `model.hdf5`, `vocab.txt` (and a `meta.json` or
README); some ELMoForManyLangs models come the same way. `unpack_zip`
extracts one into `CACHE/zip-<sha256 of the archive>[:20]/`:

- the archive is refused before anything is written if a member is not a
  plain file or folder (symlinks, devices), has an absolute path, a drive
  or a `..` part, repeats another member's name, or the archive claims
  more than `MAX_UNPACKED_BYTES` (a zip bomb guard) or holds more than
  `MAX_MEMBERS` members;
- members are extracted into a private `.partial-*` folder and the folder
  is renamed into place last, so a killed unpack never leaves a folder
  that a later run reads as complete; a second process unpacking the same
  archive finds the first one's folder;
- the cache key is the archive's content digest, so a changed archive at
  the same path is unpacked anew.

The model folder is the archive's root, or its single top-level folder
when everything sits under one (`norelmo/options.json`).
"""

import os
import shutil
import stat
import tempfile
import zipfile

from keras_elmo.presets.download import cache_root
from keras_elmo.presets.download import sha256_of

MAX_UNPACKED_BYTES = 64 << 30  # 64 GiB: the 5.5B model is ~0.4 GiB
MAX_MEMBERS = 10_000
PARTIAL_PREFIX = ".partial-"


class UnsafeArchiveError(ValueError):
    """A `.zip` holds a member that could escape or flood its folder."""


def check_members(archive, label):
    """The archive's members, after refusing anything unsafe (see module)."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise UnsafeArchiveError(
            f"{label} holds {len(infos)} members, more than the "
            f"{MAX_MEMBERS} a model archive may hold."
        )
    seen, total = set(), 0
    for info in infos:
        name = info.filename
        parts = name.replace("\\", "/").split("/")
        mode = info.external_attr >> 16
        kind = stat.S_IFMT(mode)
        if (
            name.startswith(("/", "\\"))
            or (len(name) > 1 and name[1] == ":")
            or ".." in parts
        ):
            raise UnsafeArchiveError(
                f"{label}: member {name!r} points outside the archive's "
                "folder; refused."
            )
        if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
            raise UnsafeArchiveError(
                f"{label}: member {name!r} is not a plain file or folder "
                f"(mode {oct(mode)}); refused."
            )
        key = name.rstrip("/")
        if key in seen:
            raise UnsafeArchiveError(
                f"{label}: member {name!r} appears twice; refused."
            )
        seen.add(key)
        total += info.file_size
    if total > MAX_UNPACKED_BYTES:
        raise UnsafeArchiveError(
            f"{label} unpacks to {total} bytes, more than the "
            f"{MAX_UNPACKED_BYTES} allowed."
        )
    return infos


def model_root(folder):
    """`folder`, or its only entry when that is a folder (skipping dot
    files and macOS' `__MACOSX`)."""
    entries = [
        e for e in os.listdir(folder) if not e.startswith((".", "__MACOSX"))
    ]
    if len(entries) == 1 and os.path.isdir(os.path.join(folder, entries[0])):
        return os.path.join(folder, entries[0])
    return folder


def unpack_zip(path, cache_dir=None, label=None):
    """The cache folder holding the unpacked model of the `.zip` at `path`.

    Args:
        path: str. A local `.zip` file.
        cache_dir: str or None. Overrides the cache root.
        label: str or None. How errors name the archive.

    Raises:
        UnsafeArchiveError: see the module docstring.
        ValueError: not a ZIP file.
    """
    label = label or f"archive {path!r}"
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{label} is not a ZIP file.")
    root = cache_root(cache_dir)
    target = os.path.join(root, "zip-" + sha256_of(path)[:20])
    if os.path.isdir(target):
        return model_root(target)
    os.makedirs(root, exist_ok=True)
    with zipfile.ZipFile(path) as archive:
        infos = check_members(archive, label)
        staging = tempfile.mkdtemp(prefix=PARTIAL_PREFIX, dir=root)
        try:
            for info in infos:
                archive.extract(info, staging)
            try:
                os.rename(staging, target)
            except OSError:
                if not os.path.isdir(target):
                    raise
                # another process finished the same archive first
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return model_root(target)
