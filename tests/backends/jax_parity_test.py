"""keras_elmo on the JAX backend: AllenNLP parity and TensorFlow parity.

Keras fixes its backend at import, so the layers run under
`KERAS_BACKEND=jax` in one subprocess (`backend_outputs.py`) that saves
every output; the tests here (`parity_checks.py`, shared with
`torch_parity_test.py`) compare them with the committed AllenNLP
fixtures (the tolerance of `tests/models/bilm_parity_test.py`) and with
the same layers run here on TensorFlow (same weights, same inputs).

The subprocess runs `sys.executable` (CI installs `jax[cpu]` with the
`test` extra) or `$KERAS_ELMO_JAX_PYTHON` (a venv with jax that sees
this one's packages, e.g. from `tools/make_jax_venv.sh`). Without JAX
the tests FAIL with the subprocess's error: they are not skipped. XLA
runs at optimisation level 0 there: on 2 CPU cores its compile time
(one compile per initializer shape and per op) is most of the run, and
the outputs stay within that tolerance.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.backends.parity_checks import check_layers_match_allennlp
from tests.backends.parity_checks import check_stateful_batches
from tests.backends.parity_checks import check_sublayers_match_tensorflow
from tests.models.bilm_parity_test import CONFIGS

HERE = os.path.dirname(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))


@pytest.fixture(scope="module")
def jax_outputs(reference_weights, tmp_path_factory):
    """The subprocess's `.npz`: every config's outputs under JAX."""
    path = tmp_path_factory.mktemp("jax") / "outputs.npz"
    specs = [f"{name}={','.join(reference_weights(name))}" for name in CONFIGS]
    env = dict(
        os.environ,
        KERAS_BACKEND="jax",
        JAX_PLATFORMS="cpu",
        XLA_FLAGS="--xla_backend_optimization_level=0",
        TF_CPP_MIN_LOG_LEVEL="2",
    )
    python = os.environ.get("KERAS_ELMO_JAX_PYTHON", sys.executable)
    script = os.path.join(HERE, "backend_outputs.py")
    run = subprocess.run(
        [python, script, str(path)] + specs,
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if run.returncode != 0:
        pytest.fail(
            f"the JAX subprocess ({python}) failed with exit code "
            f"{run.returncode}; it needs jax (pip install -e '.[jax]', or "
            "KERAS_ELMO_JAX_PYTHON=<a python with jax>):\n" + run.stderr[-3000:]
        )
    return np.load(path, allow_pickle=False)


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
    """`model.fit` (jit-compiled; the biLM frozen, so the gradient
    reaches the scalar mix and the head) runs and its loss goes down
    each epoch."""
    losses = jax_outputs["tiny/fit_losses"]
    assert losses.shape == (3,) and np.all(np.isfinite(losses))
    assert np.all(np.diff(losses) < 0), losses
