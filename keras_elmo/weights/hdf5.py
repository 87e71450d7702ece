"""The weights HDF5 files: the one checked reader, the port table, the biLM
and softmax layouts.

**Reading untrusted files.** Every weights format read through h5py
(bilm-tf / AllenNLP `weights.hdf5`, NLPL's `model.hdf5`, `softmax.hdf5`, a
downloaded file's verification) is opened by `open_hdf5` and its datasets
are read by `read_checked`; the `model.weights.h5` inside a `.keras`
archive is checked by `check_keras_archive` before Keras opens it.

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
`read_checked` allocate and read it, and check that it is finite. Errors
name the file, the dataset or link, and what was found.

**One declarative table.** A weight file format is a list of
`port_weight(...)` entries, as keras-hub ports checkpoints
(`loader.port_weight(keras_variable=..., hf_weight_key=..., hook_fn=...)`):
each names an HDF5 dataset and the Keras variable (or one direction of a
stacked `[2, ...]` variable) that holds it. `leading_axis`: the file has
an extra leading axis of size 1 (bilm-tf's conv kernels
`[1, width, dim, n]`); several entries with the same `hdf5_key` are
stacked along the dataset's first axis in table order (bilm-tf's LSTM
`W_0` is the input kernel's rows, then the recurrent kernel's).
`read_ports` assigns nothing before every dataset passes; `write_ports`
writes the table atomically.

**The biLM (`weight_table`, bilm-tf `dump_weights`).** `char_embed` has
no padding row (ours is implicit: `CharCNNEmbedding` keeps the 261 real
rows); `CNN/W_cnn_{i}` is `[1, width, dim, n]`; `RNN_{d}/.../Cell{l}/
LSTMCell/W_0` is `[P + P, 4H]`, the input rows then the recurrent rows,
kept as two kernels. Gate order i, j, f, o and the stored bias (without
the forget bias 1.0, which our layer adds at run time as TensorFlow's
`LSTMCell` does) are the same on both sides, so the round trip is
bit-exact; the highway keeps bilm-tf's carry convention. A model with a
Unicode character lexicon (converted from ELMoForManyLangs) writes
`char_embed` with its own rows and adds `word_embed` for a word branch
(docs/ELMOFORMANYLANGS.md). `expected_weight_shapes` gives every shape
from the options alone (with `F = sum(num_filters)`, `d` the character
dim, `P` the projection and `H` the cell size):

    char_embed                                   [261, d]
    CNN/W_cnn_{i}  [1, w_i, d, n_i]              CNN/b_cnn_{i}  [n_i]
    CNN_high_{k}/W_carry, W_transform [F, F]     b_carry, b_transform [F]
    CNN_proj/W_proj [F, P]                       CNN_proj/b_proj [P]
    RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/
        W_0 [2P, 4H]     B [4H]     W_P_0 [H, P]

so a downloaded file is checked without building the model.

**The softmax (`softmax_table`).** `softmax/W` `[V, P]` and `softmax/b`
`[V]`: the weights of `keras_elmo.layers.LMSoftmax`, shared by both
directions, kept in `softmax.hdf5` next to the biLM's `weights.hdf5`
(which, as in bilm-tf's `dump_weights`, has no softmax). `model_paths`
names a trained model folder's files.
"""

import dataclasses
import logging
import math
import os
import zipfile

import h5py
import numpy as np

from keras_elmo.config import options
from keras_elmo.text import char_vocab
from keras_elmo.utils.atomic import atomic_path
from keras_elmo.utils.atomic import ensure_room

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


logger = logging.getLogger(__name__)

LSTM_CELL = "RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell"
# The word embedding of a model with a word branch (not in bilm-tf files);
# `CNN_proj/W_proj` then has the word rows first: `[word; char-CNN]`.
WORD_EMBED = "word_embed"

WEIGHTS_FILE = FileKind(
    name="Weights",
    layout=" (expected the bilm-tf / AllenNLP `weights.hdf5` layout)",
    missing="; is it an ELMo weights file for these options?",
    shape_source="from the options",
    shape_question="Do the options match the weights?",
)

_HIGHWAY = (
    ("W_carry", "carry_kernel"),
    ("b_carry", "carry_bias"),
    ("W_transform", "transform_kernel"),
    ("b_transform", "transform_bias"),
)


def weight_table(bilm):
    """`[WeightPort]`: every weight of `bilm` and its bilm-tf dataset."""
    cnn = bilm.char_cnn
    table = [port_weight(cnn.char_embeddings, "char_embed")]
    for i, (kernel, bias) in enumerate(zip(cnn.kernels, cnn.biases)):
        table.append(port_weight(kernel, f"CNN/W_cnn_{i}", leading_axis=True))
        table.append(port_weight(bias, f"CNN/b_cnn_{i}"))
    for k, block in enumerate(bilm.highway.blocks):
        for name, key in _HIGHWAY:
            table.append(port_weight(block[key], f"CNN_high_{k}/{name}"))
    if getattr(bilm, "word_embedding", None) is not None:
        # Our extension (an ELMoForManyLangs word branch): [V, w].
        table.append(port_weight(bilm.word_embedding.embeddings, WORD_EMBED))
    dense = bilm.token_projection
    table.append(port_weight(dense.kernel, "CNN_proj/W_proj"))
    table.append(port_weight(dense.bias, "CNN_proj/b_proj"))
    lstm = bilm.bilstm
    for d in range(2):
        for layer in range(bilm.config.num_layers):
            cell = LSTM_CELL.format(d=d, l=layer)
            # W_0: the input kernel's rows, then the recurrent kernel's.
            for kernel in (lstm.kernels, lstm.recurrent_kernels):
                table.append(port_weight(kernel[layer], f"{cell}/W_0", d))
            table.append(port_weight(lstm.biases[layer], f"{cell}/B", d))
            table.append(
                port_weight(lstm.projection_kernels[layer], f"{cell}/W_P_0", d)
            )
    return table


