"""keras_elmo on the PyTorch backend: AllenNLP, TensorFlow and `.keras`.

Keras fixes its backend at import, so the layers run under
`KERAS_BACKEND=torch` in one subprocess (`torch_outputs.py`, which also
runs `backend_outputs.py`) that saves every output; the tests here
compare them with the committed AllenNLP fixtures (the tolerance of
`tests/models/bilm_parity_test.py`), with the same layers and the same
gradients on TensorFlow, and exchange `.keras` files with it.

Marked `torch_backend`: `make test` deselects it, `make test-torch`
installs torch's CPU build (`tools/install_torch_cpu.sh`) and the
`torch` extra and runs it. The subprocess runs `sys.executable` or
`$KERAS_ELMO_TORCH_PYTHON` (a python with torch that sees this one's
packages). Without torch the tests FAIL with the subprocess's error:
they are not skipped.
"""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from tests.backends.parity_checks import check_layers_match_allennlp
from tests.backends.parity_checks import check_stateful_batches
from tests.backends.parity_checks import check_sublayers_match_tensorflow
from tests.backends.torch_outputs import downstream_model
from tests.backends.torch_outputs import fixture_ids_and_labels
from tests.backends.torch_outputs import gradient_probe
from tests.models.bilm_parity_test import CONFIGS
from tests.models.bilm_parity_test import assert_close_to_reference

pytestmark = pytest.mark.torch_backend

HERE = os.path.dirname(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))


@pytest.fixture(scope="module")
def keras_files(reference_weights, tmp_path_factory):
    """`(tf_path, torch_path, tf_outputs)`: a `.keras` downstream model
    saved here under TensorFlow, with its outputs on `tiny`'s ids, and
    where the torch subprocess saves its own."""
    folder = tmp_path_factory.mktemp("keras_files")
    model = downstream_model(*reference_weights("tiny"), dropout=0.0)
    ids, _ = fixture_ids_and_labels("tiny")
    tf_path = str(folder / "tf_model.keras")
    model.save(tf_path)
    return tf_path, str(folder / "torch_model.keras"), np.asarray(model(ids))


@pytest.fixture(scope="module")
def torch_outputs(reference_weights, keras_files, tmp_path_factory):
    """The subprocess's `.npz`: every config's outputs under torch."""
    path = tmp_path_factory.mktemp("torch") / "outputs.npz"
    specs = [f"{name}={','.join(reference_weights(name))}" for name in CONFIGS]
    env = dict(os.environ, KERAS_BACKEND="torch", TF_CPP_MIN_LOG_LEVEL="2")
    python = os.environ.get("KERAS_ELMO_TORCH_PYTHON", sys.executable)
    script = os.path.join(HERE, "torch_outputs.py")
    run = subprocess.run(
        [python, script, str(path), keras_files[0], keras_files[1]] + specs,
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if run.returncode != 0:
        pytest.fail(
            f"the torch subprocess ({python}) failed with exit code "
            f"{run.returncode}; it needs torch's CPU build (make "
            "test-torch, or tools/install_torch_cpu.sh PYTHON, not a plain "
            "pip install torch: the CUDA build), or "
            "KERAS_ELMO_TORCH_PYTHON=<a python with torch>:\n"
            + run.stderr[-3000:]
        )
    return np.load(path, allow_pickle=False)


def test_the_subprocess_ran_on_torch(torch_outputs):
    assert str(torch_outputs["backend"]) == "torch"


@pytest.mark.parametrize("name", CONFIGS)
def test_every_layer_and_scalar_mix_match_allennlp(name, torch_outputs):
    check_layers_match_allennlp(torch_outputs, name, "torch")


@pytest.mark.parametrize("name", CONFIGS)
def test_sublayers_match_tensorflow(name, torch_outputs, reference_weights):
    check_sublayers_match_tensorflow(
        torch_outputs, name, reference_weights(name), "torch"
    )


def test_stateful_batches_match_allennlp(torch_outputs):
    check_stateful_batches(torch_outputs, "torch")


def test_elmo_layer_fits_on_torch(torch_outputs):
    """`model.fit` with a frozen biLM: with dropout 0.5 (3 epochs) the
    loss ends below where it started; with dropout 0 (a deterministic
    loss, 5 epochs) it falls every epoch, and so it does with
    `trainable_bilm=True` (dropout 0, Adam(1e-3), 3 epochs)."""
    noisy = torch_outputs["tiny/fit_losses"]
    assert noisy.shape == (3,) and np.all(np.isfinite(noisy))
    assert noisy[-1] < noisy[0], noisy
    for key, epochs in (
        ("fit_losses_no_dropout", 5),
        ("fit_trainable_losses", 3),
    ):
        losses = torch_outputs[f"tiny/{key}"]
        assert losses.shape == (epochs,) and np.all(np.isfinite(losses))
        assert np.all(np.diff(losses) < 0), (key, losses)


def test_trainable_bilm_gradients_match_tensorflow(
    torch_outputs, reference_weights
):
    """d sum(elmo(ids) * probe) / d w for every trainable weight of
    `ElmoLayer(trainable_bilm=True)` (char-CNN, highway, projection,
    both LSTM stacks, scalar mix): torch autograd of the padded scan vs
    TensorFlow's packed loop with its hand-written gradient."""
    ids, _ = fixture_ids_and_labels("tiny")
    bilm = keras_elmo.BiLM.from_allennlp(*reference_weights("tiny"))
    elmo = keras_elmo.layers.ElmoLayer(
        bilm, dropout=0.0, trainable_bilm=True, name="elmo"
    )
    with tf.GradientTape() as tape:
        mixed = elmo(ids)
        loss = tf.reduce_sum(mixed * gradient_probe(tuple(mixed.shape)))
    variables = elmo.trainable_variables
    grads = tape.gradient(loss, variables)
    keys = {k for k in torch_outputs.files if k.startswith("tiny/grad/")}
    assert keys == {f"tiny/grad/{v.path}" for v in variables}
    assert len(keys) > 2 * bilm.bilstm.num_layers * 4
    for variable, grad in zip(variables, grads):
        expected = keras.ops.convert_to_numpy(grad)
        actual = torch_outputs[f"tiny/grad/{variable.path}"]
        assert actual.shape == expected.shape, variable.path
        assert np.abs(expected).max() > 0, variable.path
        assert_close_to_reference(actual, expected, f"grad {variable.path}")


def test_keras_file_saved_under_tensorflow_loads_under_torch(
    torch_outputs, keras_files
):
    _, _, tf_outputs = keras_files
    assert_close_to_reference(
        torch_outputs["tiny/tf_keras_outputs"], tf_outputs, "tf .keras"
    )


def test_keras_file_saved_under_torch_loads_under_both(
    torch_outputs, keras_files
):
    _, torch_path, _ = keras_files
    saved = torch_outputs["tiny/torch_keras_outputs"]
    np.testing.assert_array_equal(
        torch_outputs["tiny/torch_keras_reloaded"], saved
    )
    ids, _ = fixture_ids_and_labels("tiny")
    # compile=False: the file names torch's Adam
    # (keras.src.backend.torch.optimizers), which needs torch to import.
    loaded = keras.saving.load_model(torch_path, compile=False)
    assert_close_to_reference(np.asarray(loaded(ids)), saved, "torch .keras")
