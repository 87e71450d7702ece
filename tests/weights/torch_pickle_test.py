"""`read_state_dict`: both torch.save layouts, and nothing but tensors."""

import io
import os
import pickle
import zipfile

import numpy as np
import pytest

from keras_elmo.weights.torch_pickle import UnsafePickleError
from keras_elmo.weights.torch_pickle import read_state_dict
from tests import efml_reference as ref


@pytest.mark.parametrize("name", ["token_embedder.pkl", "encoder.pkl"])
@pytest.mark.parametrize("model", ref.MODELS)
def test_zip_and_legacy_layouts_read_to_identical_arrays(model, name):
    a = read_state_dict(os.path.join(ref.folder(model, "zip"), name))
    b = read_state_dict(os.path.join(ref.folder(model, "legacy"), name))
    assert list(a) == list(b) and len(a) >= 13
    for key in a:
        assert a[key].dtype == np.float32
        np.testing.assert_array_equal(a[key], b[key])
    assert zipfile.is_zipfile(os.path.join(ref.folder(model, "zip"), name))
    assert not zipfile.is_zipfile(
        os.path.join(ref.folder(model, "legacy"), name)
    )


def test_shapes_are_torchs():
    te = read_state_dict(os.path.join(ref.folder("word"), "token_embedder.pkl"))
    assert te["convolutions.2.weight"].shape == (8, 4, 3)
    assert te["highways._layers.0.weight"].shape == (32, 16)
    assert te["projection.weight"].shape == (8, 6 + 16)


def _pickle_call(module, name, args):
    """A protocol-2 pickle whose root is `module.name(*args)`."""
    body = pickle.dumps(args, protocol=2)[2:-1]  # the args tuple's opcodes
    return b"\x80\x02c" + f"{module}\n{name}\n".encode() + body + b"R."


def _legacy_file(path, root_pickle):
    with open(path, "wb") as f:
        for value in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}):
            pickle.dump(value, f, protocol=2)
        f.write(root_pickle)
        pickle.dump([], f, protocol=2)


def _zip_file(path, root_pickle):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", root_pickle)
        z.writestr("archive/byteorder", "little")


@pytest.mark.parametrize("write", [_legacy_file, _zip_file])
def test_any_other_callable_is_refused_before_it_runs(write, tmp_path):
    marker = tmp_path / "ran"
    path = str(tmp_path / "evil.pkl")
    write(path, _pickle_call("os", "system", (f"touch {marker}",)))
    with pytest.raises(UnsafePickleError, match=r"`os\.system`"):
        read_state_dict(path)
    assert not marker.exists()
    write(path, _pickle_call("builtins", "eval", ("1+1",)))
    with pytest.raises(UnsafePickleError, match=r"`builtins\.eval`"):
        read_state_dict(path)


def test_a_plain_pickle_of_a_class_is_refused(tmp_path):
    path = str(tmp_path / "model.pkl")
    _legacy_file(path, pickle.dumps(io.BytesIO, protocol=2))
    with pytest.raises(UnsafePickleError, match=r"`_io\.BytesIO`"):
        read_state_dict(path)


def test_not_a_state_dict_and_broken_files_are_clear(tmp_path):
    path = str(tmp_path / "list.pkl")
    _legacy_file(path, pickle.dumps([1, 2], protocol=2))
    with pytest.raises(ValueError, match="expected a state dict"):
        read_state_dict(path)
    with open(path, "wb") as f:
        f.write(b"not a pickle at all")
    with pytest.raises(ValueError, match="not a readable torch.save file"):
        read_state_dict(path)
    with pytest.raises(FileNotFoundError, match="not found"):
        read_state_dict(str(tmp_path / "missing.pkl"))
    legacy = os.path.join(ref.folder("char", "legacy"), "encoder.pkl")
    data = open(legacy, "rb").read()
    with open(path, "wb") as f:
        f.write(data[:-100])
    with pytest.raises(ValueError, match="truncated"):
        read_state_dict(path)


@pytest.mark.parametrize("layout", ["zip", "legacy"])
def test_views_dtypes_and_offsets_equal_torchs_own_values(layout):
    # Written by make_fixtures.py with torch: a transposed view, a slice at
    # a storage offset, float16, int64, a 0-d tensor.
    folder = os.path.join(ref.FOLDER, "torch_layouts")
    arrays = read_state_dict(os.path.join(folder, f"tensors_{layout}.pkl"))
    expected = np.load(os.path.join(folder, "expected.npz"))
    assert sorted(arrays) == sorted(expected.files)
    for key in expected.files:
        assert arrays[key].dtype == expected[key].dtype, key
        np.testing.assert_array_equal(arrays[key], expected[key])
