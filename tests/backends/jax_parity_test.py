"""keras_elmo on the JAX backend: AllenNLP, TensorFlow and model files.

Keras fixes its backend at import, so the layers run under
`KERAS_BACKEND=jax` in one subprocess (`jax_outputs.py`: the layers of
`backend_outputs.py`, the models of `model_outputs.py`) that saves
every output; the tests here compare them with the committed AllenNLP
fixtures (the tolerance of `tests/models/bilm_parity_test.py`,
`parity_checks.py`) and with TensorFlow run here (`model_checks.py`):
the same layers, the shipped preset, the gradients of a trainable
biLM, `.keras` files both ways and `save_allennlp`'s files.

The subprocess (`backend_subprocess.run_script`) runs `sys.executable`
(CI installs `jax[cpu]` with the `test` extra) or
`$KERAS_ELMO_JAX_PYTHON`; without JAX the tests FAIL with its error:
they are not skipped.

On 2 CPU cores the subprocess takes about 85 s (wall; 70 s CPU), of
which the model checks about 50 s: the layers alone took about 35 s.
"""

import keras
import numpy as np
import pytest

from tests.backends import model_checks
from tests.backends.backend_subprocess import run_script
from tests.backends.parity_checks import check_layers_match_allennlp
from tests.backends.parity_checks import check_stateful_batches
from tests.backends.parity_checks import check_sublayers_match_tensorflow
from tests.models.bilm_parity_test import CONFIGS

# Runs its checks in JAX subprocesses (tests/backends/backend_subprocess.py).
pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def jax_work(reference_weights, tmp_path_factory):
    """`(outputs, work, tf_outputs)`: the subprocess's `.npz`, the folder
    of the files it exchanged with TensorFlow, and the outputs of the
    `.keras` model saved here for it."""
    work = tmp_path_factory.mktemp("jax")
    tf_outputs = model_checks.tensorflow_keras_file(
        str(work), reference_weights("tiny")
    )
    path = work / "outputs.npz"
    specs = [f"{name}={','.join(reference_weights(name))}" for name in CONFIGS]
    run_script("jax", "jax_outputs.py", [path, work] + specs)
    return np.load(path, allow_pickle=False), str(work), tf_outputs


@pytest.fixture(scope="module")
def jax_outputs(jax_work):
    return jax_work[0]


def test_the_subprocess_ran_on_jax(jax_outputs):
    assert str(jax_outputs["backend"]) == "jax"


@pytest.mark.parametrize("name", CONFIGS)
def test_every_layer_and_scalar_mix_match_allennlp(name, jax_outputs):
    check_layers_match_allennlp(jax_outputs, name, "jax")


@pytest.mark.parametrize("name", CONFIGS)
def test_sublayers_match_tensorflow(name, jax_outputs, reference_weights):
    check_sublayers_match_tensorflow(
        jax_outputs, name, reference_weights(name), "jax"
    )


def test_stateful_batches_match_allennlp(jax_outputs):
    check_stateful_batches(jax_outputs, "jax")


def test_elmo_layer_fits_on_jax(jax_outputs):
    """`model.fit` (jit-compiled): frozen biLM with dropout 0.5 and 0,
    and `trainable_bilm=True`; see `model_checks.check_fit_losses`."""
    model_checks.check_fit_losses(jax_outputs)


def test_trainable_bilm_gradients_match_tensorflow(
    jax_outputs, reference_weights
):
    model_checks.check_trainable_gradients(
        jax_outputs, reference_weights("tiny"), "jax"
    )


def test_preset_matches_tensorflow(jax_outputs):
    model_checks.check_preset_matches_tensorflow(jax_outputs, "jax")


def test_language_model_matches_tensorflow(jax_outputs):
    model_checks.check_language_model_matches_tensorflow(jax_outputs, "jax")


def test_save_allennlp_writes_the_preset_exactly(jax_work):
    model_checks.check_saved_preset_files(jax_work[1], "jax")


def test_save_allennlp_of_a_tuned_bilm_loads_under_tensorflow(
    jax_work, reference_weights
):
    outputs, work, _ = jax_work
    model_checks.check_saved_tuned_files(
        outputs, work, reference_weights("tiny"), "jax"
    )


def test_from_preset_of_a_file_url(jax_work):
    outputs, work, _ = jax_work
    model_checks.check_url_preset(outputs, work, "jax")


def test_keras_file_saved_under_tensorflow_loads_under_jax(jax_work):
    outputs, _, tf_outputs = jax_work
    model_checks.check_tensorflow_file_loads(outputs, tf_outputs, "jax")


def test_keras_file_saved_under_jax_loads_under_both(jax_work):
    """A compiled model saved under JAX loads here with `compile=True`:
    JAX's optimizers are Keras' own classes (torch's are not)."""
    outputs, work, _ = jax_work
    loaded = model_checks.check_backend_file_loads(outputs, work, "jax")
    assert isinstance(loaded.optimizer, keras.optimizers.Adam)
