"""keras_elmo on the PyTorch backend: AllenNLP, TensorFlow and model files.

Keras fixes its backend at import, so the layers run under
`KERAS_BACKEND=torch` in one subprocess (`torch_outputs.py`: the layers
of `backend_outputs.py`, the models of `model_outputs.py`) that saves
every output; the tests here compare them with the committed AllenNLP
fixtures (the tolerance of `tests/models/bilm_parity_test.py`,
`parity_checks.py`) and with TensorFlow run here (`model_checks.py`):
the same layers, the shipped preset, the gradients of a trainable
biLM, `.keras` files both ways and `save_allennlp`'s files; and
`.keras` files between PyTorch and JAX (`keras_exchange.py`, one
subprocess under each).

Marked `torch_backend`: `make test` deselects it, `make test-torch`
installs torch's CPU build (`tools/install_torch_cpu.sh`) and the
`torch` extra and runs it. The subprocess (`backend_subprocess.
run_script`) runs `sys.executable` or `$KERAS_ELMO_TORCH_PYTHON` (a
python with torch that sees this one's packages). Without torch the
tests FAIL with the subprocess's error: they are not skipped.
"""

import os

import numpy as np
import pytest

from tests.backends import model_checks
from tests.backends.backend_subprocess import run_script
from tests.backends.parity_checks import check_layers_match_allennlp
from tests.backends.parity_checks import check_stateful_batches
from tests.backends.parity_checks import check_sublayers_match_tensorflow
from tests.models.bilm_parity_test import CONFIGS
from tests.models.bilm_parity_test import assert_close_to_reference

pytestmark = pytest.mark.torch_backend


@pytest.fixture(scope="module")
def torch_work(reference_weights, tmp_path_factory):
    """`(outputs, work, tf_outputs)`: the subprocess's `.npz`, the folder
    of the files it exchanged with TensorFlow, and the outputs of the
    `.keras` model saved here for it."""
    work = tmp_path_factory.mktemp("torch")
    tf_outputs = model_checks.tensorflow_keras_file(
        str(work), reference_weights("tiny")
    )
    path = work / "outputs.npz"
    specs = [f"{name}={','.join(reference_weights(name))}" for name in CONFIGS]
    run_script("torch", "torch_outputs.py", [path, work] + specs)
    return np.load(path, allow_pickle=False), str(work), tf_outputs


@pytest.fixture(scope="module")
def torch_outputs(torch_work):
    return torch_work[0]


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
    """`model.fit`: frozen biLM with dropout 0.5 and 0, and
    `trainable_bilm=True`; see `model_checks.check_fit_losses`."""
    model_checks.check_fit_losses(torch_outputs)


def test_trainable_bilm_gradients_match_tensorflow(
    torch_outputs, reference_weights
):
    model_checks.check_trainable_gradients(
        torch_outputs, reference_weights("tiny"), "torch"
    )


def test_preset_matches_tensorflow(torch_outputs):
    model_checks.check_preset_matches_tensorflow(torch_outputs, "torch")


def test_language_model_matches_tensorflow(torch_outputs):
    model_checks.check_language_model_matches_tensorflow(torch_outputs, "torch")


def test_save_allennlp_writes_the_preset_exactly(torch_work):
    model_checks.check_saved_preset_files(torch_work[1], "torch")


def test_save_allennlp_of_a_tuned_bilm_loads_under_tensorflow(
    torch_work, reference_weights
):
    outputs, work, _ = torch_work
    model_checks.check_saved_tuned_files(
        outputs, work, reference_weights("tiny"), "torch"
    )


def test_from_preset_of_a_file_url(torch_work):
    outputs, work, _ = torch_work
    model_checks.check_url_preset(outputs, work, "torch")


def test_keras_file_saved_under_tensorflow_loads_under_torch(torch_work):
    outputs, _, tf_outputs = torch_work
    model_checks.check_tensorflow_file_loads(outputs, tf_outputs, "torch")


def test_keras_file_saved_under_torch_loads_under_both(torch_work):
    """compile=False here: the file names torch's Adam
    (keras.src.backend.torch.optimizers), which needs torch to import."""
    outputs, work, _ = torch_work
    model_checks.check_backend_file_loads(outputs, work, "torch", compile=False)


@pytest.fixture(scope="module")
def jax_torch_exchange(torch_work):
    """`(jax, torch)`: the torch subprocess's `.keras` file loaded under
    JAX (`keras_exchange.py`) and saved again there, that JAX file
    loaded under torch; each `.npz` holds the outputs on `tiny`'s ids."""
    work = torch_work[1]
    runs = (
        ("jax", "torch.keras", "jax_from_torch.keras"),
        ("torch", "jax_from_torch.keras", "torch_from_jax.keras"),
    )
    found = []
    for backend, source, target in runs:
        path = os.path.join(work, f"{backend}_exchange.npz")
        run_script(
            backend,
            "keras_exchange.py",
            [os.path.join(work, source), os.path.join(work, target), path],
        )
        found.append(np.load(path, allow_pickle=False))
    return tuple(found)


def test_keras_files_cross_between_jax_and_torch(
    torch_outputs, jax_torch_exchange
):
    """A `.keras` file saved under PyTorch loads under JAX, and the file
    JAX saves from it loads under PyTorch, within the bound each way."""
    under_jax, under_torch = jax_torch_exchange
    assert str(under_jax["backend"]) == "jax"
    assert str(under_torch["backend"]) == "torch"
    assert_close_to_reference(
        under_jax["outputs"],
        torch_outputs["tiny/keras_outputs"],
        "torch .keras under jax",
    )
    assert_close_to_reference(
        under_torch["outputs"], under_jax["outputs"], "jax .keras under torch"
    )
