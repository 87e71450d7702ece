"""The one reader of untrusted HDF5 weight files: the file stays data.

Every weights format read through h5py (bilm-tf / AllenNLP `weights.hdf5`,
NLPL's `model.hdf5`, `softmax.hdf5`, a downloaded file's verification) is
opened by `open_hdf5` and its datasets are read by `read_checked`; the
`model.weights.h5` inside a `.keras` archive is checked by
`check_keras_archive` before Keras opens it.

HDF5 can take a dataset's bytes from somewhere else than the file named. A
weights file never needs that, and an attacker can use it to read any file
on the machine into the weights (which `save_allennlp`, `.keras` or an
export then carry away). So before any dataset is read, `open_hdf5` walks
every link of the file (at most `MAX_LINKS`) and refuses:

- external links (`h5py.ExternalLink`: an object of another HDF5 file) and
  links of a user-defined class;
- soft links whose target is not an object of this file (dangling, or a
  loop of soft links);
- virtual datasets (their data are mapped from other datasets, usually in
  other files);
- external raw storage (`create_dataset(..., external=[...])`: the bytes
  of a contiguous dataset live in other files, any files);
- layouts other than contiguous, chunked or compact;
- filters other than deflate, shuffle, fletcher32 and lzf, or one used
  twice (an unknown filter makes HDF5 load a plugin library; a repeated
  compressor multiplies its expansion ratio).

`check_dataset` then checks a dataset against what the options imply,
from its metadata alone: present, a dataset, the expected shape, numbers
(integers or floats of at most 8 bytes), and that the bytes the file
stores for it can hold it, at most `MAX_EXPANSION` times expanded
(deflate's ratio is below 1,032:1) and no more than the file's size (a
kilobyte file cannot make us allocate gigabytes). Only then does
`read_checked` allocate and read it, and check that it is finite.

Errors name the file, the dataset or link, and what was found.
"""

import dataclasses
import math
import os
import zipfile

import h5py
import numpy as np

# Links walked in one file at most. A bilm-tf file with the largest
# architecture `options_rules` accepts has under 1,000.
MAX_LINKS = 100_000
# Bytes a dataset may claim per byte the file stores for it: deflate's
# expansion is bounded by about 1,032:1, lzf's by far less.
MAX_EXPANSION = 1100
# Parameters a whole weights file may imply per byte it holds: 8 is 32:1
# over float32 (16:1 over float16). Trained weights barely compress
# (about 1.1:1), so only a crafted file of constants comes near it, and
# a file must then be tens of megabytes to build a model of a gigabyte.
MAX_VALUES_PER_FILE_BYTE = 8
# HDF5 filters a weights file may use (ids from H5Zpublic.h and h5py's lzf).
ALLOWED_FILTERS = {
    h5py.h5z.FILTER_DEFLATE: "deflate",
    h5py.h5z.FILTER_SHUFFLE: "shuffle",
    h5py.h5z.FILTER_FLETCHER32: "fletcher32",
    h5py.h5z.FILTER_LZF: "lzf",
}
_LAYOUTS = {
    h5py.h5d.CONTIGUOUS: "contiguous",
    h5py.h5d.CHUNKED: "chunked",
    h5py.h5d.COMPACT: "compact",
}
# The weights member of a `.keras` archive (Keras' `saving_lib`).
KERAS_WEIGHTS_MEMBER = "model.weights.h5"


class UnsafeHDF5Error(ValueError):
    """An HDF5 file would read data from outside itself, or claims more
    than it holds. `path` is the file and `dataset` the dataset or link
    (None for the file as a whole)."""

    def __init__(self, message, path=None, dataset=None):
        super().__init__(message)
        self.path = path
        self.dataset = dataset


@dataclasses.dataclass(frozen=True)
class FileKind:
    """What the error messages call a file format, and their hints."""

    name: str  # "Weights" or "Softmax": starts every message
    layout: str = ""  # after "is not an HDF5 file"
    missing: str = ""  # after "has no dataset ... (expected shape ...)"
    shape_source: str = ""  # where the expected shape comes from
    shape_question: str = ""  # the likely cause of a shape mismatch
    unreadable: str = ""  # after "cannot be opened as HDF5 (...)"


