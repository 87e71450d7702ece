"""Fetches a model's two files once into a verified cache under KERAS_HOME.

Cache layout (`cache_root()`), one folder per model:

    $KERAS_ELMO_CACHE or $KERAS_HOME/keras_elmo/presets   (KERAS_HOME
        defaults to ~/.keras, as for keras.utils.get_file)
      <name>/options.json
      <name>/weights.hdf5
      <name>/.verified.json   sizes, mtimes and sha256 of the checked pair
                              (`keras_elmo.presets.download`)
      <name>/.lock            held while fetching (fcntl.flock)

Downloads go through `keras.utils.get_file` (Keras progress bar, sha256
check where the registry pins one) into a private `.partial-*` folder, are
verified there (the options parse and match the registry; the HDF5 opens
and every dataset has the shape the options imply and reads fully), and
only then are renamed into place (any older weights removed first, so
that no kill leaves the options of one version beside the weights of
another), options first, weights next and the stamp last.
So a killed download never leaves a file that a later run reads as
complete, and two processes fetching the same model at once serialise on
the lock: the second finds the first's verified copy and downloads nothing.
Files placed in `<name>/` by hand are verified once, then used offline.
Every later load checks the two files against `.verified.json` (size and
mtime, the full sha256 where those differ): a changed file is refused,
never re-verified and re-stamped; a missing one is fetched again.

The record of a cache entry's files, checked on every load.

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

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import shutil
import stat
import tempfile

from keras_elmo.config import BiLMConfig
from keras_elmo.utils.atomic import atomic_write
from keras_elmo.weights.hdf5 import verify_weights_file

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


logger = logging.getLogger(__name__)

OPTIONS = "options.json"
WEIGHTS = "weights.hdf5"
STAMP = RECORD
PARTIAL_PREFIX = ".partial-"


class PresetDownloadError(OSError):
    """A model's files could not be fetched or failed verification."""


