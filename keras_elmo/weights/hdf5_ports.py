"""One declarative HDF5 <-> Keras weight table, and one set of checks.

A weight file format is a list of `port_weight(...)` entries, as keras-hub
ports checkpoints (`loader.port_weight(keras_variable=...,
hf_weight_key=..., hook_fn=...)`): each names an HDF5 dataset and the
Keras variable (or one direction of a stacked `[2, ...]` variable) that
holds it. Two layout differences cover every ELMo file:

- `leading_axis`: the file has an extra leading axis of size 1
  (bilm-tf's conv kernels `[1, width, dim, n]`);
- several entries with the same `hdf5_key` are stacked along the
  dataset's first axis in table order (bilm-tf's LSTM `W_0` is the input
  kernel's rows, then the recurrent kernel's).

`read_ports` reads through `keras_elmo.weights.hdf5_reader`, the one
checked reader of untrusted HDF5: the file's structure first (nothing
linked, mapped or stored outside it), then every dataset's metadata
(present, the shape the model expects, numeric, the bytes it stores),
then the values (readable, finite); nothing is assigned before all pass,
and errors name the file, the dataset and what was wrong. `write_ports`
writes the same table atomically.
"""

import dataclasses
import os

import h5py
import numpy as np

from keras_elmo.utils.atomic import atomic_path
from keras_elmo.utils.write_faults import ensure_room
from keras_elmo.weights.hdf5_reader import check_dataset
from keras_elmo.weights.hdf5_reader import open_hdf5
from keras_elmo.weights.hdf5_reader import read_checked


@dataclasses.dataclass(frozen=True)
class WeightPort:
    """One table row: a Keras variable (slice) <-> an HDF5 dataset (part)."""

    keras_variable: object
    hdf5_key: str
    direction: int = None
    leading_axis: bool = False

    def shape(self):
        """The shape of this entry's part of the dataset."""
        shape = tuple(self.keras_variable.shape)
        if self.direction is not None:
            shape = shape[1:]
        return (1,) + shape if self.leading_axis else shape

    def value(self):
        """The variable (slice) as a NumPy array in the file's layout."""
        value = np.asarray(self.keras_variable.numpy())
        if self.direction is not None:
            value = value[self.direction]
        return value[None] if self.leading_axis else value

    def assign(self, array):
        """Assigns `array` (this entry's part, in the file's layout)."""
        if self.leading_axis:
            array = array[0]
        variable = self.keras_variable
        if self.direction is None:
            variable.assign(array.astype(variable.dtype))
            return
        value = np.array(variable.numpy())
        value[self.direction] = array
        variable.assign(value)


def port_weight(keras_variable, hdf5_key, direction=None, leading_axis=False):
    """A `WeightPort`: `keras_variable` (its `direction` slice if given,
    an extra leading axis in the file if `leading_axis`) <-> `hdf5_key`."""
    return WeightPort(keras_variable, hdf5_key, direction, leading_axis)


def _group(ports):
    """`{hdf5_key: [ports]}` in table order."""
    groups = {}
    for port in ports:
        groups.setdefault(port.hdf5_key, []).append(port)
    return groups


def _dataset_shape(parts):
    shapes = [port.shape() for port in parts]
    if len(shapes) == 1:
        return shapes[0]
    return (sum(s[0] for s in shapes),) + shapes[0][1:]


def read_ports(path, ports, kind):
    """Checks every dataset of the table in `path`, then assigns them all.

    Returns:
        int, the number of datasets read.

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: not HDF5, unreadable, data outside the file
            (`hdf5_reader.UnsafeHDF5Error`), or a dataset missing, of
            another shape, not numeric, claiming more than it stores,
            unreadable or non-finite; nothing is assigned then.
    """
    path = os.fspath(path)
    groups = _group(ports)
    arrays = {}
    with open_hdf5(path, kind) as f:
        # Every dataset's metadata before any is read (or allocated).
        for key, parts in groups.items():
            check_dataset(f, key, _dataset_shape(parts), kind, repr(path))
        for key, parts in groups.items():
            expected = _dataset_shape(parts)
            arrays[key] = read_checked(f, key, expected, kind, repr(path))
    for key, parts in groups.items():
        start = 0
        for port in parts:
            rows = port.shape()[0] if len(parts) > 1 else None
            if rows is None:
                port.assign(arrays[key])
            else:
                port.assign(arrays[key][start : start + rows])
                start += rows
    return len(groups)


def write_ports(path, ports, dtype="float32"):
    """Writes the table's datasets to `path` atomically (temp + rename).

    The room needed is checked first (`write_faults.ensure_room`): HDF5
    may crash on a failed write, so a full disk or a file size limit is
    reported as `WriteFailed` naming `path` before HDF5 writes anything.
    """
    arrays = {}
    for key, parts in _group(ports).items():
        values = [port.value() for port in parts]
        array = values[0] if len(values) == 1 else np.concatenate(values)
        arrays[key] = array.astype(dtype)
    with atomic_path(path) as tmp:
        needed = sum(a.nbytes for a in arrays.values())
        ensure_room(tmp, needed + 1024 * len(arrays) + (64 << 10))
        with h5py.File(tmp, "w") as f:
            for key, array in arrays.items():
                f.create_dataset(key, data=array)
