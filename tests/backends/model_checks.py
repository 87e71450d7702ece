"""The model-level checks every non-TensorFlow backend's outputs must pass.

Shared by `jax_parity_test.py` and `torch_parity_test.py` (as
`parity_checks.py` is for the layers): `outputs` is the `.npz` that
`model_outputs.main` wrote under `backend`, `work` the folder it wrote
its files into. Each check compares with TensorFlow, run here: a
`.keras` file, `from_preset`, `save_allennlp`, `fit`, and the gradients
of `ElmoLayer(trainable_bilm=True)`. The bound is the AllenNLP parity
tests' (`tests/models/bilm_parity_test.py`): max |diff| <= 1e-5 *
max |ref|; weights that are copied, not computed, must be bit-equal.
"""

import glob
import json
import os

import keras
import numpy as np
import tensorflow as tf

import keras_elmo
from keras_elmo.presets import preset_dir
from tests.backends.backend_outputs import downstream_model
from tests.backends.backend_outputs import fixture_ids_and_labels
from tests.backends.model_outputs import LM_SENTENCES
from tests.backends.model_outputs import bilm_layers
from tests.backends.model_outputs import gradient_probe
from tests.models.bilm_parity_test import assert_close_to_reference
from tests.weights.bilm_hdf5_test import hdf5_datasets


def tensorflow_keras_file(work, files):
    """Saves `WORK/tensorflow.keras` (a `tiny` downstream model, dropout
    0) for the subprocess to load; returns its outputs on `tiny`'s ids."""
    model = downstream_model(*files, dropout=0.0)
    ids, _ = fixture_ids_and_labels("tiny")
    model.save(os.path.join(work, "tensorflow.keras"))
    return np.asarray(model(ids))


def check_fit_losses(outputs):
    """`model.fit` with a frozen biLM: with dropout 0.5 (3 epochs) the
    loss ends below where it started; with dropout 0 (a deterministic
    loss, 5 epochs) it falls every epoch, and so it does with
    `trainable_bilm=True` (dropout 0, Adam(1e-3), 3 epochs)."""
    noisy = outputs["tiny/fit_losses"]
    assert noisy.shape == (3,) and np.all(np.isfinite(noisy))
    assert noisy[-1] < noisy[0], noisy
    for key, epochs in (
        ("fit_losses_no_dropout", 5),
        ("fit_trainable_losses", 3),
    ):
        losses = outputs[f"tiny/{key}"]
        assert losses.shape == (epochs,) and np.all(np.isfinite(losses))
        assert np.all(np.diff(losses) < 0), (key, losses)


def check_trainable_gradients(outputs, files, backend):
    """d sum(elmo(ids) * probe) / d w for every trainable weight of
    `ElmoLayer(trainable_bilm=True)` (char-CNN, highway, projection,
    both LSTM stacks, scalar mix): the backend's autodiff of the padded
    scan vs TensorFlow's packed loop with its hand-written gradient."""
    ids, _ = fixture_ids_and_labels("tiny")
    bilm = keras_elmo.BiLM.from_allennlp(*files)
    elmo = keras_elmo.layers.ElmoLayer(
        bilm, dropout=0.0, trainable_bilm=True, name="elmo"
    )
    with tf.GradientTape() as tape:
        mixed = elmo(ids)
        loss = tf.reduce_sum(mixed * gradient_probe(tuple(mixed.shape)))
    variables = elmo.trainable_variables
    grads = tape.gradient(loss, variables)
    keys = {k for k in outputs.files if k.startswith("tiny/grad/")}
    assert keys == {f"tiny/grad/{v.path}" for v in variables}
    assert len(keys) > 2 * bilm.bilstm.num_layers * 4
    for variable, grad in zip(variables, grads):
        expected = keras.ops.convert_to_numpy(grad)
        actual = outputs[f"tiny/grad/{variable.path}"]
        assert actual.shape == expected.shape, variable.path
        assert np.abs(expected).max() > 0, variable.path
        assert_close_to_reference(
            actual, expected, f"{backend} grad {variable.path}"
        )


def check_tensorflow_file_loads(outputs, tf_outputs, backend):
    """The `.keras` file saved under TensorFlow, loaded under `backend`."""
    assert_close_to_reference(
        outputs["tiny/tf_keras_outputs"], tf_outputs, f"{backend} tf .keras"
    )


def check_backend_file_loads(outputs, work, backend, compile=True):
    """The `.keras` file saved under `backend` loads back there bit for
    bit, and here under TensorFlow within the bound."""
    saved = outputs["tiny/keras_outputs"]
    np.testing.assert_array_equal(outputs["tiny/keras_reloaded"], saved)
    ids, _ = fixture_ids_and_labels("tiny")
    path = os.path.join(work, f"{backend}.keras")
    loaded = keras.saving.load_model(path, compile=compile)
    assert_close_to_reference(
        np.asarray(loaded(ids)), saved, f"{backend} .keras under tensorflow"
    )
    return loaded


