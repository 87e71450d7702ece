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

The file is untrusted, so every size it declares is checked before any
byte is allocated for it (`TorchFileBoundsError`, naming the file, the
storage or entry, what was found and what was expected):

- a storage's bytes: its declared element count times the item size must
  fit in what the file still holds (legacy: the bytes after its int64
  header, which must repeat the count the pickle declared, as torch's own
  reader insists; zip: the member's uncompressed size in the central
  directory, which must equal that product and be no larger than the zip
  file itself, since torch stores members uncompressed); a deflated
  member claiming more is refused before it is inflated;
- a counted value inside a pickle (BINBYTES and the like, which the
  unpickler allocates whole before reading): at most the bytes left in
  the file, found by walking the opcodes with `pickletools.genops`
  (which builds nothing) before unpickling;
- all storages together: at most `max_elements` elements when the caller
  knows the architecture (`elmoformanylangs.read_folder` passes the
  parameter count its config implies);
- a view `(offset, size, stride)`: sizes and offset non-negative,
  `len(size) == len(stride)`, no negative stride (torch writes none), and
  the view non-overlapping: taken in increasing stride, each dimension
  of size > 1 steps at least past everything the smaller ones reach
  (`stride_k >= 1 + sum_{j<k} (size_j - 1) * stride_j`). Hence no stride
  0 on a dimension of size > 1 (an expanded tensor, which a module's
  `state_dict` never holds and which would multiply memory without
  data), and the copy never holds more elements than the storage. The
  lowest element read is `offset` and the highest `offset + sum (size -
  1) * stride`; both must lie in `[0, numel)` of the storage. Dimensions
  of size 0 or 1 never move, so their stride is not otherwise checked.
