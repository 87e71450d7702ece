"""What the crash tests of `train`, `export` and downloads share: which
kill points a sweep tries, and file comparisons.

A full sweep kills a run at every write point; on a 2-core CI machine
that takes long for the TensorFlow commands (each kill is a fresh child
that rebuilds the model, then a rerun). By default `points_to_try`
keeps a representative subset: the first and the last occurrence of
every kind of point that publishes (a rename, a removal, TensorFlow's
merge: what a reader or a resume sees changes only there; between two
of them only temporary files change, and a kill just before the next
one leaves all of them written). Set `KERAS_ELMO_CRASH_SWEEP=full` for
every point.
"""

import io
import json
import os
import zipfile

import h5py
import numpy as np

FULL = os.environ.get("KERAS_ELMO_CRASH_SWEEP") == "full"
PUBLISHING = (
    "os.replace",
    "os.rename",
    "os.remove",
    "os.unlink",
    "shutil.rmtree",
    "atomic.exchange_paths",
    "file_io.rename_v2",
    "file_io.delete_file_v2",
    "file_io.delete_recursively_v2",
    "gen_io_ops.merge_v2_checkpoints",
)


def points_to_try(points, full=FULL, names=None):
    """The 1-based indices of `points` a sweep kills at (sorted); only
    points named in `names`, if given."""
    candidates = [
        k
        for k in range(1, len(points) + 1)
        if names is None or points[k - 1] in names
    ]
    if full:
        return candidates
    first, last = {}, {}
    for k in candidates:
        if points[k - 1] in PUBLISHING or names is not None:
            first.setdefault(points[k - 1], k)
            last[points[k - 1]] = k
    return sorted(set(first.values()) | set(last.values()))


def hdf5_arrays(source):
    """`{dataset path: array}` of an HDF5 file (path or file object)."""
    found = {}
    with h5py.File(source, "r") as f:
        f.visititems(
            lambda name, obj: (
                found.__setitem__(name, obj[()])
                if isinstance(obj, h5py.Dataset)
                else None
            )
        )
    return found


def assert_same_arrays(got, want, what):
    assert sorted(got) == sorted(want), what
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], f"{what}: {key}")


def keras_file_contents(path):
    """A `.keras` file's config and weight arrays (its metadata, which
    holds the date of the save, left out)."""
    with zipfile.ZipFile(path) as archive:
        config = json.loads(archive.read("config.json"))
        weights = hdf5_arrays(io.BytesIO(archive.read("model.weights.h5")))
    return config, weights


def assert_same_file(got, want):
    """Equal as their formats mean: HDF5 arrays, `.keras` config and
    weights, else bytes."""
    if got.endswith((".hdf5", ".h5")):
        assert_same_arrays(hdf5_arrays(got), hdf5_arrays(want), got)
    elif got.endswith(".keras"):
        (got_config, got_weights) = keras_file_contents(got)
        (want_config, want_weights) = keras_file_contents(want)
        assert got_config == want_config, got
        assert_same_arrays(got_weights, want_weights, got)
    else:
        with open(got, "rb") as a, open(want, "rb") as b:
            assert a.read() == b.read(), got


def tree(folder):
    """The relative paths of every file and folder under `folder`."""
    found = []
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            found.append(os.path.relpath(os.path.join(root, name), folder))
    return sorted(found)
