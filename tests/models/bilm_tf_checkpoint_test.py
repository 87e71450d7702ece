"""bilm-tf training checkpoints (`lm/...`) convert like `dump_weights`."""

import json

import h5py
import numpy as np
import pytest

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.weights.tf_checkpoints import read_bilm_tf_checkpoint
from tests.models.tf_checkpoint_helpers import bilm_tf_names
from tests.models.tf_checkpoint_helpers import hdf5_arrays
from tests.models.tf_checkpoint_helpers import write_checkpoint

VOCAB = 7


@pytest.fixture(params=[False, True], ids=["tf1.0_names", "tf1.2_names"])
def checkpoint(request, reference_weights, tmp_path):
    options, weights = reference_weights("tiny")
    arrays = hdf5_arrays(weights)
    variables = bilm_tf_names(arrays, new_spelling=request.param)
    rng = np.random.default_rng(0)
    softmax_w = rng.standard_normal((VOCAB, 16)).astype(np.float32)
    softmax_b = rng.standard_normal(VOCAB).astype(np.float32)
    variables["lm/softmax/W"] = softmax_w
    variables["lm/softmax/b"] = softmax_b
    variables["lm/CNN_proj/W_proj/Adagrad"] = np.ones((28, 16), np.float32)
    variables["global_step"] = np.int64(1000)
    folder = tmp_path / "checkpoint"
    write_checkpoint(str(folder / "model.ckpt-1000"), variables)
    training_options = json.loads(open(options).read())
    training_options["char_cnn"]["n_characters"] = 261  # as bilm-tf trains
    (folder / "options.json").write_text(json.dumps(training_options))
    return folder, options, weights, arrays, (softmax_w, softmax_b)


def test_names_are_the_documented_ones(checkpoint):
    import tensorflow as tf

    names = dict(
        tf.train.list_variables(str(checkpoint[0] / "model.ckpt-1000"))
    )
    assert names["lm/char_embed"] == [261, 4]
    assert names["lm/softmax/W"] == [VOCAB, 16]


def test_arrays_equal_the_dump_weights_file(checkpoint):
    folder, _, _, arrays, softmax = checkpoint
    config, read, soft = read_bilm_tf_checkpoint(
        str(folder), str(folder / "options.json")
    )
    assert config.n_characters == 261
    for name, value in arrays.items():
        np.testing.assert_array_equal(read[name], value, err_msg=name)
    np.testing.assert_array_equal(soft["softmax/W"], softmax[0])
    np.testing.assert_array_equal(soft["softmax/b"], softmax[1])


def test_cli_convert_writes_weights_and_softmax(checkpoint, tmp_path):
    folder, options, weights, arrays, softmax = checkpoint
    out = tmp_path / "out"
    argv = [
        "convert",
        "--from-bilm-tf-checkpoint",
        str(folder / "model.ckpt-1000"),
    ]
    argv += ["--options", str(folder / "options.json")]
    argv += ["--to-options", str(out / "o.json"), "--to-weights"]
    argv += [str(out / "w.hdf5"), "--to-softmax", str(out / "s.hdf5")]
    assert main(argv) == 0
    converted = keras_elmo.BiLM.from_allennlp(out / "o.json", out / "w.hdf5")
    reference = keras_elmo.BiLM.from_allennlp(options, weights)
    ids = keras_elmo.batch_to_ids([["Hello", "there", "!"], ["Hi"]])
    got, want = converted(ids), reference(ids)
    for key in ("word_emb", "lstm_outputs1", "lstm_outputs2"):
        np.testing.assert_allclose(got[key], want[key], rtol=0, atol=1e-6)
    with h5py.File(out / "w.hdf5", "r") as f:
        for name, value in arrays.items():
            np.testing.assert_array_equal(f[name][...], value, err_msg=name)
    with h5py.File(out / "s.hdf5", "r") as f:
        np.testing.assert_array_equal(f["softmax/W"][...], softmax[0])
        np.testing.assert_array_equal(f["softmax/b"][...], softmax[1])


def test_wrong_options_name_the_checkpoint_variable(checkpoint):
    folder = checkpoint[0]
    options = json.loads((folder / "options.json").read_text())
    options["lstm"]["dim"] = 64
    with pytest.raises(ValueError, match="variable 'lm/RNN_0/.*expected shape"):
        read_bilm_tf_checkpoint(str(folder), options)


def test_no_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no TensorFlow checkpoint"):
        read_bilm_tf_checkpoint(str(tmp_path))
