"""`read_state_dict` holds its bounds on crafted files: views inside their
storage, declared sizes inside the file and the architecture, checked
before anything is allocated.

The files are written here opcode by opcode (no torch): a state dict
`{name: _rebuild_tensor_v2(storage, offset, size, stride, ...)}` whose
storages are persistent ids `("storage", torch.FloatStorage, key, "cpu",
numel)`, in either torch layout.
"""

import pickle
import struct
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

from keras_elmo.weights.torch_pickle import TorchFileBoundsError
from keras_elmo.weights.torch_pickle import read_state_dict

_MAGIC = 0x1950A86A20F9469CFC6C


def _ops(value):
    """The opcodes that push `value` (protocol 2, no PROTO / STOP)."""
    return pickle.dumps(value, protocol=2)[2:-1]


def _state_pickle(tensors, storages):
    """`tensors`: `{name: (key, offset, size, stride)}`; `storages`:
    `{key: numel}` (float32). The legacy layout's 6-field persistent id
    (view metadata None) is read the same as the zip layout's 5 fields."""
    out = b"\x80\x02ccollections\nOrderedDict\n)R"
    for name, (key, offset, size, stride) in tensors.items():
        pid = (
            b"(" + _ops("storage") + b"ctorch\nFloatStorage\n" + _ops(key)
        ) + (_ops("cpu") + _ops(storages[key]) + _ops(None) + b"tQ")
        args = pid + _ops(offset) + _ops(size) + _ops(stride)
        args += _ops(False) + b"ccollections\nOrderedDict\n)R"
        out += _ops(name) + b"ctorch._utils\n_rebuild_tensor_v2\n("
        out += args + b"tRs"
    return out + b"."


def write_legacy(path, tensors, storages, data=None, headers=None):
    """`data`: `{key: float32 values}` (default: `arange(numel)`);
    `headers`: `{key: int64 count written before the data}`."""
    data = data or {}
    headers = headers or {}
    with open(path, "wb") as f:
        for value in (_MAGIC, 1001, {"little_endian": True}):
            f.write(pickle.dumps(value, protocol=2))
        f.write(_state_pickle(tensors, storages))
        f.write(pickle.dumps(list(storages), protocol=2))
        for key, numel in storages.items():
            values = data[key] if key in data else np.arange(numel)
            f.write(struct.pack("<q", headers.get(key, numel)))
            f.write(np.asarray(values, "<f4").tobytes())


def write_zip(path, tensors, storages, data=None, deflate=()):
    """Storage members stored as torch stores them, or deflated for the
    keys in `deflate`."""
    data = data or {}
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", _state_pickle(tensors, storages))
        z.writestr("archive/byteorder", "little")
        for key, numel in storages.items():
            values = data[key] if key in data else np.arange(numel)
            z.writestr(
                f"archive/data/{key}",
                np.asarray(values, "<f4").tobytes(),
                zipfile.ZIP_DEFLATED if key in deflate else zipfile.ZIP_STORED,
            )


WRITERS = {"legacy": write_legacy, "zip": write_zip}


def _refused(path, *patterns, **kwargs):
    """Reads `path` expecting a refusal; returns the error, the peak of
    Python/NumPy allocations (bytes) and the seconds taken."""
    tracemalloc.start()
    start = time.thread_time()
    try:
        with pytest.raises(TorchFileBoundsError) as info:
            read_state_dict(path, **kwargs)
        seconds = time.thread_time() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert repr(path) in message, message
    for pattern in patterns:
        assert pattern in message, (pattern, message)
    return info.value, peak, seconds