def check_weights_fit(path, config):
    """Checks, before a `BiLM` is built for `config`, that the weights
    file at `path` is safe to open (`hdf5_reader.open_hdf5`) and large
    enough for the parameters `config` implies (`hdf5_reader.
    check_claimed_values`), so tiny files next to huge options allocate
    nothing. Raises a `ValueError` naming the file."""
    fields = {
        f.name: getattr(config, f.name) for f in dataclasses.fields(config)
    }
    count = options.parameter_count(fields)
    check_claimed_values(path, count, WEIGHTS_FILE)


def load_bilm_hdf5(bilm, path):
    """Loads a bilm-tf / AllenNLP weights HDF5 into a built `BiLM`.

    Every dataset's shape is checked against the model built from the
    options file; a missing dataset or a wrong shape raises a `ValueError`
    naming the file, the dataset, and the expected and found shapes, and
    nothing is assigned until every dataset has been read and checked.
    """
    count = read_ports(path, weight_table(bilm), WEIGHTS_FILE)
    logger.info("Loaded %d datasets from %s", count, path)


def save_bilm_hdf5(bilm, path, dtype="float32"):
    """Writes a `BiLM`'s weights in the bilm-tf / AllenNLP HDF5 layout.

    Datasets with exactly the names AllenNLP's loader reads, float32 by
    default (`dtype="float16"` halves the file for shipping; loading casts
    back to float32); written to a temporary file and renamed, so `path` is
    never half-written.
    """
    write_ports(path, weight_table(bilm), dtype)
    logger.info("Wrote ELMo weights to %s", path)


def expected_weight_shapes(config):
    """`{dataset name: shape}` for a `BiLMConfig`, in file order."""
    d = config.char_embedding_dim
    width = config.num_filters
    proj, units = config.projection_dim, config.lstm_units
    shapes = {"char_embed": (char_vocab.NUM_CHARACTERS - 1, d)}
    for i, (w, n) in enumerate(config.filters):
        shapes[f"CNN/W_cnn_{i}"] = (1, w, d, n)
        shapes[f"CNN/b_cnn_{i}"] = (n,)
    for k in range(config.num_highway_layers):
        for kind in ("carry", "transform"):
            shapes[f"CNN_high_{k}/W_{kind}"] = (width, width)
            shapes[f"CNN_high_{k}/b_{kind}"] = (width,)
    shapes["CNN_proj/W_proj"] = (width, proj)
    shapes["CNN_proj/b_proj"] = (proj,)
    for direction in range(2):
        for layer in range(config.num_layers):
            cell = LSTM_CELL.format(d=direction, l=layer)
            shapes[f"{cell}/W_0"] = (2 * proj, 4 * units)
            shapes[f"{cell}/B"] = (4 * units,)
            shapes[f"{cell}/W_P_0"] = (units, proj)
    return shapes


# Errors for a downloaded file: an error page saved in its place is likely.
DOWNLOADED_WEIGHTS = FileKind(
    name="Weights",
    layout=" (truncated, corrupt, or an error page saved in its place)",
    shape_source="from the options",
)


def verify_weights_file(path, config, label=None):
    """Checks that `path` is a complete weights HDF5 for `config`.

    Opens the file, and for every dataset the options imply checks that it
    exists, has the expected shape, reads fully (a truncated file often
    opens but fails here) and holds finite numbers.

    Raises:
        ValueError: naming the file (`label`, default the path), the
            dataset and the problem.
    """
    label = label or repr(os.fspath(path))
    with open_hdf5(path, DOWNLOADED_WEIGHTS, label) as f:
        for name, shape in expected_weight_shapes(config).items():
            read_checked(f, name, shape, DOWNLOADED_WEIGHTS, label)


SOFTMAX_FILE = FileKind(
    name="Softmax",
    shape_source="vocabulary x projection",
    shape_question="Was it trained with the same vocabulary?",
)


def softmax_table(softmax):
    """`[WeightPort]` of an `LMSoftmax`."""
    return [
        port_weight(softmax.embeddings, "softmax/W"),
        port_weight(softmax.bias, "softmax/b"),
    ]


def save_softmax_hdf5(softmax, path):
    """Writes `softmax/W` and `softmax/b` atomically (temp + rename)."""
    write_ports(path, softmax_table(softmax))


def load_softmax_hdf5(softmax, path):
    """Loads `softmax/W` and `softmax/b`, checking shapes and values.

    Raises a `ValueError` naming the file, the dataset and what was wrong
    (missing, not a dataset, wrong shape or dtype, unreadable, non-finite)
    before anything is assigned.
    """
    read_ports(path, softmax_table(softmax), SOFTMAX_FILE)


OPTIONS = "options.json"
WEIGHTS = "weights.hdf5"
SOFTMAX = "softmax.hdf5"
VOCABULARY = "vocab.txt"
KERAS = "bilm.keras"


def model_paths(model_dir):
    """`{name: path}` of the files in a trained model directory."""
    names = {
        "options": OPTIONS,
        "weights": WEIGHTS,
        "softmax": SOFTMAX,
        "vocabulary": VOCABULARY,
        "keras": KERAS,
    }
    return {key: os.path.join(model_dir, name) for key, name in names.items()}
