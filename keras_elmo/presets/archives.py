"""Unpacks a model archive (`.zip`, `.tar.gz`) safely into the cache.

NLPL's vector repository distributes ELMo models as ZIP files holding
`options.json`, `model.hdf5` (and a `vocab.txt`, `meta.json` or README) at
the archive's root; some ELMoForManyLangs models come the same way.
EMBEDDIA's models on CLARIN.SI are `.tar.gz` files holding one folder,
`slovenian/options.json` + `slovenian/slovenian-elmo-weights.hdf5`.
`unpack_archive` extracts either into `CACHE/zip-<sha256>[:20]/` (or
`tar-...`):

- the archive is refused before anything is written if a member is not a
  plain file or folder (symlinks, hard links, devices, FIFOs), has an
  absolute path, a drive or a `..` part, repeats another member's name, or
  the archive claims more than `MAX_UNPACKED_BYTES` (a zip bomb guard) or
  holds more than `MAX_MEMBERS` members;
- members are extracted into a private `.partial-*` folder and the folder
  is renamed into place last, so a killed unpack never leaves a folder
  that a later run reads as complete; a second process unpacking the same
  archive finds the first one's folder; tar members are copied out one by
  one (never `TarFile.extractall`, which would honour links and modes);
- the cache key is the archive's content digest, so a changed archive at
  the same path is unpacked anew. A downloaded archive's digest is first
  checked against its pin or first-download record
  (`keras_elmo.presets.archive_digest`).

The model folder is the archive's root, or its single top-level folder
when everything sits under one (`norelmo/options.json`).
"""

import os
import shutil
import stat
import tarfile
import zipfile

from keras_elmo.presets import archive_digest
from keras_elmo.presets.download import cache_root
from keras_elmo.presets.download import sha256_of
from keras_elmo.utils import file_modes

MAX_UNPACKED_BYTES = 64 << 30  # 64 GiB: the 5.5B model is ~0.4 GiB
MAX_MEMBERS = 10_000
PARTIAL_PREFIX = ".partial-"
TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar")


class UnsafeArchiveError(ValueError):
    """An archive holds a member that could escape or flood its folder."""


def is_archive_name(name):
    """True for a path or URL ending in `.zip`, `.tar.gz`, `.tgz`, `.tar`."""
    name = os.fspath(name).split("?", 1)[0].lower()
    return name.endswith((".zip",) + TAR_SUFFIXES)


def _check_name(name, label):
    parts = name.replace("\\", "/").split("/")
    if (
        name.startswith(("/", "\\"))
        or (len(name) > 1 and name[1] == ":")
        or ".." in parts
    ):
        raise UnsafeArchiveError(
            f"{label}: member {name!r} points outside the archive's "
            "folder; refused."
        )
    return "/".join(p for p in parts if p not in ("", "."))


def _check_all(entries, label):
    """`entries`: `(name, what, size)` per member, `what` None for a plain
    file or folder, else what it is ("mode 0o120777", "a symbolic link");
    returns the normalised names, after refusing anything unsafe."""
    if len(entries) > MAX_MEMBERS:
        raise UnsafeArchiveError(
            f"{label} holds {len(entries)} members, more than the "
            f"{MAX_MEMBERS} a model archive may hold."
        )
    seen, total, keys = set(), 0, []
    for name, what, size in entries:
        key = _check_name(name, label)
        if what is not None:
            raise UnsafeArchiveError(
                f"{label}: member {name!r} is not a plain file or folder "
                f"({what}); refused."
            )
        if key and key in seen:
            raise UnsafeArchiveError(
                f"{label}: member {name!r} appears twice; refused."
            )
        seen.add(key)
        keys.append(key)
        total += size
    if total > MAX_UNPACKED_BYTES:
        raise UnsafeArchiveError(
            f"{label} unpacks to {total} bytes, more than the "
            f"{MAX_UNPACKED_BYTES} allowed."
        )
    return keys


def check_members(archive, label):
    """The ZIP's members, after refusing anything unsafe (see module)."""
    infos = archive.infolist()
    entries = []
    for info in infos:
        mode = info.external_attr >> 16
        plain = stat.S_IFMT(mode) in (0, stat.S_IFREG, stat.S_IFDIR)
        what = None if plain else f"mode {oct(mode)}"
        entries.append((info.filename, what, info.file_size))
    _check_all(entries, label)
    return infos


