"""Crash injection for preset downloads: a SIGKILL at every write point
of `fetch_model_files`, from a local HTTP server on 127.0.0.1.

The fetch of the tiny reference model (its options and weights served
by `tests.presets.preset_server`) passes its write points
(`tests.robustness.crash_points`: the cache folder, the staging folder,
each block of each file `keras.utils.get_file` writes, the removal of
the stamp, the two renames into place, the stamp's atomic write, the
staging folder's removal); a forked child is SIGKILLed just before each
in turn, every point (this sweep is cheap: no TensorFlow). Twice: a
first download, and a `force=True` fetch over a verified copy of an
older version of the model. After each kill:

- whatever the cache folder holds is never taken for more than it is:
  `options.json` and `weights.hdf5` are each absent or byte for byte a
  served version, and a valid stamp (`.verified.json`) vouches only for
  a pair of one version;
- a plain rerun (no `force`) finds a pair of one version, never the
  options of one and the weights of the other;
- the same call, rerun, finishes with exactly the served files and a
  valid stamp, and nothing else is left but the lock.
"""

import json
import os
import shutil

import h5py
import pytest

from keras_elmo.presets import download
from tests.presets.preset_server import Server
from tests.robustness.crash_points import _PATCHED
from tests.robustness.crash_points import count_points
from tests.robustness.crash_points import killed_at

pytestmark = [
    pytest.mark.crash_sweep,
    pytest.mark.skipif(
        not hasattr(os, "fork"), reason="crash injection forks (POSIX only)"
    ),
]

KEY = "crash_tiny"
SERVED = ("/options.json", "/weights.hdf5")


class DownloadBlocks:
    """A write point per block `keras.utils.get_file` writes."""

    @staticmethod
    def written():
        pass


@pytest.fixture(autouse=True)
def blocks_are_points(monkeypatch):
    from keras.src.utils import file_utils

    real = file_utils.urlretrieve

    def urlretrieve(url, filename, reporthook=None, data=None):
        def hook(blocks, block_size, total):
            if blocks:
                DownloadBlocks.written()
            if reporthook:
                reporthook(blocks, block_size, total)

        return real(url, filename, hook, data)

    monkeypatch.setattr(file_utils, "urlretrieve", urlretrieve)


POINTS = _PATCHED + [(DownloadBlocks, "written")]


@pytest.fixture(scope="module")
def served(reference_weights, tmp_path_factory):
    """The served (new) version and an older one of the same model."""
    options, weights = reference_weights("tiny")
    folder = tmp_path_factory.mktemp("download_crash")
    old = {"options.json": str(folder / "old_options.json")}
    old["weights.hdf5"] = str(folder / "old_weights.hdf5")
    with open(options) as f:
        # The same architecture, written otherwise.
        json.dump(json.load(f), open(old["options.json"], "w"), indent=4)
    shutil.copy(weights, old["weights.hdf5"])
    with h5py.File(old["weights.hdf5"], "r+") as f:
        first = []
        f.visititems(
            lambda n, o: (
                first.append(o)
                if isinstance(o, h5py.Dataset) and o.dtype.kind == "f"
                else None
            )
        )
        first[0][...] = first[0][()] + 1.0
    server = Server()
    new = {"options.json": options, "weights.hdf5": weights}
    for name, path in new.items():
        with open(path, "rb") as f:
            server.files["/" + name] = f.read()
    yield server, _bytes(new), old, _bytes(old)
    server.close()


def _bytes(paths):
    out = {}
    for name, path in paths.items():
        with open(path, "rb") as f:
            out[name] = f.read()
    return out


def _fetch(server, cache, force):
    return download.fetch_model_files(
        KEY,
        (server.url + "options.json",),
        (server.url + "weights.hdf5",),
        "the crash test model",
        cache_dir=cache,
        force=force,
    )


def _cached(cache):
    target = os.path.join(cache, KEY)
    found = {}
    for name in ("options.json", "weights.hdf5"):
        path = os.path.join(target, name)
        if os.path.exists(path):
            with open(path, "rb") as f:
                found[name] = f.read()
    return found


def _version(files, versions):
    """Which version (index in `versions`) each file is, or fails."""
    found = {}
    for name, data in files.items():
        matches = [i for i, v in enumerate(versions) if v[name] == data]
        assert matches, f"{name} is no served version (torn)"
        found[name] = matches
    return found


def _prepare(cache, old, with_old):
    if os.path.exists(cache):
        shutil.rmtree(cache)
    if not with_old:
        return
    target = os.path.join(cache, KEY)
    os.makedirs(target)
    for name, path in old.items():
        shutil.copy(path, os.path.join(target, name))
    download._write_stamp(target)


def _sweep(served, folder, with_old):
    server, new, old_paths, old = served
    versions = [new, old] if with_old else [new]
    cache = str(folder / "cache")
    _prepare(cache, old_paths, with_old)
    points = count_points(lambda: _fetch(server, cache, with_old), POINTS)
    assert _cached(cache) == new
    for k in range(1, len(points) + 1):
        _prepare(cache, old_paths, with_old)
        work = lambda: _fetch(server, cache, with_old)  # noqa: E731
        where = f"point {k} of {len(points)} ({points[k - 1]})"
        assert killed_at(k, work, points=POINTS), where
        files = _cached(cache)
        kinds = _version(files, versions)
        target = os.path.join(cache, KEY)
        if download._stamp_matches(target):
            assert len(files) == 2, where
            assert set(kinds["options.json"]) & set(kinds["weights.hdf5"])
        # A plain rerun keeps a pair of one version, or fetches the new.
        saved = str(folder / "saved")
        shutil.rmtree(saved, ignore_errors=True)
        if os.path.exists(cache):
            shutil.copytree(cache, saved)
        _fetch(server, saved, False)
        got = _version(_cached(saved), versions)
        assert set(got["options.json"]) & set(got["weights.hdf5"]), where
        # The same call, rerun, ends as an uninterrupted one.
        _fetch(server, cache, with_old)
        assert _cached(cache) == new, where
        assert download._stamp_matches(target), where
        assert sorted(os.listdir(target)) == [
            ".lock",
            ".verified.json",
            "options.json",
            "weights.hdf5",
        ], where
    return points


def test_a_kill_at_every_write_point_of_a_download(served, tmp_path):
    points = _sweep(served, tmp_path, with_old=False)
    print(f"download: {len(points)} kill points")
    assert points.count("DownloadBlocks.written") >= 4, points
    assert points.count("os.replace") >= 3, points


def test_a_kill_at_every_write_point_of_a_forced_refetch(served, tmp_path):
    points = _sweep(served, tmp_path, with_old=True)
    print(f"download, force=True over an older copy: {len(points)} points")
    assert "os.remove" in points, points