def open_hdf5(path, kind, label=None, mode="r"):
    """`h5py.File(path, mode)`, checked (`check_structure`), with errors
    that say what is wrong.

    The one place a weights file is opened as HDF5: `kind` (a `FileKind`)
    starts every message and `label` names the file (default: the path,
    quoted).

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: it is not HDF5 (no HDF5 signature: an error page, a
            JSON file, random bytes), or h5py cannot open it (truncated).
        UnsafeHDF5Error: (a `ValueError`) it links or maps data from
            outside itself (`check_structure`).
    """
    label = label or repr(os.fspath(path))
    if not os.path.exists(path):
        raise FileNotFoundError(f"{kind.name} file not found: {label}.")
    if not h5py.is_hdf5(path):
        raise ValueError(
            f"{kind.name} file {label} is not an HDF5 file{kind.layout}."
        )
    try:
        f = h5py.File(path, mode)
    except OSError as e:
        raise ValueError(
            f"Cannot read {kind.name.lower()} file {label}, it cannot be "
            f"opened as HDF5 (truncated or corrupt?){kind.unreadable}: {e}"
        ) from e
    try:
        check_structure(f, f"{kind.name} file {label}")
    except (OSError, RuntimeError, KeyError) as e:
        f.close()
        raise ValueError(
            f"Cannot read {kind.name.lower()} file {label}, its links "
            f"cannot be walked (truncated or corrupt?){kind.unreadable}: {e}"
        ) from e
    except BaseException:
        f.close()
        raise
    return f


def check_structure(f, where):
    """Refuses an open `h5py.File` that reads anything from outside
    itself (see the module docstring); `where` starts the messages.
    Reads no dataset."""
    path = f.filename
    soft, seen, count = [], set(), 0
    stack = [("", f.id)]
    while stack:
        prefix, group = stack.pop()
        for raw in group:
            count += 1
            if count > MAX_LINKS:
                raise UnsafeHDF5Error(
                    f"{where} has more than {MAX_LINKS:,} links; a weights "
                    "file has a few hundred at most.",
                    path,
                )
            name = prefix + _decode(raw)
            info = group.links.get_info(raw)
            if info.type == h5py.h5l.TYPE_SOFT:
                soft.append((name, group, raw))
                continue
            if info.type == h5py.h5l.TYPE_EXTERNAL:
                target = group.links.get_val(raw)
                raise UnsafeHDF5Error(
                    f"{where}: {name!r} is an external link to object "
                    f"{_decode(target[1])!r} of file {_decode(target[0])!r}; "
                    "a weights file must hold its own data.",
                    path,
                    name,
                )
            if info.type != h5py.h5l.TYPE_HARD:
                raise UnsafeHDF5Error(
                    f"{where}: {name!r} is a user-defined link (class "
                    f"{info.type}); a weights file has hard links only.",
                    path,
                    name,
                )
            obj = h5py.h5o.open(group, raw)
            if obj in seen:
                continue
            seen.add(obj)
            if isinstance(obj, h5py.h5g.GroupID):
                stack.append((name + "/", obj))
            elif isinstance(obj, h5py.h5d.DatasetID):
                _check_storage(obj, where, path, name)
    for name, group, raw in soft:
        # Every external link is refused above, so resolving stays here.
        target = _decode(group.links.get_val(raw))
        try:
            h5py.h5o.open(group, raw)
        except (KeyError, RuntimeError, OSError, ValueError):
            raise UnsafeHDF5Error(
                f"{where}: {name!r} is a soft link to {target!r}, which is "
                "not an object of this file (dangling or a loop).",
                path,
                name,
            ) from None


def _check_storage(dataset, where, path, name):
    """Refuses a dataset whose bytes are not in the file, or whose
    layout or filters are not a plain file's."""
    dcpl = dataset.get_create_plist()
    layout = dcpl.get_layout()
    if layout == h5py.h5d.VIRTUAL:
        raise UnsafeHDF5Error(
            f"{where}: dataset {name!r} is a virtual dataset (its data "
            "are mapped from other datasets or files); a weights file must "
            "hold its own data.",
            path,
            name,
        )
    if layout not in _LAYOUTS:
        raise UnsafeHDF5Error(
            f"{where}: dataset {name!r} has storage layout {layout}; "
            f"expected one of {', '.join(sorted(_LAYOUTS.values()))}.",
            path,
            name,
        )
    count = dcpl.get_external_count()
    if count:
        files = [_decode(dcpl.get_external(i)[0]) for i in range(count)]
        raise UnsafeHDF5Error(
            f"{where}: dataset {name!r} keeps its data in external "
            f"file(s) {files}; a weights file must hold its own data.",
            path,
            name,
        )
    used = []
    for i in range(dcpl.get_nfilters()):
        code = dcpl.get_filter(i)[0]
        if code not in ALLOWED_FILTERS or code in used:
            again = " twice" if code in used else ""
            raise UnsafeHDF5Error(
                f"{where}: dataset {name!r} uses HDF5 filter {code}{again}; "
                f"expected at most one each of "
                f"{', '.join(ALLOWED_FILTERS.values())}.",
                path,
                name,
            )
        used.append(code)


