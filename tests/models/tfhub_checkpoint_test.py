"""TF Hub `elmo/3` modules (TF1 Hub format) convert to an equal BiLM."""

import json
import os
import tarfile

import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from keras_elmo.cli.main import main
from tests.models.tf_checkpoint_helpers import hdf5_arrays
from tests.models.tf_checkpoint_helpers import tfhub_names
from tests.models.tf_checkpoint_helpers import write_checkpoint

SENTENCES = [["The", "cat", "sat", "."], ["Dogs", "bark"]]
MIX = np.array([0.3, -1.2, 0.8], np.float32)
SCALING = np.float32(1.7)


@pytest.fixture
def module(reference_weights, tmp_path):
    options, weights = reference_weights("tiny")
    variables = tfhub_names(hdf5_arrays(weights))
    variables["aggregation/weights"] = MIX
    variables["aggregation/scaling"] = SCALING
    variables["bilm/RNN_0/Variable"] = np.zeros((4, 16), np.float32)
    folder = tmp_path / "elmo_3"
    write_checkpoint(str(folder / "variables" / "variables"), variables)
    (folder / "tfhub_module.pb").write_bytes(b"")
    return folder, options, weights, variables


def test_module_variables_are_the_documented_ones(module):
    folder = module[0]
    found = dict(
        tf.train.list_variables(str(folder / "variables" / "variables"))
    )
    assert found["bilm/char_embed"] == [262, 4]
    assert found["bilm/CNN/W_cnn_2"] == [1, 3, 4, 16]
    assert found["bilm/CNN_high_1/W_carry"] == [28, 28]
    cell = "bilm/RNN_1/RNN/MultiRNNCell/Cell1/rnn/lstm_cell"
    assert found[f"{cell}/kernel"] == [32, 128]
    assert found[f"{cell}/bias"] == [128]
    assert found[f"{cell}/projection/kernel"] == [32, 16]
    assert found["aggregation/weights"] == [3]
    assert found["aggregation/scaling"] == []


def _ids():
    return keras_elmo.batch_to_ids(SENTENCES)


def _assert_same_bilm(bilm, options, weights):
    reference = keras_elmo.BiLM.from_allennlp(options, weights)
    assert bilm.config == reference.config
    got, want = bilm(_ids()), reference(_ids())
    for key in ("word_emb", "lstm_outputs1", "lstm_outputs2"):
        np.testing.assert_allclose(got[key], want[key], rtol=0, atol=1e-6)


def test_from_tfhub_equals_from_allennlp(module):
    folder, options, weights, _ = module
    _assert_same_bilm(keras_elmo.BiLM.from_tfhub(str(folder)), options, weights)


def test_from_tfhub_reads_a_tar_gz(module, tmp_path):
    folder, options, weights, _ = module
    archive = tmp_path / "elmo_3.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in os.listdir(folder):
            tar.add(folder / name, arcname=name)
    _assert_same_bilm(
        keras_elmo.BiLM.from_tfhub(str(archive)), options, weights
    )


def test_elmo_layer_reproduces_the_module_weighted_sum(module):
    folder, options, weights, _ = module
    layer = keras_elmo.layers.ElmoLayer.from_tfhub(str(folder), dropout=0.0)
    got = np.asarray(layer(_ids()))
    out = keras_elmo.BiLM.from_allennlp(options, weights)(_ids())
    word = np.asarray(out["word_emb"])
    layers = [np.concatenate([word, word], -1)]
    layers += [np.asarray(out[f"lstm_outputs{k}"]) for k in (1, 2)]
    s = np.exp(MIX.astype(np.float64))
    s /= s.sum()
    expected = SCALING * sum(w * h for w, h in zip(s, layers))
    mask = np.asarray(out["mask"])[..., None]
    np.testing.assert_allclose(got, expected * mask, rtol=0, atol=1e-6)
    mix = layer.scalar_mixes[0]
    assert mix.scalar_parameters.trainable and mix.gamma.trainable


def test_wrong_shape_names_the_module_variable(module):
    folder, _, _, variables = module
    name = "bilm/CNN_proj/W_proj"
    variables[name] = np.zeros((28, 8), np.float32)
    write_checkpoint(str(folder / "variables" / "variables"), variables)
    with pytest.raises(ValueError, match=f"variable '{name}': expected shape"):
        keras_elmo.BiLM.from_tfhub(str(folder), options=_tiny_options())


def test_missing_variable_is_named(module):
    folder, _, _, variables = module
    name = "bilm/RNN_0/RNN/MultiRNNCell/Cell1/rnn/lstm_cell/bias"
    del variables[name]
    write_checkpoint(str(folder / "variables" / "variables"), variables)
    with pytest.raises(ValueError, match=f"no variable '{name}'"):
        keras_elmo.BiLM.from_tfhub(str(folder))


def test_not_a_module_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="variables/variables.index"):
        keras_elmo.BiLM.from_tfhub(str(tmp_path))


def _tiny_options():
    return keras_elmo.BiLMConfig.from_architecture("tiny").to_options_dict()


def test_cli_convert_from_tfhub(module, tmp_path):
    folder, options, weights, _ = module
    out = tmp_path / "out"
    argv = ["convert", "--from-tfhub", str(folder)]
    argv += ["--to-options", str(out / "o.json"), "--to-weights"]
    argv += [str(out / "w.hdf5"), "--to-mix", str(out / "mix.json")]
    assert main(argv) == 0
    converted = keras_elmo.BiLM.from_allennlp(out / "o.json", out / "w.hdf5")
    _assert_same_bilm(converted, options, weights)
    mix = json.loads((out / "mix.json").read_text())
    np.testing.assert_array_equal(mix["scalar_parameters"], MIX)
    assert mix["gamma"] == float(SCALING)


@pytest.mark.large
def test_converted_module_exports_a_tf2_savedmodel_with_its_mix(
    module, tmp_path
):
    folder = module[0]
    layer = keras_elmo.layers.ElmoLayer.from_tfhub(str(folder), dropout=0.0)
    path = str(tmp_path / "elmo_tf2")
    keras_elmo.export_saved_model(layer, path)
    loaded = tf.saved_model.load(path)
    lengths = [len(s) for s in SENTENCES]
    tokens = [s + [""] * (max(lengths) - len(s)) for s in SENTENCES]
    out = loaded.signatures["tokens"](
        tokens=tf.constant(tokens), sequence_len=tf.constant(lengths)
    )
    expected = np.asarray(layer(tf.constant(tokens)))
    np.testing.assert_allclose(out["elmo"].numpy(), expected, atol=1e-6)
