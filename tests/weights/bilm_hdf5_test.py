"""The AllenNLP / bilm-tf HDF5 layout: exact round trip and clear errors."""

import json
import os

import h5py
import numpy as np
import pytest

import keras_elmo
from tests.fixtures.weights_digest import weights_digest


def hdf5_datasets(path):
    """`{name: array}` of every dataset in an HDF5 file."""
    with h5py.File(path, "r") as f:
        out = {}
        f.visititems(
            lambda name, obj: (
                out.__setitem__(name, obj[()])
                if isinstance(obj, h5py.Dataset)
                else None
            )
        )
    return out


def test_round_trip_is_bit_exact(reference_weights, tmp_path):
    options, weights = reference_weights("tiny")
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    out_options = tmp_path / "o.json"
    out_weights = tmp_path / "w.hdf5"
    bilm.save_allennlp(out_options, out_weights)
    original, written = hdf5_datasets(weights), hdf5_datasets(out_weights)
    assert sorted(original) == sorted(written)
    for name in original:
        assert written[name].dtype == np.float32, name
        assert original[name].tobytes() == written[name].tobytes(), name
    assert weights_digest(out_weights) == weights_digest(weights)
    assert json.load(open(out_options)) == json.load(open(options))
    # And back again: the reloaded model computes the same thing.
    again = keras_elmo.BiLM.from_allennlp(out_options, out_weights)
    ids = keras_elmo.batch_to_ids([["A", "round", "trip", "."]])
    np.testing.assert_array_equal(
        bilm(ids)["lstm_outputs2"], again(ids)["lstm_outputs2"]
    )


def test_forget_bias_is_added_at_run_time_not_stored(reference_weights):
    options, weights = reference_weights("tiny")
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    with h5py.File(weights, "r") as f:
        stored = f["RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/B"][()]
    np.testing.assert_array_equal(bilm.bilstm.biases[0].numpy()[1], stored)
    assert bilm.bilstm.forget_bias == 1.0


def _copy_without(src, dst, skip=None, reshape=None):
    with h5py.File(src, "r") as f, h5py.File(dst, "w") as g:

        def visit(name, obj):
            if not isinstance(obj, h5py.Dataset) or name == skip:
                return
            data = obj[()]
            if name == reshape:
                data = data[..., :-1]
            g.create_dataset(name, data=data)

        f.visititems(visit)


def test_missing_dataset_is_named(reference_weights, tmp_path):
    options, weights = reference_weights("tiny")
    broken = tmp_path / "broken.hdf5"
    _copy_without(weights, broken, skip="CNN_high_1/W_carry")
    with pytest.raises(ValueError, match=r"no dataset 'CNN_high_1/W_carry'"):
        keras_elmo.BiLM.from_allennlp(options, broken)


def test_wrong_shape_names_dataset_expected_and_found(
    reference_weights, tmp_path
):
    options, weights = reference_weights("tiny")
    broken = tmp_path / "broken.hdf5"
    name = "RNN_0/RNN/MultiRNNCell/Cell1/LSTMCell/W_P_0"
    _copy_without(weights, broken, reshape=name)
    with pytest.raises(ValueError) as error:
        keras_elmo.BiLM.from_allennlp(options, broken)
    message = str(error.value)
    assert name in message
    assert "expected shape (32, 16)" in message
    assert "found (32, 15)" in message


def test_options_that_do_not_match_the_weights(reference_weights, tmp_path):
    options, weights = reference_weights("tiny")
    wrong = json.load(open(options))
    wrong["lstm"]["dim"] = 48
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(wrong))
    with pytest.raises(ValueError, match=r"expected shape \(32, 192\)"):
        keras_elmo.BiLM.from_allennlp(path, weights)


def test_not_an_hdf5_file(reference_weights, tmp_path):
    options, _ = reference_weights("tiny")
    junk = tmp_path / "junk.hdf5"
    junk.write_bytes(b"not hdf5 at all")
    with pytest.raises(ValueError, match="not an HDF5 file"):
        keras_elmo.BiLM.from_allennlp(options, junk)
    with pytest.raises(FileNotFoundError, match="missing.hdf5"):
        keras_elmo.BiLM.from_allennlp(options, tmp_path / "missing.hdf5")


def test_failed_save_leaves_the_old_file(reference_weights, tmp_path):
    options, weights = reference_weights("tiny")
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    target = tmp_path / "w.hdf5"
    target.write_bytes(b"old contents")
    bilm.bilstm.kernels[0].assign(
        np.full(bilm.bilstm.kernels[0].shape, np.nan, np.float32)
    )

    class Boom(Exception):
        pass

    original = h5py.File.create_dataset

    def failing(self, name, *args, **kwargs):
        if "RNN_1" in name:
            raise Boom()
        return original(self, name, *args, **kwargs)

    h5py.File.create_dataset = failing
    try:
        with pytest.raises(Boom):
            bilm.save_allennlp(tmp_path / "o.json", target)
    finally:
        h5py.File.create_dataset = original
    assert target.read_bytes() == b"old contents"
    assert sorted(os.listdir(tmp_path)) == ["w.hdf5"]


def test_saved_files_get_normal_permissions(reference_weights, tmp_path):
    options, weights = reference_weights("tiny")
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    umask = os.umask(0o022)
    try:
        bilm.save_allennlp(tmp_path / "o.json", tmp_path / "w.hdf5")
    finally:
        os.umask(umask)
    for name in ("o.json", "w.hdf5"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644, name


def test_float16_storage_loads_as_float32(reference_weights, tmp_path):
    from keras_elmo.weights.hdf5 import save_bilm_hdf5

    options, weights = reference_weights("tiny")
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    save_bilm_hdf5(bilm, tmp_path / "w16.hdf5", dtype="float16")
    with h5py.File(tmp_path / "w16.hdf5") as f:
        assert f["CNN_proj/W_proj"].dtype == np.float16
    half = keras_elmo.BiLM.from_allennlp(options, tmp_path / "w16.hdf5")
    for a, b in zip(bilm.get_weights(), half.get_weights()):
        np.testing.assert_array_equal(
            b, a.astype(np.float16).astype(np.float32)
        )
