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
  (`keras_elmo.presets.archives`);
- the unpacked folder carries a record of every file (size, mtime,
  sha256), written in the staging folder before the rename, and is
  checked against it on every load (`keras_elmo.presets.download`):
  a changed, added or missing file refuses the folder; `force=True`
  unpacks it again, as does a folder without a record (an older version's);
- a member that cannot be read (a corrupt or truncated archive) or
  written (a full disk) raises an error naming the archive, the member
  and, for a full disk, the folder; nothing of the unpack is kept.

The model folder is the archive's root, or its single top-level folder
when everything sits under one (`norelmo/options.json`).

The sha256 check of a downloaded archive (`check_download`): pinned, or
recorded on first download and checked on every later use (trust on first use).

Most published `.zip` / `.tar.gz` models have no digest their publisher
states, and none could be recorded when they were registered (no network
then): their registry entry says `sha256=None`, and `keras-elmo presets`
prints "unpinned". For those an unverified download is unavoidable the
first time, so the loader says so and narrows the risk to that one
download:

- **pinned** (`sha256` given): the archive's digest must equal it, on the
  first download (Keras' `get_file` checks it too) and on every later use
  of the cached copy;
- **unpinned**: the first download's digest is written beside the cached
  archive, `CACHE/<name>.zip.sha256` (a JSON object `{"sha256": ...,
  "source": ...}`, written atomically), with a WARNING log that names the
  digest so a user can compare it with another copy. Every later use,
  including a `force=True` re-download, must give the same digest: the
  NLPL repository states that a published entry never changes
  (wiki.nlpl.eu/index.php/Vectors/home), so a different archive under the
  same name is an error, never silently accepted. Deleting the `.sha256`
  file accepts the new archive. An archive given by URL (not by name) is
  the exception the URL cache documents (docs/PRESETS.md, "Caches of
  URLs"): `force=True` fetches it again and records the new digest, with
  a WARNING naming the old and the new one.

An archive given by local path is the user's own file: it is unpacked (its
digest keys the unpack folder) but neither pinned nor recorded.
"""

import contextlib
import json
import logging
import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib

from keras_elmo.presets import download
from keras_elmo.presets.download import PresetDownloadError
from keras_elmo.presets.download import cache_root
from keras_elmo.presets.download import sha256_of
from keras_elmo.utils import atomic as file_modes
from keras_elmo.utils import atomic as write_faults
from keras_elmo.utils.atomic import atomic_write

logger = logging.getLogger(__name__)

# The record's name and reader live with the cache's other records.
RECORD_SUFFIX = download.RECORD_SUFFIX
record_path = download.archive_record_path
read_record = download.read_archive_record


class ArchiveDigestError(PresetDownloadError):
    """A cached archive's sha256 differs from the pinned or recorded one."""


def check_download(
    archive_path, digest, pinned, label, source=None, accept_change=False
):
    """Checks the digest of a downloaded archive (see the module docstring).

    Args:
        archive_path: str. The cached archive.
        digest: str. Its sha256 (hex), computed by the caller.
        pinned: str or None. The registry's digest.
        label: str. How messages name the model.
        source: str or None. The URL it came from, for the record.
        accept_change: bool. Record a digest that differs from the
            recorded one (a `force=True` re-download of a URL) instead of
            refusing it.

    Returns:
        str: "pinned", "recorded" (first download of an unpinned archive,
        or an accepted change) or "matches-record".

    Raises:
        ArchiveDigestError: the digest differs from the pinned or recorded
            one; the message names both and what to delete.
    """
    if pinned:
        if digest != pinned.lower():
            raise ArchiveDigestError(
                f"{label}: the archive {archive_path!r} has sha256 {digest}, "
                f"expected the pinned {pinned.lower()}. Delete it (or pass "
                "`force=True`) to fetch it again."
            )
        return "pinned"
    record = record_path(archive_path)
    recorded = read_record(archive_path)
    if recorded is None or (accept_change and digest != recorded):
        with atomic_write(record) as f:
            json.dump({"sha256": digest, "source": source}, f, indent=2)
        before = "" if recorded is None else f" (it was {recorded})"
        logger.warning(
            "%s has no pinned sha256 (unpinned): this download could not be "
            "verified. Its sha256 %s%s is recorded in %s and every later "
            "use is checked against it.",
            label,
            digest,
            before,
            record,
        )
        return "recorded"
    if digest != recorded:
        raise ArchiveDigestError(
            f"{label}: the archive {archive_path!r} has sha256 {digest}, but "
            f"{recorded} was recorded when it was first downloaded (in "
            f"{record!r}); a published archive should never change. Delete "
            f"{record!r} to accept the new archive, or delete the archive "
            "to fetch it again."
        )
    return "matches-record"


MAX_UNPACKED_BYTES = 64 << 30  # 64 GiB: the 5.5B model is ~0.4 GiB
MAX_MEMBERS = 10_000
PARTIAL_PREFIX = ".partial-"
TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar")


class UnsafeArchiveError(ValueError):
    """An archive holds a member that could escape or flood its folder."""


class CorruptArchiveError(ValueError):
    """A member of an archive cannot be read (damaged or truncated)."""


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
    path,
    cache_dir=None,
    label=None,
    pinned=None,
    url=None,
    accept_change=False,
    force=False,
):
    """The cache folder holding the unpacked model of the archive at `path`.

    Args:
        path: str. A local `.zip`, `.tar.gz`, `.tgz` or `.tar` file.
        cache_dir: str or None. Overrides the cache root.
        label: str or None. How errors name the archive.
        pinned: str or None. The registry's sha256 of a downloaded archive.
        url: str or None. Where a downloaded archive came from. When given
            (or when `pinned` is), the archive's digest is checked first
            (`keras_elmo.presets.archives.check_download`).
        accept_change: bool. Passed on to `check_download` (a URL fetched
            again with `force=True`).
        force: bool. Unpack again even when an unpacked folder exists.

    Raises:
        UnsafeArchiveError: see the module docstring.
        CorruptArchiveError: a member cannot be read; names it.
        keras_elmo.utils.atomic.WriteFailed: the disk is full (or
            the cache not writable) while unpacking; names the archive,
            the member and the folder.
        keras_elmo.presets.archives.ArchiveDigestError: a downloaded
            archive's digest differs from its pin or first-download record.
        keras_elmo.presets.download.CacheIntegrityError: the
            unpacked folder differs from its record.
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
        check_download(path, digest, pinned, label, url, accept_change)
    root = cache_root(cache_dir)
    target = os.path.join(root, f"{kind}-{digest[:20]}")
    if os.path.isdir(target) and not force:
        refetch = (
            f"Delete the folder {target!r} to unpack the archive again on "
            "the next load (or load it with force=True; `keras-elmo "
            "download` takes the same option)."
        )
        if download.check_entry(target, label, refetch):
            return model_root(target)
        logger.info("%s: %s has no record; unpacking again.", label, target)
    os.makedirs(root, exist_ok=True)
    opened = zipfile.ZipFile(path) if kind == "zip" else tarfile.open(path)
    with opened as archive:
        with _member_errors(label, "(the list of members)", target):
            if kind == "zip":
                plan = check_members(archive, label)
            else:
                plan = check_tar_members(archive, label)
        # renamed into the cache: the mode `os.mkdir` would give
        staging = file_modes.mkdtemp(prefix=PARTIAL_PREFIX, dir=root)
        try:
            if kind == "zip":
                _extract_zip(archive, plan, staging, label, target)
            else:
                _extract_tar(archive, plan, staging, label, target)
            with _member_errors(label, download.RECORD, target):
                download.write_record(staging)
            _install(staging, target, root)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return model_root(target)


def _install(staging, target, root):
    """Renames `staging` to `target`, moving an older `target` aside."""
    stale = None
    if os.path.isdir(target):
        stale = tempfile.mkdtemp(prefix=PARTIAL_PREFIX, dir=root)
        with contextlib.suppress(FileNotFoundError):
            os.rename(target, os.path.join(stale, "old"))
    try:
        os.rename(staging, target)
    except OSError:
        if not os.path.isdir(target):
            raise
        # another process finished the same archive first
    finally:
        if stale:
            shutil.rmtree(stale, ignore_errors=True)


@contextlib.contextmanager
def _member_errors(label, member, folder):
    """Re-raises a failure to read or write one member naming the archive
    and the member: a storage fault as `WriteFailed`, a damaged member as
    `CorruptArchiveError`."""
    try:
        yield
    except (UnsafeArchiveError, write_faults.WriteFailed):
        raise
    except Exception as e:
        fault = write_faults.storage_fault(e)
        if fault is not None:
            number, meaning = fault
            raise write_faults.WriteFailed(
                f"Could not unpack member {member!r} of {label} into "
                f"{folder!r}: {meaning} "
                f"({os.strerror(number)}). Nothing of the archive was "
                "kept; free space (or make the folder writable) and load "
                "it again.",
                number,
                folder,
            ) from e
        if isinstance(
            e, (zlib.error, zipfile.BadZipFile, tarfile.TarError, EOFError)
        ) or isinstance(e, OSError):
            raise CorruptArchiveError(
                f"{label}: member {member!r} cannot be unpacked "
                f"({type(e).__name__}: {e}); the archive is damaged or "
                "truncated. Fetch it again (or delete it)."
            ) from e
        raise


def _destination(staging, name):
    destination = os.path.join(staging, *name.split("/"))
    os.makedirs(os.path.dirname(destination), exist_ok=True)
    return destination


def _extract_zip(archive, infos, staging, label, target):
    """Extracts each checked member (`ZipFile.extract` drops modes)."""
    for info in infos:
        with _member_errors(label, info.filename, target):
            archive.extract(info, staging)


def _extract_tar(archive, plan, staging, label, target):
    """Copies each checked member's bytes out (links were refused)."""
    for member, name in plan:
        if not name:
            continue  # the archive's own "./" entry
        with _member_errors(label, member.name, target):
            if member.isdir():
                os.makedirs(
                    os.path.join(staging, *name.split("/")), exist_ok=True
                )
                continue
            destination = _destination(staging, name)
            source = archive.extractfile(member)
            with source, open(destination, "xb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