@pytest.mark.parametrize("layout", sorted(WRITERS))
def test_the_crafted_files_read_back_when_honest(layout, tmp_path):
    # Control: the helpers write files the reader takes, with views (a
    # transpose, a strided slice at an offset, a size-1 dim of stride 0)
    # rebuilt exactly, so each refusal below is the bound's doing.
    path = str(tmp_path / "ok.pkl")
    tensors = {
        "t": ("0", 0, (3, 2), (1, 3)),
        "s": ("0", 1, (2,), (2,)),
        "one": ("0", 5, (1, 1), (0, 1)),
        "b": ("1", 0, (4,), (1,)),
    }
    WRITERS[layout](path, tensors, {"0": 6, "1": 4})
    arrays = read_state_dict(path, max_elements=10)
    np.testing.assert_array_equal(arrays["t"], [[0, 3], [1, 4], [2, 5]])
    np.testing.assert_array_equal(arrays["s"], [1, 3])
    np.testing.assert_array_equal(arrays["one"], [[5]])
    np.testing.assert_array_equal(arrays["b"], [0, 1, 2, 3])


@pytest.mark.parametrize("layout", sorted(WRITERS))
@pytest.mark.parametrize(
    "view",
    [
        # walks backwards off the buffer: elements 0, -1, ..., -15
        (0, (16,), (-1,)),
        # backwards but inside (3..0): torch writes no negative stride
        (3, (4,), (-1,)),
        (15, (2, 8), (8, -1)),
    ],
    ids=["off-buffer", "inside", "2-d"],
)
def test_a_negative_stride_is_refused(layout, view, tmp_path):
    path = str(tmp_path / "negative.pkl")
    WRITERS[layout](path, {"w": ("0", *view)}, {"0": 16})
    error, _, _ = _refused(path, "'w'", f"stride {view[2]}", "strides >= 0")
    assert (error.path, error.key) == (path, "w")


@pytest.mark.parametrize("layout", sorted(WRITERS))
def test_a_stride_0_view_of_2_31_floats_is_refused_at_once(layout, tmp_path):
    # One stored float, viewed 2**31 times: 8 GiB from a file of bytes.
    path = str(tmp_path / "expanded.pkl")
    WRITERS[layout](path, {"w": ("0", 0, (2**31,), (0,))}, {"0": 1})
    assert (tmp_path / "expanded.pkl").stat().st_size < 20_000
    _, peak, seconds = _refused(path, "'w'", "overlap", f"size {(2**31,)}")
    assert peak < 2**20 and seconds < 2.0, (peak, seconds)


@pytest.mark.parametrize("layout", sorted(WRITERS))
@pytest.mark.parametrize(
    "view, found",
    [
        # rows overlap: 2 x 3 read through 4 elements
        ((0, (2, 3), (1, 1)), "overlap"),
        # the last element read is 16, one past the storage
        ((1, (4, 4), (4, 1)), "reading elements 1 to 16"),
        ((0, (4,), (1, 1)), "one stride per dimension"),
    ],
    ids=["overlap", "past-the-end", "rank"],
)
def test_a_view_reaching_outside_or_over_itself_is_refused(
    layout, view, found, tmp_path
):
    path = str(tmp_path / "view.pkl")
    WRITERS[layout](path, {"w": ("0", *view)}, {"0": 16})
    _refused(path, "'w'", found)


def test_a_legacy_header_of_2_40_elements_is_refused_before_reading(
    tmp_path,
):
    path = str(tmp_path / "header.pkl")
    # The pickle and the header both claim 2**40 floats (4 TiB); 16 are
    # there.
    write_legacy(
        path,
        {"w": ("0", 0, (4,), (1,))},
        {"0": 2**40},
        data={"0": np.zeros(16, "f4")},
    )
    error, peak, seconds = _refused(
        path, f"declare {2**42} bytes", "bytes left in the file"
    )
    assert peak < 2**20 and seconds < 2.0, (peak, seconds)
    # The pickle honest (16), the storage header claiming 2**40.
    write_legacy(
        path,
        {"w": ("0", 0, (4,), (1,))},
        {"0": 16},
        headers={"0": 2**40},
    )
    error, peak, _ = _refused(
        path, "storage '0'", f"declares {2**40} elements; expected 16"
    )
    assert error.key == "0" and peak < 2**20, peak