def _decode(raw):
    if isinstance(raw, bytes):
        return raw.decode("utf-8", "backslashreplace")
    return str(raw)


def check_dataset(f, key, expected, kind, label):
    """Dataset `key` of the open file `f`, checked from its metadata
    before anything is allocated: present, a dataset, of shape
    `expected`, numbers, and stored in at most `MAX_EXPANSION` times fewer
    bytes than it claims (and no more than the file holds). Errors start
    with `kind.name` and name the file (`label`) and the dataset."""
    where = f"{kind.name} file {label}, dataset {key!r}"
    if key not in f or not isinstance(f[key], h5py.Dataset):
        raise ValueError(
            f"{kind.name} file {label} has no dataset {key!r} (expected "
            f"shape {expected}){kind.missing}."
        )
    dataset = f[key]
    if tuple(dataset.shape) != expected:
        raise ValueError(
            f"{where}: expected shape {expected} ({kind.shape_source}), "
            f"found {tuple(dataset.shape)}. {kind.shape_question}".rstrip()
        )
    dtype = dataset.dtype
    if dtype.kind not in "fiu" or dtype.itemsize > 8:
        raise ValueError(
            f"{where}: expected numbers (float32), found dtype {dtype}."
        )
    claimed = math.prod(expected) * dtype.itemsize
    stored = dataset.id.get_storage_size()
    size = os.path.getsize(f.filename)
    if stored > size or claimed > MAX_EXPANSION * stored:
        raise UnsafeHDF5Error(
            f"{where}: claims {claimed:,} bytes of data but stores "
            f"{stored:,} (the file has {size:,}); a weights file stores its "
            f"values (compressed at most {MAX_EXPANSION}:1).",
            f.filename,
            key,
        )
    return dataset


def read_checked(f, key, expected, kind, label):
    """Dataset `key` of the open file `f` as float32, checked
    (`check_dataset`) before it is read, then readable (a truncated file
    often opens but fails here) and finite. Errors start with `kind.name`
    and name the file (`label`) and the dataset."""
    dataset = check_dataset(f, key, expected, kind, label)
    where = f"{kind.name} file {label}, dataset {key!r}"
    try:
        array = np.asarray(dataset[...], dtype=np.float32)
    except (OSError, RuntimeError, ValueError) as e:
        raise ValueError(
            f"{where} cannot be read (is the file truncated or corrupt?): {e}"
        ) from e
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{where} holds non-finite values (NaN or inf).")
    return array


def check_claimed_values(path, values, kind, label=None):
    """Refuses, before a model of `values` parameters is built for it, a
    weights file too small to hold them (`MAX_VALUES_PER_FILE_BYTE`
    values per byte at most): options of a billion parameters next to a
    kilobyte file, or a few hundred kilobytes of compressed zeros. Checks
    the file's structure too (`open_hdf5`)."""
    label = label or repr(os.fspath(path))
    with open_hdf5(path, kind, label):
        pass
    size = os.path.getsize(path)
    if values > MAX_VALUES_PER_FILE_BYTE * size:
        raise UnsafeHDF5Error(
            f"{kind.name} file {label} has {size:,} bytes, too few for the "
            f"{values:,} values the options imply (at most "
            f"{MAX_VALUES_PER_FILE_BYTE} per byte); do the options match "
            "the weights?",
            os.fspath(path),
        )


def check_keras_archive(path):
    """Checks the `model.weights.h5` inside a `.keras` archive the way
    `open_hdf5` checks a weights file, before Keras reads it (Keras
    opens it with h5py, which would follow external storage and links).

    Raises:
        UnsafeHDF5Error: naming the archive, the member and the dataset.
    """
    path = os.fspath(path)
    if not zipfile.is_zipfile(path):
        return  # Keras reports what it is.
    with zipfile.ZipFile(path) as archive:
        if KERAS_WEIGHTS_MEMBER not in archive.namelist():
            return
        with archive.open(KERAS_WEIGHTS_MEMBER) as member:
            try:
                f = h5py.File(member, "r")
            except OSError:
                return  # Not HDF5: Keras reports it.
            with f:
                where = f"Model file {path!r}, member {KERAS_WEIGHTS_MEMBER}"
                check_structure(f, where)
