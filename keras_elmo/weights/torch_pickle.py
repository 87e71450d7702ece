"""Reads `torch.save` state dicts as NumPy arrays, without torch or pickle code.

`read_state_dict(path)` -> `{name: np.ndarray}` for the two layouts
`torch.save` writes:

- the zip layout (torch >= 1.6): a zip archive `ROOT/data.pkl` (the
  pickled dict, tensors as persistent ids `("storage", StorageType, key,
  location, numel)`) and `ROOT/data/KEY` (each storage's raw bytes, in the
  byte order that `ROOT/byteorder` names, little-endian by default);
- the legacy stream (`_use_new_zipfile_serialization=False`, and every
  file written by torch < 1.6, such as the 2018 ELMoForManyLangs models):
  five pickles in a row (magic number, protocol version 1001, system
  info, the dict with persistent ids `("storage", StorageType, key,
  location, numel, view)`, the list of storage keys), then for each key in
  that list an int64 element count and the storage's raw bytes.

Every pickle is read by `_RestrictedUnpickler`, whose `find_class` allows
only what a state dict is made of: `collections.OrderedDict`, the tensor
rebuild functions `torch._utils._rebuild_tensor` / `_rebuild_tensor_v2` /
`_rebuild_parameter`, and the `torch.*Storage` classes, each replaced by a
harmless stand-in (no torch import). Anything else (`os.system`,
`builtins.eval`, a custom class) raises `UnsafePickleError` naming the
`module.name` found, before any of it runs. Tensors are rebuilt as NumPy
views `as_strided(storage, size, stride)` at the storage offset, then
copied.
"""

import collections
import io
import os
import pickle
import struct
import zipfile

import numpy as np

# torch's legacy magic number and protocol version (torch/serialization.py)
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001

_STORAGE_DTYPES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "BFloat16Storage": None,  # no NumPy dtype: refused with a message
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


class UnsafePickleError(ValueError):
    """A pickle asks for a callable that a state dict does not need."""


class _StorageType:
    """Stands in for `torch.FloatStorage` etc.: only names a dtype."""

    def __init__(self, name):
        self.name = name
        self.dtype = _STORAGE_DTYPES[name]


class _Storage:
    """A storage's key and dtype; its bytes are attached after loading."""

    def __init__(self, storage_type, key, numel):
        self.storage_type = storage_type
        self.key = str(key)
        self.numel = int(numel)
        self.array = None


class _Tensor:
    """A rebuilt tensor's recipe: storage, offset, size, stride."""

    def __init__(self, storage, offset, size, stride):
        self.storage = storage
        self.offset = int(offset)
        self.size = tuple(int(s) for s in size)
        self.stride = tuple(int(s) for s in stride)

    def to_numpy(self, label):
        array = self.storage.array
        if array is None:
            raise ValueError(
                f"{label}: storage {self.storage.key!r} has no data."
            )
        itemsize = array.dtype.itemsize
        extent = self.offset + sum(
            (n - 1) * s for n, s in zip(self.size, self.stride) if n > 0
        )
        if self.size and min(self.size) == 0:
            return np.zeros(self.size, array.dtype)
        if extent >= array.size or self.offset < 0:
            raise ValueError(
                f"{label}: a tensor of size {self.size} (stride "
                f"{self.stride}, offset {self.offset}) reaches past its "
                f"storage of {array.size} elements; the file is corrupt."
            )
        view = np.lib.stride_tricks.as_strided(
            array[self.offset :],
            shape=self.size,
            strides=tuple(s * itemsize for s in self.stride),
            writeable=False,
        )
        return np.array(view)


def _rebuild_tensor(storage, offset, size, stride, *unused):
    if not isinstance(storage, _Storage):
        raise UnsafePickleError(
            "torch._utils._rebuild_tensor_v2 received a "
            f"{type(storage).__name__} where a storage was expected."
        )
    return _Tensor(storage, offset, size, stride)


def _rebuild_parameter(data, *unused):
    return data


_ALLOWED = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
}


class _RestrictedUnpickler(pickle.Unpickler):
    """`pickle.Unpickler` that resolves only a state dict's globals."""

    def __init__(self, file, label, storages=None):
        super().__init__(file, encoding="latin1")
        self.label = label
        self.storages = storages

    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        if module == "torch" and name in _STORAGE_DTYPES:
            if _STORAGE_DTYPES[name] is None:
                raise ValueError(
                    f"{self.label}: tensors of torch.{name} (bfloat16) "
                    "are not supported; save the state dict as float32."
                )
            return _StorageType(name)
        raise UnsafePickleError(
            f"{self.label}: refusing to unpickle `{module}.{name}`: a "
            "torch state dict holds only tensors and OrderedDicts "
            "(allowed: collections.OrderedDict, torch._utils._rebuild_"
            "tensor_v2, torch.*Storage). The file is not a plain state "
            "dict, or it was tampered with; it was not loaded."
        )

    def persistent_load(self, pid):
        if self.storages is None:
            raise UnsafePickleError(
                f"{self.label}: unexpected persistent id {pid!r:.80}."
            )
        if (
            not isinstance(pid, tuple)
            or len(pid) < 5
            or pid[0] != "storage"
            or not isinstance(pid[1], _StorageType)
        ):
            raise UnsafePickleError(
                f"{self.label}: unexpected persistent id {pid!r:.80}; "
                "expected ('storage', torch.*Storage, key, location, n)."
            )
        if len(pid) > 5 and pid[5] is not None:
            raise ValueError(
                f"{self.label}: storage views (torch < 0.4 files) are not "
                "supported."
            )
        key = str(pid[2])
        if key not in self.storages:
            self.storages[key] = _Storage(pid[1], key, pid[4])
        return self.storages[key]