def test_a_zip_member_inflating_past_the_file_is_refused_before_inflating(
    tmp_path,
):
    # 64 MiB of zeros deflate to ~64 kB; the central directory says 64 MiB.
    path = str(tmp_path / "bomb.pkl")
    numel = 2**24
    write_zip(
        path,
        {"w": ("0", 0, (numel,), (1,))},
        {"0": numel},
        data={"0": np.zeros(numel, "f4")},
        deflate=("0",),
    )
    size = (tmp_path / "bomb.pkl").stat().st_size
    assert size < 2**20
    error, peak, seconds = _refused(
        path,
        "'archive/data/0' declares 67108864 bytes uncompressed",
        f"the zip file's own {size} bytes",
        "not inflated",
    )
    assert peak < 4 * 2**20 and seconds < 2.0, (peak, seconds)
    assert error.key == "archive/data/0"


def test_a_zip_member_larger_than_its_storage_is_refused(tmp_path):
    path = str(tmp_path / "mismatch.pkl")
    write_zip(
        path,
        {"w": ("0", 0, (4,), (1,))},
        {"0": 4},
        data={"0": np.zeros(1024, "f4")},
    )
    _refused(
        path,
        "declares 4096 bytes uncompressed; expected 16",
        "4 float32 elements (16 bytes)",
    )


@pytest.mark.parametrize("layout", sorted(WRITERS))
def test_storages_past_the_architecture_are_refused_before_reading(
    layout, tmp_path
):
    path = str(tmp_path / "big.pkl")
    WRITERS[layout](
        path,
        {"w": ("0", 0, (300,), (1,)), "b": ("1", 0, (8,), (1,))},
        {"0": 300, "1": 8},
    )
    assert len(read_state_dict(path, max_elements=308)["w"]) == 300
    error, _, _ = _refused(
        path,
        "declare 308 elements in all",
        "the largest, '0', 300 float32 elements (1200 bytes)",
        "expected at most 307",
        max_elements=307,
    )
    assert error.key == "0"


@pytest.mark.parametrize("layout", sorted(WRITERS))
@pytest.mark.parametrize(
    "opcode, width", [(b"B", "<I"), (b"\x8e", "<Q")], ids=["BINBYTES", "8"]
)
def test_a_pickled_value_longer_than_the_file_is_refused_unallocated(
    layout, opcode, width, tmp_path
):
    # A bytes value declaring 2 GiB, 5 bytes after it: the unpickler
    # would allocate the 2 GiB before reading.
    root = b"\x80\x02ccollections\nOrderedDict\n)R" + _ops("w")
    root += opcode + struct.pack(width, 2**31) + b"abcs."
    path = str(tmp_path / "long.pkl")
    if layout == "legacy":
        with open(path, "wb") as f:
            for value in (_MAGIC, 1001, {"little_endian": True}, root):
                f.write(value if value is root else pickle.dumps(value, 2))
    else:
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("archive/data.pkl", root)
    error, peak, _ = _refused(
        path, f"declares {2**31} bytes", "at most the 5 bytes left"
    )
    assert peak < 2**20, peak
    assert error.path == path


@pytest.mark.parametrize("layout", sorted(WRITERS))
def test_an_unpickler_value_error_names_the_file(layout, tmp_path):
    # The unpickler's own ValueError (here: protocol 9) named nothing.
    path = str(tmp_path / "protocol.pkl")
    if layout == "legacy":
        (tmp_path / "protocol.pkl").write_bytes(b"\x80\x09N.")
    else:
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("archive/data.pkl", b"\x80\x09N.")
    with pytest.raises(ValueError) as info:
        read_state_dict(path)
    message = str(info.value)
    assert message.startswith(f"Torch file {path!r} is not a readable"), message
    assert "unsupported pickle protocol: 9" in message
