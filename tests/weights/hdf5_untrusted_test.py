"""Untrusted weights HDF5 stays data: nothing is read from outside the file
named, and nothing is allocated that the file cannot hold.

Each crafted file is the `tiny` reference weights with one dataset
replaced by what an attacker would put there; the "secret" is a file
elsewhere on the machine whose bytes read as finite float32 values (so
only the structural check can stop it)."""

import dataclasses
import os
import shutil
import time
import zipfile

import h5py
import numpy as np
import pytest

import keras_elmo
from keras_elmo.weights import hdf5 as bilm_hdf5
from keras_elmo.weights import hdf5 as hdf5_reader
from keras_elmo.weights import hdf5 as hdf5_shapes
from keras_elmo.weights import hdf5 as softmax_hdf5

BIAS = "CNN_proj/b_proj"  # tiny: 16 float32, 64 bytes
SECRET = b"AAAABBBBCCCCDDDD" * 4  # 64 bytes: 16 finite float32 values


@pytest.fixture
def tiny(reference_weights, tmp_path):
    """`(options, copy)`: the tiny options and a fresh copy of its weights."""
    options, weights = reference_weights("tiny")
    copy = tmp_path / "model" / "weights.hdf5"
    copy.parent.mkdir()
    shutil.copy(weights, copy)
    return options, str(copy)


@pytest.fixture
def secret(tmp_path):
    path = tmp_path / "secret" / "id_rsa"
    path.parent.mkdir()
    path.write_bytes(SECRET)
    return str(path)


def replace(path, key, make):
    """Deletes dataset `key` of `path` and lets `make(f, key)` put
    something else in its place."""
    with h5py.File(path, "a") as f:
        del f[key]
        make(f, key)


def refused(options, weights, *named):
    with pytest.raises(ValueError) as info:
        keras_elmo.BiLM.from_allennlp(options, weights)
    message = str(info.value)
    for part in (weights,) + named:
        assert part in message, (part, message)
    assert "AAAABBBB" not in message
    return info.value


def test_external_raw_storage_is_refused_before_reading(tiny, secret):
    options, weights = tiny
    replace(
        weights,
        BIAS,
        lambda f, k: f.create_dataset(
            k, shape=(16,), dtype="<f4", external=[(secret, 0, len(SECRET))]
        ),
    )
    error = refused(options, weights, BIAS, "external file", secret)
    assert isinstance(error, hdf5_reader.UnsafeHDF5Error)
    assert (error.path, error.dataset) == (weights, BIAS)


def test_external_raw_storage_refused_by_every_reader(tiny, secret, tmp_path):
    options, weights = tiny
    external = [(secret, 0, len(SECRET))]
    replace(
        weights,
        BIAS,
        lambda f, k: f.create_dataset(k, (16,), "<f4", external=external),
    )
    config = keras_elmo.BiLMConfig.from_options_json(options)
    # A downloaded file's verification reads through the same reader.
    with pytest.raises(hdf5_reader.UnsafeHDF5Error, match="external file"):
        hdf5_shapes.verify_weights_file(weights, config)
    # So does the softmax of a trained model: [V=4, P=16] = 256 bytes.
    softmax = keras_elmo.layers.LMSoftmax(4)
    softmax.build((None, 16))
    before = softmax.embeddings.numpy().copy()
    path = tmp_path / "softmax.hdf5"
    with h5py.File(path, "w") as f:
        f.create_dataset("softmax/W", (4, 16), "<f4", external=external * 4)
        f.create_dataset("softmax/b", data=np.zeros(4, "f4"))
    with pytest.raises(hdf5_reader.UnsafeHDF5Error, match="'softmax/W'"):
        softmax_hdf5.load_softmax_hdf5(softmax, str(path))
    np.testing.assert_array_equal(before, softmax.embeddings.numpy())


def _other_file(tmp_path, data):
    path = tmp_path / "secret" / "other.hdf5"
    path.parent.mkdir(exist_ok=True)
    with h5py.File(path, "w") as g:
        g.create_dataset("x", data=data)
    return str(path)


def test_external_link_is_refused(tiny, tmp_path):
    options, weights = tiny
    other = _other_file(tmp_path, np.full(16, 7.0, "f4"))
    replace(
        weights,
        BIAS,
        lambda f, k: f.__setitem__(k, h5py.ExternalLink(other, "x")),
    )
    error = refused(options, weights, BIAS, "external link", other)
    assert error.dataset == BIAS