def check_preset_matches_tensorflow(outputs, backend):
    """`BiLM.from_preset("elmo_small_en")`: the mask exactly, every layer
    within the bound of TensorFlow's (padding exactly zero)."""
    ids, _ = fixture_ids_and_labels("tiny")
    expected, mask = bilm_layers(
        keras_elmo.BiLM.from_preset("elmo_small_en"), ids
    )
    np.testing.assert_array_equal(outputs["preset/mask"], mask)
    actual = outputs["preset/layers"]
    assert actual.shape == expected.shape
    for layer in range(3):
        assert_close_to_reference(
            actual[:, layer],
            expected[:, layer],
            f"{backend} elmo_small_en layer {layer}",
        )
    assert np.all(actual.transpose(0, 2, 1, 3)[~mask] == 0.0)


def check_language_model_matches_tensorflow(outputs, backend):
    """`LMSubstitutes.from_preset("elmo_small_en")` (the shipped
    `BiLMLanguageModel` and its softmax): each direction's
    log-probabilities within the bound of TensorFlow's, and the same top
    5 candidates for every token."""
    from keras_elmo.models.language_model import LMSubstitutes

    expected = LMSubstitutes.from_preset("elmo_small_en").log_probabilities(
        LM_SENTENCES
    )
    for direction in ("forward", "backward"):
        reference = np.concatenate([s[direction] for s in expected])
        actual = outputs[f"preset/lm/{direction}"]
        assert actual.shape == reference.shape
        assert_close_to_reference(
            actual, reference, f"{backend} elmo_small_en LM {direction}"
        )
        np.testing.assert_array_equal(
            np.argsort(-actual, axis=-1)[:, :5],
            np.argsort(-reference, axis=-1)[:, :5],
        )


def check_saved_preset_files(work, backend):
    """`save_allennlp` of the shipped preset under `backend`: the same
    options and every dataset of the shipped float16 `weights.hdf5`,
    exactly, as float32 (the loader casts to float32; the writer keeps
    float32)."""
    folder = os.path.join(work, f"{backend}_preset")
    shipped = preset_dir("elmo_small_en")
    with open(os.path.join(folder, "options.json"), encoding="utf-8") as f:
        written_options = json.load(f)
    with open(os.path.join(shipped, "options.json"), encoding="utf-8") as f:
        assert written_options == json.load(f)
    original = hdf5_datasets(os.path.join(shipped, "weights.hdf5"))
    written = hdf5_datasets(os.path.join(folder, "weights.hdf5"))
    assert sorted(written) == sorted(original)
    for name, value in original.items():
        assert written[name].dtype == np.float32, name
        np.testing.assert_array_equal(
            written[name], value.astype(np.float32), err_msg=name
        )


def check_saved_tuned_files(outputs, work, files, backend):
    """The biLM fine-tuned under `backend` (`trainable_bilm=True` fit),
    saved with `save_allennlp` there and loaded here by `from_allennlp`:
    every weight bit-equal to the backend's, the layers within the
    bound of the backend's, and the layers moved by the fit (`files`:
    the `tiny` options and weights it started from)."""
    folder = os.path.join(work, f"{backend}_tuned")
    bilm = keras_elmo.BiLM.from_allennlp(
        os.path.join(folder, "options.json"),
        os.path.join(folder, "weights.hdf5"),
    )
    paths = outputs["tiny/tuned/paths"]
    assert len(bilm.weights) == len(paths) > 20

    def relative(path):
        return str(path).split("/", 1)[1]

    for i, weight in enumerate(bilm.weights):
        assert relative(weight.path) == relative(paths[i])
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(weight),
            outputs[f"tiny/tuned/weight{i:03d}"],
            err_msg=weight.path,
        )
    ids, _ = fixture_ids_and_labels("tiny")
    actual = bilm_layers(bilm, ids)[0]
    expected = outputs["tiny/tuned/layers"]
    for layer in range(3):
        assert_close_to_reference(
            actual[:, layer],
            expected[:, layer],
            f"{backend} tuned biLM layer {layer} under tensorflow",
        )
    untuned = keras_elmo.BiLM.from_allennlp(*files)
    assert not np.array_equal(bilm_layers(untuned, ids)[0], actual)


def check_url_preset(outputs, work, backend):
    """`from_preset` of a `file://` URL under `backend` (the download
    path: fetched into the cache, then loaded): the cached weights are
    the saved file's bytes, and the layers are bit-equal to those of the
    model that saved them."""
    cached = glob.glob(os.path.join(work, "cache", "url-*", "weights.hdf5"))
    assert len(cached) == 1, cached
    saved = os.path.join(work, f"{backend}_tuned", "weights.hdf5")
    with open(cached[0], "rb") as f, open(saved, "rb") as g:
        assert f.read() == g.read()
    np.testing.assert_array_equal(
        outputs["tiny/tuned/url_layers"], outputs["tiny/tuned/layers"]
    )