def _load(file, label, storages=None):
    try:
        return _RestrictedUnpickler(file, label, storages).load()
    except (UnsafePickleError, ValueError):
        raise
    except Exception as e:  # truncated or not a pickle at all
        raise ValueError(
            f"{label} is not a readable torch.save file "
            f"({type(e).__name__}: {e})."
        ) from e


def _to_arrays(state, label):
    if not isinstance(state, dict):
        raise ValueError(
            f"{label}: expected a state dict (name -> tensor), found a "
            f"{type(state).__name__}."
        )
    arrays = collections.OrderedDict()
    for name, value in state.items():
        if not isinstance(value, _Tensor):
            raise ValueError(
                f"{label}: entry {name!r} is a {type(value).__name__}, "
                "not a tensor."
            )
        arrays[str(name)] = value.to_numpy(f"{label}, entry {name!r}")
    return arrays


def _read_zip(path, label):
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith("/data.pkl")]
        if len(pickles) != 1:
            raise ValueError(
                f"{label}: a torch zip file holds one ROOT/data.pkl, found "
                f"{pickles or 'none'}."
            )
        root = pickles[0][: -len("data.pkl")]
        order = "little"
        if root + "byteorder" in names:
            order = archive.read(root + "byteorder").decode().strip()
        storages = {}
        state = _load(io.BytesIO(archive.read(pickles[0])), label, storages)
        endian = "<" if order == "little" else ">"
        for key, storage in storages.items():
            entry = f"{root}data/{key}"
            if entry not in names:
                raise ValueError(f"{label}: storage {entry!r} is missing.")
            dtype = np.dtype(storage.storage_type.dtype).newbyteorder(endian)
            data = archive.read(entry)
            storage.array = np.frombuffer(data, dtype=dtype).astype(
                dtype.newbyteorder("=")
            )
    return state


def _read_legacy(f, label):
    magic = _load(f, label)
    if magic != _LEGACY_MAGIC:
        raise ValueError(
            f"{label} is neither a torch zip file nor a legacy torch.save "
            "stream (wrong magic number)."
        )
    protocol = _load(f, label)
    if protocol != _LEGACY_PROTOCOL:
        raise ValueError(
            f"{label}: legacy torch.save protocol {protocol!r}, expected "
            f"{_LEGACY_PROTOCOL}."
        )
    info = _load(f, label)
    endian = "<" if info.get("little_endian", True) else ">"
    storages = {}
    state = _load(f, label, storages)
    keys = _load(f, label)
    for key in keys:
        key = str(key)
        if key not in storages:
            raise ValueError(f"{label}: unknown storage key {key!r}.")
        storage = storages[key]
        header = f.read(8)
        if len(header) != 8:
            raise ValueError(f"{label} is truncated (storage {key!r}).")
        (numel,) = struct.unpack(endian + "q", header)
        dtype = np.dtype(storage.storage_type.dtype).newbyteorder(endian)
        data = f.read(numel * dtype.itemsize)
        if len(data) != numel * dtype.itemsize:
            raise ValueError(f"{label} is truncated (storage {key!r}).")
        storage.array = np.frombuffer(data, dtype=dtype).astype(
            dtype.newbyteorder("=")
        )
    return state


def read_state_dict(path):
    """`{name: np.ndarray}` from a `torch.save(module.state_dict())` file.

    Both layouts (zip and legacy stream) give identical arrays. Never
    imports torch; never runs pickled code.

    Raises:
        FileNotFoundError: `path` does not exist.
        UnsafePickleError: the pickle names a callable other than the
            tensor-rebuild functions, `OrderedDict` and storage classes.
        ValueError: not a torch.save file, truncated, or not a dict of
            tensors; the message names the file.
    """
    path = os.fspath(path)
    label = f"Torch file {path!r}"
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{label} not found.")
    if zipfile.is_zipfile(path):
        state = _read_zip(path, label)
    else:
        with open(path, "rb") as f:
            state = _read_legacy(f, label)
    return _to_arrays(state, label)