def check_tar_members(archive, label):
    """The tar's `(member, normalised name)` pairs, after refusing anything
    unsafe (links, devices and FIFOs included)."""
    members = archive.getmembers()
    entries = [(m.name, _tar_kind(m), m.size) for m in members]
    return list(zip(members, _check_all(entries, label)))


def _tar_kind(member):
    """None for a plain file or folder, else what the member is."""
    if member.isfile() or member.isdir():
        return None
    for test, what in (
        (member.issym, "a symbolic link"),
        (member.islnk, "a hard link"),
        (member.ischr, "a character device"),
        (member.isblk, "a block device"),
        (member.isfifo, "a FIFO"),
    ):
        if test():
            return what
    return f"tar type {member.type!r}"


def model_root(folder):
    """`folder`, or its only entry when that is a folder (skipping dot
    files and macOS' `__MACOSX`)."""
    entries = [
        e for e in os.listdir(folder) if not e.startswith((".", "__MACOSX"))
    ]
    if len(entries) == 1 and os.path.isdir(os.path.join(folder, entries[0])):
        return os.path.join(folder, entries[0])
    return folder


def unpack_archive(
    path, cache_dir=None, label=None, pinned=None, url=None, accept_change=False
):
    """The cache folder holding the unpacked model of the archive at `path`.

    Args:
        path: str. A local `.zip`, `.tar.gz`, `.tgz` or `.tar` file.
        cache_dir: str or None. Overrides the cache root.
        label: str or None. How errors name the archive.
        pinned: str or None. The registry's sha256 of a downloaded archive.
        url: str or None. Where a downloaded archive came from. When given
            (or when `pinned` is), the archive's digest is checked first
            (`keras_elmo.presets.archive_digest.check_download`).
        accept_change: bool. Passed on to `check_download` (a URL fetched
            again with `force=True`).

    Raises:
        UnsafeArchiveError: see the module docstring.
        keras_elmo.presets.archive_digest.ArchiveDigestError: a downloaded
            archive's digest differs from its pin or first-download record.
        ValueError: neither a ZIP nor a tar file.
    """
    label = label or f"archive {path!r}"
    if zipfile.is_zipfile(path):
        kind = "zip"
    elif tarfile.is_tarfile(path):
        kind = "tar"
    else:
        raise ValueError(f"{label} is neither a ZIP nor a tar(.gz) file.")
    digest = sha256_of(path)
    if pinned or url:
        archive_digest.check_download(
            path, digest, pinned, label, url, accept_change
        )
    root = cache_root(cache_dir)
    target = os.path.join(root, f"{kind}-{digest[:20]}")
    if os.path.isdir(target):
        return model_root(target)
    os.makedirs(root, exist_ok=True)
    opened = zipfile.ZipFile(path) if kind == "zip" else tarfile.open(path)
    with opened as archive:
        if kind == "zip":
            plan = check_members(archive, label)
        else:
            plan = check_tar_members(archive, label)
        # renamed into the cache: the mode `os.mkdir` would give
        staging = file_modes.mkdtemp(prefix=PARTIAL_PREFIX, dir=root)
        try:
            if kind == "zip":
                for info in plan:
                    archive.extract(info, staging)
            else:
                _extract_tar(archive, plan, staging)
            try:
                os.rename(staging, target)
            except OSError:
                if not os.path.isdir(target):
                    raise
                # another process finished the same archive first
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return model_root(target)


def unpack_zip(path, cache_dir=None, label=None):
    """`unpack_archive` for a local `.zip` (kept for existing callers)."""
    return unpack_archive(path, cache_dir, label)


def _extract_tar(archive, plan, staging):
    """Copies each checked member's bytes out (links were refused)."""
    for member, name in plan:
        if not name:
            continue  # the archive's own "./" entry
        destination = os.path.join(staging, *name.split("/"))
        if member.isdir():
            os.makedirs(destination, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        source = archive.extractfile(member)
        with source, open(destination, "xb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
