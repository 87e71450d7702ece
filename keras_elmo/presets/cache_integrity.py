"""The record of a cache entry's files, checked on every load.

Each cache entry keras_elmo writes holds a record, `.verified.json`:

- a downloaded pair (`<preset>/`, `url-<digest>/`): `options.json` and
  `weights.hdf5`, recorded once they are downloaded and verified;
- an unpacked archive (`zip-<digest>/`, `tar-<digest>/`): every file,
  recorded in the private staging folder before it is renamed into
  place, so the folder and its record appear together.

The record maps each file's path (relative, `/`-separated) to its size,
mtime (ns) and sha256 at that moment, and is written atomically.
`check_entry` runs on every load: a file whose size and mtime equal the
record's is taken as unchanged; otherwise it is hashed in full, and a
sha256 equal to the record's only refreshes the size and mtime (a copied
or touched file), while any other digest, a missing, added or
non-regular file refuses the entry (`CacheIntegrityError`, naming the
file and how to fetch a fresh copy). A record is never rewritten over a
changed file.

Top-level names starting with "." (the record, the download lock,
`.partial-*` staging folders) are not part of an entry. `verify_cache`
rehashes every file of every entry, and every cached archive against its
pin or first-download digest (`keras-elmo presets --verify`).
"""

import dataclasses
import hashlib
import json
import os
import stat

from keras_elmo.utils.atomic import atomic_write

CACHE_ENV = "KERAS_ELMO_CACHE"
RECORD = ".verified.json"
RECORD_SUFFIX = ".sha256"  # beside a downloaded archive (`archive_digest`)
_UNPACKED_PREFIXES = ("zip-", "tar-")


class CacheIntegrityError(OSError):
    """A cached file differs from the record written when it was fetched.

    `filename` is the changed file and `folder` the cache entry to delete
    (or fetch again with `force=True`)."""

    def __init__(self, message, filename=None, folder=None):
        super().__init__(message)
        self.message = message
        self.filename = filename
        self.folder = folder

    def __str__(self):
        return self.message


def cache_root(cache_dir=None):
    """The folder holding one sub-folder per cached model."""
    if cache_dir:
        return os.path.abspath(os.path.expanduser(os.fspath(cache_dir)))
    if os.environ.get(CACHE_ENV):
        return os.path.abspath(os.path.expanduser(os.environ[CACHE_ENV]))
    home = os.environ.get("KERAS_HOME") or os.path.join(
        os.path.expanduser("~"), ".keras"
    )
    return os.path.join(os.path.abspath(home), "keras_elmo", "presets")


def archive_record_path(archive_path):
    """Where the first-download digest of `archive_path` is kept."""
    return os.fspath(archive_path) + RECORD_SUFFIX


def read_archive_record(archive_path):
    """The first-download sha256 recorded for a downloaded archive, or
    None (`keras_elmo.presets.archives` writes it)."""
    try:
        with open(archive_record_path(archive_path), encoding="utf-8") as f:
            recorded = json.load(f)
    except (OSError, ValueError):
        return None
    sha = recorded.get("sha256") if isinstance(recorded, dict) else None
    return sha if isinstance(sha, str) and len(sha) == 64 else None


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _facts(path):
    info = os.stat(path)
    return {"size": info.st_size, "mtime_ns": info.st_mtime_ns}


def entry_files(folder):
    """`{relative name: path}` of every file of the entry at `folder`
    (recursively, top-level dot names excluded).

    Raises:
        CacheIntegrityError: an entry is a symbolic link, a device, a FIFO
            or anything else than a regular file or folder.
    """
    found = {}
    for parent, folders, names in os.walk(folder):
        top = parent == folder
        if top:
            folders[:] = [d for d in folders if not d.startswith(".")]
            names = [n for n in names if not n.startswith(".")]
        for name in folders + names:
            path = os.path.join(parent, name)
            mode = os.lstat(path).st_mode
            plain = (
                stat.S_ISDIR(mode) if name in folders else stat.S_ISREG(mode)
            )
            key = os.path.relpath(path, folder).replace(os.sep, "/")
            if not plain:
                raise CacheIntegrityError(
                    f"Cache entry {folder!r}: {key!r} is not a regular file "
                    "or folder (a link or a special file was placed there).",
                    path,
                    folder,
                )
            if name not in folders:
                found[key] = path
    return found


def write_record(folder, names=None):
    """Records size, mtime and sha256 of the entry's files (or of `names`
    only) in `folder/.verified.json`, atomically."""
    if names is None:
        paths = entry_files(folder)
    else:
        paths = {name: os.path.join(folder, name) for name in names}
    record = {
        name: dict(_facts(path), sha256=sha256_of(path))
        for name, path in sorted(paths.items())
    }
    with atomic_write(os.path.join(folder, RECORD)) as f:
        json.dump(record, f, indent=2)
    return record