def test_external_link_anywhere_in_the_file_is_refused(tiny, tmp_path):
    # Not one of the datasets read: the file as a whole is refused.
    options, weights = tiny
    other = _other_file(tmp_path, np.zeros(3, "f4"))
    with h5py.File(weights, "a") as f:
        f["unused/link"] = h5py.ExternalLink(other, "x")
    refused(options, weights, "'unused/link'", "external link")


def test_dangling_soft_link_is_refused(tiny):
    options, weights = tiny
    replace(
        weights,
        BIAS,
        lambda f, k: f.__setitem__(k, h5py.SoftLink("/etc/passwd")),
    )
    refused(options, weights, BIAS, "soft link", "/etc/passwd")


def test_soft_link_loop_is_refused(tiny):
    options, weights = tiny
    with h5py.File(weights, "a") as f:
        f["a"] = h5py.SoftLink("/b")
        f["b"] = h5py.SoftLink("/a")
    refused(options, weights, "soft link", "dangling or a loop")


def test_soft_link_inside_the_file_still_loads(tiny, reference_weights):
    options, weights = tiny
    with h5py.File(weights, "a") as f:
        f["kept/bias"] = f[BIAS][()]
        del f[BIAS]
        f[BIAS] = h5py.SoftLink("/kept/bias")
        f["CNN/again"] = f["CNN"]  # a hard-link cycle: walked once
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    expected = keras_elmo.BiLM.from_allennlp(*reference_weights("tiny"))
    for a, b in zip(bilm.weights, expected.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_virtual_dataset_is_refused(tiny, tmp_path):
    options, weights = tiny
    other = _other_file(tmp_path, np.full(16, 7.0, "f4"))

    def virtual(f, key):
        layout = h5py.VirtualLayout(shape=(16,), dtype="f4")
        layout[:] = h5py.VirtualSource(other, "x", shape=(16,))
        f.create_virtual_dataset(key, layout)

    replace(weights, BIAS, virtual)
    error = refused(options, weights, BIAS, "virtual dataset")
    assert isinstance(error, hdf5_reader.UnsafeHDF5Error)


def test_unknown_filter_is_refused(tiny):
    # scaleoffset (id 6): not a filter a weights file uses.
    options, weights = tiny
    replace(
        weights,
        BIAS,
        lambda f, k: f.create_dataset(
            k, data=np.zeros(16, "f4"), chunks=(16,), scaleoffset=4
        ),
    )
    refused(options, weights, BIAS, "filter 6")


def test_compressed_weights_still_load(tiny, reference_weights):
    options, weights = tiny
    with h5py.File(weights, "a") as f:
        data = f[BIAS][()]
        del f[BIAS]
        f.create_dataset(
            BIAS, data=data, chunks=(8,), compression="gzip", shuffle=True
        )
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    np.testing.assert_array_equal(bilm.token_projection.bias.numpy(), data)


def test_dataset_without_stored_data_is_refused(tiny):
    # The right shape, no bytes: HDF5 would hand back fill values.
    options, weights = tiny
    replace(weights, BIAS, lambda f, k: f.create_dataset(k, (16,), "f4"))
    refused(options, weights, BIAS, "claims 64 bytes", "stores 0")


def test_huge_claimed_shape_is_refused_before_allocation(tiny):
    options, weights = tiny
    claimed = (16, 1 << 40)  # 64 TiB of float32 in a few kB
    replace(
        weights,
        BIAS,
        lambda f, k: f.create_dataset(k, claimed, "f4", chunks=(1, 1024)),
    )
    start = time.thread_time()
    refused(options, weights, BIAS, "expected shape (16,)", str(claimed))
    assert time.thread_time() - start < 5


@pytest.mark.parametrize(
    "dtype, found",
    [(h5py.string_dtype(), "object"), (np.longdouble, "float128")],
)
def test_dtype_that_is_not_a_plain_number_is_refused(tiny, dtype, found):
    options, weights = tiny
    assert np.dtype(dtype).itemsize > 8 or found == "object"
    data = ["x"] * 16 if found == "object" else np.zeros(16, dtype)
    replace(
        weights, BIAS, lambda f, k: f.create_dataset(k, data=data, dtype=dtype)
    )
    refused(options, weights, BIAS, "expected numbers", found)


def test_tiny_weights_file_for_huge_options_is_refused_before_building(
    tiny, tmp_path, monkeypatch
):
    # 151 MB of parameters claimed next to a file of a few kB: tiny's
    # char table, CNN, highway and projection, and LSTMs of H=4096, P=256.
    count = 262 * 4 + 300 + 2 * 2 * (28 * 28 + 28) + (28 * 256 + 256)
    count += 2 * 2 * (2 * 256 * 4 * 4096 + 4 * 4096 + 4096 * 256)
    options, _ = tiny
    config = keras_elmo.BiLMConfig.from_options_json(options)
    big = dataclasses.replace(config, lstm_units=4096, projection_dim=256)
    big_options = tmp_path / "big_options.json"
    big.to_options_json(str(big_options))
    weights = str(tmp_path / "small.hdf5")
    with h5py.File(weights, "w") as f:
        f.create_dataset("char_embed", data=np.zeros((261, 4), "f4"))
    assert os.path.getsize(weights) * hdf5_reader.MAX_EXPANSION < count

    def never(self, *args, **kwargs):
        raise AssertionError("a BiLM was built for a file that cannot hold it")

    monkeypatch.setattr(keras_elmo.BiLM, "__init__", never)
    start = time.thread_time()
    error = refused(str(big_options), weights, "too few", f"{count:,} values")
    assert time.thread_time() - start < 5
    assert isinstance(error, hdf5_reader.UnsafeHDF5Error)


def test_keras_archive_with_external_storage_is_refused(tmp_path, secret):
    bad = _keras_file_with_external_bias(tmp_path, secret)
    with pytest.raises(hdf5_reader.UnsafeHDF5Error) as info:
        keras_elmo.BiLM.from_preset(str(bad))
    message = str(info.value)
    assert str(bad) in message and "external file" in message
    assert secret in message and "AAAABBBB" not in message


def test_convert_from_keras_refuses_external_storage(tmp_path, secret, capsys):
    from keras_elmo.cli.main import main

    bad = _keras_file_with_external_bias(tmp_path, secret)
    out = tmp_path / "out"
    assert main(["convert", "--from-keras", str(bad), "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert str(bad) in err and "external file" in err, err
    assert "AAAABBBB" not in err
    assert not out.exists()


def _keras_file_with_external_bias(tmp_path, secret):
    """A `.keras` file of a tiny BiLM whose weights member keeps a bias in
    `secret`."""
    bilm = keras_elmo.BiLM(keras_elmo.BiLMConfig.from_architecture("tiny"))
    bilm(keras_elmo.batch_to_ids([["a"]]))
    good = tmp_path / "good.keras"
    bilm.save(good)
    bad = tmp_path / "bad.keras"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == hdf5_reader.KERAS_WEIGHTS_MEMBER:
                data = _with_external_bias(tmp_path, data, secret)
            dst.writestr(item, data)
    return bad


def _with_external_bias(tmp_path, data, secret):
    """The `.keras` weights member with its first 16-float dataset stored
    in `secret`."""
    path = tmp_path / "member.h5"
    path.write_bytes(data)
    with h5py.File(path, "a") as f:
        found = []
        f.visititems(
            lambda n, o: (
                found.append(n)
                if isinstance(o, h5py.Dataset) and o.shape == (16,)
                else None
            )
        )
        del f[found[0]]
        f.create_dataset(
            found[0], (16,), "<f4", external=[(secret, 0, len(SECRET))]
        )
    return path.read_bytes()


def test_good_files_pass_the_structure_check(tiny):
    _, weights = tiny
    with h5py.File(weights, "r") as f:
        hdf5_reader.check_structure(f, "Weights file")


def test_compressed_constants_cannot_stand_for_a_large_model(tmp_path):
    """About a hundred kilobytes of deflated zeros hold 16M values (64 MB
    as float32): under the per-dataset 1,100:1 bound, but a weights file
    must hold a byte per 8 values the options imply, so it is refused
    before any model is built."""
    path = tmp_path / "zeros.hdf5"
    with h5py.File(path, "w") as f:
        big = f.create_dataset(
            "big", (4096, 4096), "<f4", compression="gzip", chunks=(256, 4096)
        )
        for row in range(0, 4096, 256):
            big[row : row + 256] = np.zeros((256, 4096), "<f4")
    size = os.path.getsize(path)
    values = 4096 * 4096
    assert values <= hdf5_reader.MAX_EXPANSION * size  # the old bound passed
    with pytest.raises(hdf5_reader.UnsafeHDF5Error) as info:
        hdf5_reader.check_claimed_values(path, values, bilm_hdf5.WEIGHTS_FILE)
    message = str(info.value)
    assert f"has {size:,} bytes, too few for the {values:,} values" in message
    assert str(path) in message