def fetch_model_files(
    key,
    options_urls,
    weights_urls,
    label,
    expected_options=None,
    options_sha256=None,
    weights_sha256=None,
    cache_dir=None,
    force=False,
):
    """Returns the cache folder holding verified `options.json` and weights.

    Args:
        key: str. The cache sub-folder (a preset name, or a URL digest).
        options_urls, weights_urls: tuples of URLs tried in order.
        label: str. How errors name the model (e.g. "preset 'x'").
        expected_options: dict or None. The architecture the options file
            must describe.
        options_sha256, weights_sha256: str or None. Pinned digests.
        cache_dir: str or None. Overrides `cache_root()`.
        force: bool. Fetch again even when a verified copy exists.

    Raises:
        PresetDownloadError: no URL gave a good file; the message names the
            model, every URL tried with its error, and the folder where
            the two files can be placed by hand.
        keras_elmo.presets.download.CacheIntegrityError: a cached
            file differs from the record of its download; the message
            names it and how to fetch a fresh copy.
    """
    target = os.path.join(cache_root(cache_dir), key)
    pins = {OPTIONS: options_sha256, WEIGHTS: weights_sha256}
    check = (target, label)
    if not force and _cached(*check, race=True):
        return target
    os.makedirs(target, exist_ok=True)
    with _locked(os.path.join(target, ".lock")):
        if not force and _cached(*check):
            return target  # another process fetched it while we waited
        _remove_partials(target)
        if not force and _present(target):
            _verify_by_hand_files(target, label, expected_options, pins)
            return target
        staging = tempfile.mkdtemp(prefix=PARTIAL_PREFIX, dir=target)
        try:
            urls = {OPTIONS: options_urls, WEIGHTS: weights_urls}
            where = (staging, target, urls, label)
            fetched = {}
            fetched[OPTIONS], config = _fetch_one(
                OPTIONS,
                pins[OPTIONS],
                lambda path: _verify(
                    OPTIONS, path, None, expected_options, label
                ),
                *where,
            )
            fetched[WEIGHTS], _ = _fetch_one(
                WEIGHTS,
                pins[WEIGHTS],
                lambda path: _verify(WEIGHTS, path, config, None, label),
                *where,
            )
            # The stamp, then the old weights go first: a kill between the
            # renames below must not leave new options beside old weights,
            # a pair a later run would verify as one model.
            for name in (STAMP, WEIGHTS):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(target, name))
            for name in (OPTIONS, WEIGHTS):
                os.replace(fetched[name], os.path.join(target, name))
            # Before the stamp: a run that finds the stamp returns without
            # the lock, so it cannot remove a staging folder safely.
            shutil.rmtree(staging, ignore_errors=True)
            _write_stamp(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _fetch_one(name, pin, verify, staging, target, all_urls, label):
    """Tries each URL of `name` into `staging` until one verifies.

    Returns `(path, verify(path))`; raises `PresetDownloadError` listing
    every URL with its error, and where to place the files by hand.
    """
    return fetch_first(
        all_urls[name],
        name,
        staging,
        what=f"{name} of {label}",
        by_hand="download the two files elsewhere and place them by hand "
        f"as\n  {os.path.join(target, OPTIONS)}   (from "
        f"{all_urls[OPTIONS][0]})\n  {os.path.join(target, WEIGHTS)}   "
        f"(from {all_urls[WEIGHTS][0]})\nthen it works offline.",
        sha256=pin,
        verify=verify,
    )


def fetch_first(urls, fname, staging, what, by_hand, sha256=None, verify=None):
    """Downloads `staging/fname` from the first of `urls` that answers and
    verifies, through `keras.utils.get_file` (its progress bar, its sha256
    check when `sha256` is pinned).

    Args:
        urls: the URLs to try, in order.
        fname: str, the file's name in `staging`.
        staging: str, a private folder (the caller renames the file into
            place and removes the folder).
        what: str, how the error names the file (`"the archive"`).
        by_hand: str, the end of the error: what to do without network.
        sha256: hex str or None.
        verify: `path -> value` or None; an exception it raises counts as
            that URL's failure.

    Returns:
        `(path, verify(path))` (`None` without `verify`).

    Raises:
        PresetDownloadError: listing every URL with its error.
    """
    import keras

    failures = []
    path = os.path.join(staging, fname)
    for url in urls:
        try:
            keras.utils.get_file(
                fname=fname,
                origin=url,
                file_hash=sha256,
                hash_algorithm="sha256",
                cache_dir=staging,
                cache_subdir="",
                force_download=True,
            )
            if not os.path.exists(path):  # get_file may fall back
                raise OSError(f"cache folder {staging!r} is not writable")
            return path, verify(path) if verify else None
        except Exception as e:  # noqa: BLE001 (urllib, Keras, h5py, ours)
            failures.append(f"  {url}\n    -> {type(e).__name__}: {e}")
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
    raise PresetDownloadError(
        f"Could not fetch {what}. URLs tried:\n"
        + "\n".join(failures)
        + f"\nWithout network, {by_hand}"
    )


def _verify(name, path, config, expected_options, label):
    """Checks one fetched file; returns the config (from the options)."""
    if name == OPTIONS:
        found = BiLMConfig.from_options_json(path)
        if expected_options is not None:
            expected = BiLMConfig.from_options_json(expected_options)
            differences = _differences(
                _architecture(found), _architecture(expected)
            )
            if differences:
                raise ValueError(
                    f"Options file of {label} differs from the architecture "
                    f"recorded in the registry: {differences}."
                )
        return found
    verify_weights_file(path, config, label=f"{name} of {label}")
    return config


def _architecture(config):
    fields = config.to_dict()
    fields.pop("n_characters")  # 261 and 262 describe the same embedding
    return fields


def _differences(found, expected):
    """`"lstm_units is 64, expected 32; ..."` for the fields that differ."""
    return "; ".join(
        f"{key} is {found.get(key)!r}, expected {expected.get(key)!r}"
        for key in sorted(set(found) | set(expected))
        if found.get(key) != expected.get(key)
    )


def _verify_by_hand_files(target, label, expected_options, pins):
    paths = {n: os.path.join(target, n) for n in (OPTIONS, WEIGHTS)}
    try:
        config = _verify(OPTIONS, paths[OPTIONS], None, expected_options, label)
        _verify(WEIGHTS, paths[WEIGHTS], config, None, label)
        for name, pin in pins.items():
            if pin and sha256_of(paths[name]) != pin:
                raise ValueError(
                    f"{paths[name]!r}: sha256 differs from the pinned {pin}."
                )
    except (ValueError, OSError) as e:
        raise PresetDownloadError(
            f"The files in the cache folder {target!r} for {label} fail "
            f"verification: {e}\nReplace them, or delete them (or pass "
            "`force=True`) to fetch again."
        ) from e
    _write_stamp(target)


def _present(target):
    return all(
        os.path.exists(os.path.join(target, n)) for n in (OPTIONS, WEIGHTS)
    )


def _write_stamp(target):
    write_record(target, (OPTIONS, WEIGHTS))


def read_stamp(target):
    """The `.verified.json` of a cache folder (sizes, sha256), or None."""
    try:
        return read_record(target)
    except CacheIntegrityError:
        return None


def _stamp_matches(target):
    """True when `target` holds the recorded pair unchanged."""
    return _cached(target, f"cache folder {target!r}", race=True)


def _cached(target, label, race=False):
    """True when `target` holds the recorded pair unchanged; False when it
    has no record or (fetched again) misses a file.

    With `race` (no lock held), any failure is False, so the caller looks
    again under the lock: a concurrent `force` fetch replaces the files.

    Raises:
        CacheIntegrityError: a recorded file changed (without `race`).
    """
    refetch = (
        f"Delete the folder {target!r} to fetch a fresh copy on the next "
        "load (or fetch it again with force=True; `keras-elmo download` "
        "takes the same option)."
    )
    try:
        if not _present(target):
            return False
        return check_entry(target, label, refetch, False)
    except CacheIntegrityError:
        if race:
            return False
        raise


def _remove_partials(target):
    """Removes `.partial-*` folders left by killed downloads (lock held)."""
    for entry in os.listdir(target):
        if entry.startswith(PARTIAL_PREFIX):
            logger.info("Removing an interrupted download: %s", entry)
            shutil.rmtree(os.path.join(target, entry), ignore_errors=True)


@contextlib.contextmanager
def _locked(path):
    """An exclusive `flock` on `path` (no lock where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:  # Windows: renames are still atomic
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