def read_record(folder):
    """The record of `folder`: a dict, None when there is none.

    Raises:
        CacheIntegrityError: a record exists but is not one (unreadable,
            not JSON, or not `{name: {size, mtime_ns, sha256}}`).
    """
    path = os.path.join(folder, RECORD)
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise _damaged(folder, path, f"it cannot be read ({e})") from None
    if not isinstance(record, dict) or not all(
        isinstance(v, dict)
        and isinstance(v.get("sha256"), str)
        and isinstance(v.get("size"), int)
        for v in record.values()
    ):
        raise _damaged(folder, path, "it is not a record of files")
    return record


def _damaged(folder, path, why):
    return CacheIntegrityError(
        f"The cache record {path!r} is damaged: {why}. Delete the folder "
        f"{folder!r} to fetch the model again.",
        path,
        folder,
    )


def check_entry(folder, label, refetch, complete=True):
    """Checks the files of `folder` against its record (module docstring).

    Args:
        folder: str. The cache entry.
        label: str. How the message names the model.
        refetch: str. What to do for a fresh copy, ending the message.
        complete: bool. Refuse files that are not in the record (an
            unpacked archive); else only recorded files are checked.

    Returns:
        bool: False when `folder` has no record, True when every file
        matches it.

    Raises:
        CacheIntegrityError: a recorded file changed, is missing, or (with
            `complete`) an unrecorded file was added.
    """
    record = read_record(folder)
    if record is None:
        return False
    found = entry_files(folder)
    for name in sorted(set(found) - set(record) if complete else ()):
        raise _changed(folder, found[name], label, "was added", refetch)
    stale = {}
    for name, recorded in sorted(record.items()):
        path = os.path.join(folder, *name.split("/"))
        if name not in found and not os.path.isfile(path):
            raise _changed(folder, path, label, "is missing", refetch)
        facts = _facts(path)
        if all(recorded.get(k) == v for k, v in facts.items()):
            continue
        digest = sha256_of(path)
        if digest != recorded["sha256"]:
            what = (
                f"has sha256 {digest}, recorded {recorded['sha256']}; "
                f"size {facts['size']}, recorded {recorded['size']}"
            )
            raise _changed(folder, path, label, what, refetch)
        stale[name] = dict(facts, sha256=digest)
    if stale:  # the same bytes with a new mtime: record the new facts
        record.update(stale)
        with atomic_write(os.path.join(folder, RECORD)) as f:
            json.dump(record, f, indent=2)
    return True


def _changed(folder, path, label, what, refetch):
    return CacheIntegrityError(
        f"The cached file {path!r} of {label} changed after it was "
        f"recorded: it {what}. It is not used. {refetch}",
        path,
        folder,
    )


@dataclasses.dataclass(frozen=True)
class EntryReport:
    """What `verify_cache` found for one cache entry.

    `status` is "ok", "changed" (see `problem`), or "unrecorded" (no
    record: files placed by hand and not loaded since, or an archive of
    an older version).
    """

    name: str
    status: str
    files: int
    problem: str = ""


def verify_cache(cache_dir=None):
    """Rehashes every file of every entry under the cache root: one
    `EntryReport` per entry, sorted by name (`keras-elmo presets
    --verify`). Cached archives (`<name>.zip`, `.tar.gz`) are checked
    against their pin or first-download record."""
    root = cache_root(cache_dir)
    reports = []
    if not os.path.isdir(root):
        return reports
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if name.startswith(".") or name.endswith(RECORD_SUFFIX):
            continue
        if os.path.isdir(path):
            reports.append(_verify_folder(name, path))
        elif os.path.isfile(path):
            reports.append(_verify_archive(name, path))
    return reports


def _verify_folder(name, path):
    try:
        record = read_record(path)
        if record is None:
            return EntryReport(name, "unrecorded", len(entry_files(path)))
        complete = name.startswith(_UNPACKED_PREFIXES)
        found = entry_files(path)
        problems = []
        if complete:
            problems += [
                f"{n}: added" for n in sorted(set(found) - set(record))
            ]
        for key, recorded in sorted(record.items()):
            file = os.path.join(path, *key.split("/"))
            if not os.path.isfile(file):
                problems.append(f"{key}: missing")
            elif sha256_of(file) != recorded["sha256"]:
                problems.append(f"{key}: sha256 differs from the record")
    except CacheIntegrityError as e:
        return EntryReport(name, "changed", 0, str(e))
    if problems:
        return EntryReport(name, "changed", len(record), "; ".join(problems))
    return EntryReport(name, "ok", len(record))


def _verify_archive(name, path):
    """A cached archive against its pin (a published archive's registry
    entry) or its first-download record."""
    from keras_elmo.presets import published

    stem = name
    for suffix in (".zip", ".tar.gz"):
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
    entry = published.find_archive(stem)
    pinned = entry.sha256 if entry is not None else None
    expected = pinned.lower() if pinned else read_archive_record(path)
    if expected is None:
        return EntryReport(name, "unrecorded", 1)
    digest = sha256_of(path)
    if digest != expected:
        what = "pinned" if pinned else "recorded at first download"
        return EntryReport(
            name, "changed", 1, f"sha256 {digest}, {what} {expected}"
        )
    return EntryReport(name, "ok", 1)
