"""Fetches a model's two files once into a verified cache under KERAS_HOME.

Cache layout (`cache_root()`), one folder per model:

    $KERAS_ELMO_CACHE or $KERAS_HOME/keras_elmo/presets   (KERAS_HOME
        defaults to ~/.keras, as for keras.utils.get_file)
      <name>/options.json
      <name>/weights.hdf5
      <name>/.verified.json   sizes, mtimes and sha256 of the checked pair
                              (`keras_elmo.presets.cache_integrity`)
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
"""

import contextlib
import logging
import os
import shutil
import tempfile

from keras_elmo.config import BiLMConfig
from keras_elmo.presets import cache_integrity
from keras_elmo.presets.cache_integrity import CACHE_ENV  # noqa: F401 (API)
from keras_elmo.presets.cache_integrity import cache_root
from keras_elmo.presets.cache_integrity import sha256_of  # noqa: F401 (API)
from keras_elmo.weights.hdf5 import verify_weights_file

logger = logging.getLogger(__name__)

OPTIONS = "options.json"
WEIGHTS = "weights.hdf5"
STAMP = cache_integrity.RECORD
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
        keras_elmo.presets.cache_integrity.CacheIntegrityError: a cached
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
    cache_integrity.write_record(target, (OPTIONS, WEIGHTS))


def read_stamp(target):
    """The `.verified.json` of a cache folder (sizes, sha256), or None."""
    try:
        return cache_integrity.read_record(target)
    except cache_integrity.CacheIntegrityError:
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
        return cache_integrity.check_entry(target, label, refetch, False)
    except cache_integrity.CacheIntegrityError:
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