"""

import collections
import io
import os
import pickle
import pickletools
import struct
import zipfile
import zlib

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


class TorchFileBoundsError(ValueError):
    """A declared size or view reaches outside the file or the model.

    Attributes: `path`, the file; `key`, the storage key or state-dict
    entry concerned (None for the file as a whole).
    """

    def __init__(self, message, path=None, key=None):
        super().__init__(message)
        self.path = path
        self.key = key


class _NamedError(ValueError):
    """A refusal raised while unpickling, its message naming the file
    (anything else the unpickler raises is wrapped to name it)."""


class _StorageType:
    """Stands in for `torch.FloatStorage` etc.: only names a dtype."""

    def __init__(self, name):
        self.name = name
        self.dtype = _STORAGE_DTYPES[name]


class _Storage:
    """A storage's key, dtype and declared element count; its bytes are
    attached after loading."""

    def __init__(self, storage_type, key, numel):
        self.storage_type = storage_type
        self.key = str(key)
        self.numel = numel
        self.array = None

    @property
    def itemsize(self):
        return np.dtype(self.storage_type.dtype).itemsize

    def describe(self):
        return (
            f"{self.numel} {np.dtype(self.storage_type.dtype).name} "
            f"elements ({self.numel * self.itemsize} bytes)"
        )


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


class _Tensor:
    """A rebuilt tensor's recipe: storage, offset, size, stride."""

    def __init__(self, storage, offset, size, stride):
        self.storage = storage
        self.offset = offset
        self.size = size
        self.stride = stride

    def _check_view(self, label, path, name):
        """Proves the view inside its storage and non-overlapping (module
        docstring); returns its element count."""

        def refuse(found, expected):
            raise TorchFileBoundsError(
                f"{label}: the tensor view of storage {self.storage.key!r} "
                f"has {found}; expected {expected}. The file is corrupt or "
                "crafted; it was not loaded.",
                path,
                name,
            )

        size, stride, offset = self.size, self.stride, self.offset
        if not (
            isinstance(size, tuple)
            and isinstance(stride, tuple)
            and all(_is_int(v) for v in size + stride)
        ):
            refuse(
                f"size {size!r:.80} and stride {stride!r:.80}",
                "tuples of integers",
            )
        if len(size) != len(stride):
            refuse(
                f"size {size} and stride {stride}",
                "one stride per dimension",
            )
        if not _is_int(offset) or offset < 0:
            refuse(f"storage offset {offset!r:.40}", "an integer >= 0")
        if any(n < 0 for n in size):
            refuse(f"size {size}", "sizes >= 0")
        if any(s < 0 for s in stride):
            refuse(
                f"stride {stride} (size {size})",
                "strides >= 0 (torch writes no negative stride)",
            )
        if 0 in size:
            return 0
        reach = 1  # elements spanned by the dimensions taken so far
        for s, n in sorted((s, n) for n, s in zip(size, stride) if n > 1):
            if s < reach:
                refuse(
                    f"size {size} and stride {stride}, whose elements "
                    "overlap (a stride 0 or a stride smaller than the "
                    "dimensions inside it reach)",
                    "a non-overlapping view, as a state dict's tensors are",
                )
            reach += (n - 1) * s
        numel = self.storage.numel
        if offset + reach > numel:
            refuse(
                f"offset {offset}, size {size}, stride {stride}, reading "
                f"elements {offset} to {offset + reach - 1}",
                f"elements inside the storage's {numel}",
            )
        return int(np.prod(size, dtype=np.int64))

    def to_numpy(self, label, path=None, name=None):
        array = self.storage.array
        if array is None:
            raise ValueError(
                f"{label}: storage {self.storage.key!r} has no data."
            )
        count = self._check_view(label, path, name)
        if count == 0:
            return np.zeros(self.size, array.dtype)
        itemsize = array.dtype.itemsize
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
    size = tuple(size) if isinstance(size, list) else size
    stride = tuple(stride) if isinstance(stride, list) else stride
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

    def __init__(self, file, label, storages=None, path=None):
        super().__init__(file, encoding="latin1")
        self.label = label
        self.storages = storages
        self.path = path

    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        if module == "torch" and name in _STORAGE_DTYPES:
            if _STORAGE_DTYPES[name] is None:
                raise _NamedError(
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
            raise _NamedError(
                f"{self.label}: storage views (torch < 0.4 files) are not "
                "supported."
            )
        key, numel = str(pid[2]), pid[4]
        if not _is_int(numel) or numel < 0:
            raise TorchFileBoundsError(
                f"{self.label}: storage {key!r} declares {numel!r:.40} "
                "elements; expected an integer >= 0.",
                self.path,
                key,
            )
        storage = self.storages.get(key)
        if storage is None:
            storage = self.storages[key] = _Storage(pid[1], key, numel)
        elif (storage.storage_type.name, storage.numel) != (pid[1].name, numel):
            raise TorchFileBoundsError(
                f"{self.label}: storage {key!r} is declared twice, as "
                f"{storage.numel} torch.{storage.storage_type.name} "
                f"elements and as {numel} torch.{pid[1].name}; expected "
                "one declaration per storage.",
                self.path,
                key,
            )
        return storage


class _Capped:
    """A window on a seekable file that hands `pickletools` no more bytes
    than remain and records a read that asked for more."""

    def __init__(self, f, end):
        self.f, self.end, self.overrun = f, end, None

    def read(self, n=-1):
        left = self.end - self.f.tell()
        if n is None or n < 0:
            n = left
        elif n > left:
            if n > _SMALL_READ:  # a truncated file's last read is not
                self.overrun = (n, left)  # worth a refusal of its own
            n = left
        return self.f.read(n)

    def readline(self):
        return self.f.readline(min(self.end - self.f.tell(), _SMALL_READ))

    def tell(self):
        return self.f.tell()


# Reads up to this size are harmless whatever they declare; also the
# longest text line (GLOBAL's module and name) a pickle may hold.
_SMALL_READ = 1 << 16


def _check_lengths(file, label, path):
    """Walks one pickle's opcodes (`pickletools.genops`, which builds
    nothing) and refuses a counted value (BINBYTES, BINUNICODE8, ...)
    longer than the bytes left, before the unpickler allocates it; then
    rewinds. Other faults are left to the unpickler's own message."""
    start = file.tell()
    end = file.seek(0, io.SEEK_END)
    file.seek(start)
    capped = _Capped(file, end)
    try:
        for _ in pickletools.genops(capped):
            pass
    except Exception:  # not a pickle: the unpickler names the fault
        pass
    file.seek(start)
    if capped.overrun is not None:
        wanted, left = capped.overrun
        raise TorchFileBoundsError(
            f"{label}: a value in its pickle declares {wanted} bytes; "
            f"expected at most the {left} bytes left in the file. It was "
            "not read.",
            path,
        )


def _load(file, label, storages=None, path=None):
    _check_lengths(file, label, path)
    try:
        return _RestrictedUnpickler(file, label, storages, path).load()
    except (UnsafePickleError, TorchFileBoundsError, _NamedError):
        raise
    except Exception as e:  # truncated or not a pickle at all
        raise ValueError(
            f"{label} is not a readable torch.save file "
            f"({type(e).__name__}: {e})."
        ) from e


def _to_arrays(state, label, path):
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
        arrays[str(name)] = value.to_numpy(
            f"{label}, entry {name!r}", path, str(name)
        )
    return arrays


def _check_total(storages, label, path, max_elements):
    """All storages together against the caller's architecture bound."""
    if max_elements is None:
        return
    total = sum(s.numel for s in storages.values())
    if total > max_elements:
        largest = max(storages.values(), key=lambda s: s.numel)
        raise TorchFileBoundsError(
            f"{label}: its storages declare {total} elements in all "
            f"(the largest, {largest.key!r}, {largest.describe()}); "
            f"expected at most {max_elements}, what the model's "
            "architecture holds. The file does not belong to this model "
            "or was crafted; nothing was read.",
            path,
            largest.key,
        )


def _frombuffer(storage, data, endian):
    dtype = np.dtype(storage.storage_type.dtype).newbyteorder(endian)
    return np.frombuffer(data, dtype=dtype).astype(dtype.newbyteorder("="))


# The members of a torch zip other than data.pkl and the storages are a
# few bytes each (`byteorder`, `version`, ...).
_SMALL_MEMBER = 1024


def _read_zip(path, label, max_elements):
    file_size = os.path.getsize(path)
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        infos = {info.filename: info for info in archive.infolist()}

        def member_size(name, limit, expected):
            size = infos[name].file_size
            if size > limit:
                raise TorchFileBoundsError(
                    f"{label}: zip member {name!r} declares "
                    f"{size} bytes uncompressed; expected {expected}. It "
                    "was not inflated.",
                    path,
                    name,
                )

        pickles = [n for n in names if n.endswith("/data.pkl")]
        if len(pickles) != 1:
            raise ValueError(
                f"{label}: a torch zip file holds one ROOT/data.pkl, found "
                f"{pickles or 'none'}."
            )
        root = pickles[0][: -len("data.pkl")]
        order = "little"
        if root + "byteorder" in names:
            member_size(
                root + "byteorder", _SMALL_MEMBER, f"<= {_SMALL_MEMBER}"
            )
            order = archive.read(root + "byteorder").decode("latin1")
            order = order.strip()
            if order not in ("little", "big"):
                raise ValueError(
                    f"{label}: its byteorder member holds {order!r:.40}; "
                    "expected 'little' or 'big'."
                )
        member_size(
            pickles[0],
            file_size,
            f"at most the zip file's own {file_size} bytes (torch stores "
            "its members uncompressed)",
        )
        storages = {}
        state = _load(
            io.BytesIO(archive.read(pickles[0])), label, storages, path
        )
        _check_total(storages, label, path, max_elements)
        endian = "<" if order == "little" else ">"
        for key, storage in storages.items():
            entry = f"{root}data/{key}"
            if entry not in infos:
                raise ValueError(f"{label}: storage {entry!r} is missing.")
            nbytes = storage.numel * storage.itemsize
            if infos[entry].file_size != nbytes:
                raise TorchFileBoundsError(
                    f"{label}: zip member {entry!r} declares "
                    f"{infos[entry].file_size} bytes uncompressed; "
                    f"expected {nbytes}, the storage's "
                    f"{storage.describe()} that data.pkl declares. It was "
                    "not inflated.",
                    path,
                    key,
                )
            member_size(
                entry,
                file_size,
                f"at most the zip file's own {file_size} bytes (torch "
                "stores its members uncompressed)",
            )
        for key, storage in storages.items():
            data = archive.read(f"{root}data/{key}")
            storage.array = _frombuffer(storage, data, endian)
    return state


def _read_legacy(f, label, path, max_elements):
    file_size = os.fstat(f.fileno()).st_size
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
    if not isinstance(info, dict):
        raise ValueError(
            f"{label}: expected the legacy system-info dict, found a "
            f"{type(info).__name__}."
        )
    endian = "<" if info.get("little_endian", True) else ">"
    storages = {}
    state = _load(f, label, storages, path)
    keys = _load(f, label)
    if not isinstance(keys, list):
        raise ValueError(
            f"{label}: expected the legacy list of storage keys, found a "
            f"{type(keys).__name__}."
        )
    _check_total(storages, label, path, max_elements)
    declared = sum(s.numel * s.itemsize for s in storages.values())
    remaining = file_size - f.tell()
    if declared > remaining:
        raise TorchFileBoundsError(
            f"{label} is truncated or crafted: its storages declare "
            f"{declared} bytes in all; expected at most the {remaining} "
            "bytes left in the file. Nothing was read.",
            path,
        )
    for key in keys:
        key = str(key)
        if key not in storages:
            raise ValueError(f"{label}: unknown storage key {key!r}.")
        storage = storages[key]
        header = f.read(8)
        if len(header) != 8:
            raise ValueError(f"{label} is truncated (storage {key!r}).")
        (numel,) = struct.unpack(endian + "q", header)
        remaining = file_size - f.tell()
        if numel != storage.numel:
            raise TorchFileBoundsError(
                f"{label}: the data of storage {key!r} declares {numel} "
                f"elements; expected {storage.numel}, the count its pickle "
                "declared (torch refuses the mismatch too).",
                path,
                key,
            )
        nbytes = numel * storage.itemsize
        if nbytes > remaining:
            raise TorchFileBoundsError(
                f"{label} is truncated (storage {key!r}): it declares "
                f"{storage.describe()}; only {remaining} bytes remain.",
                path,
                key,
            )
        data = f.read(nbytes)
        if len(data) != nbytes:
            raise ValueError(f"{label} is truncated (storage {key!r}).")
        storage.array = _frombuffer(storage, data, endian)
    return state


def read_state_dict(path, max_elements=None):
    """`{name: np.ndarray}` from a `torch.save(module.state_dict())` file.

    Both layouts (zip and legacy stream) give identical arrays. Never
    imports torch; never runs pickled code; allocates nothing that the
    file's size (and `max_elements`) does not bound.

    Args:
        path: the file.
        max_elements: None, or the most elements all the file's storages
            may hold together (what the caller's architecture needs, with
            any slack it chooses); checked before any storage is read.

    Raises:
        FileNotFoundError: `path` does not exist.
        UnsafePickleError: the pickle names a callable other than the
            tensor-rebuild functions, `OrderedDict` and storage classes.
        TorchFileBoundsError: a declared size or a tensor view reaches
            outside the file, its storage or `max_elements`.
        ValueError: not a torch.save file, truncated, or not a dict of
            tensors; the message names the file.
    """
    path = os.fspath(path)
    label = f"Torch file {path!r}"
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{label} not found.")
    if zipfile.is_zipfile(path):
        try:
            state = _read_zip(path, label, max_elements)
        except (zipfile.BadZipFile, zlib.error, EOFError) as e:
            raise ValueError(
                f"{label} is a damaged zip file ({type(e).__name__}: {e})."
            ) from e
    else:
        with open(path, "rb") as f:
            state = _read_legacy(f, label, path, max_elements)
    return _to_arrays(state, label, path)
