"""keras_elmo on the JAX backend: AllenNLP parity and TensorFlow parity.

Keras fixes its backend at import, so the layers run under
`KERAS_BACKEND=jax` in one subprocess (`backend_outputs.py`) that saves
every output; the tests here compare them with the committed AllenNLP
fixtures (the tolerance of `tests/models/bilm_parity_test.py`) and with
the same layers run here on TensorFlow (same weights, same inputs).

The subprocess runs `sys.executable` (CI installs `jax[cpu]` with the
`test` extra) or `$KERAS_ELMO_JAX_PYTHON` (a venv with jax that sees
this one's packages, e.g. from `tools/make_jax_venv.sh`). Without JAX
the tests FAIL with the subprocess's error: they are not skipped. XLA
runs at optimisation level 0 there: on 2 CPU cores its compile time
(one compile per initializer shape and per op) is most of the run, and
the outputs stay within the tolerance below.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

import keras_elmo
from tests.backends.backend_outputs import seeded_inputs
from tests.backends.backend_outputs import sublayer_outputs
from tests.models.bilm_parity_test import CONFIGS
from tests.models.bilm_parity_test import assert_close_to_reference
from tests.models.bilm_parity_test import layers_of
from tests.reference_data import load_fixture
from tests.reference_data import sentences_of
from tests.reference_data import unpack_rows

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
    ref = load_fixture(name)
    out = {
        k.split("/", 1)[1]: jax_outputs[k]
        for k in jax_outputs.files
        if k.startswith(f"{name}/")
    }
    np.testing.assert_array_equal(out["ids"], ref["char_ids"])
    # CharacterIds on NumPy strings gives batch_to_ids' ids under JAX.
    np.testing.assert_array_equal(out["character_ids"], ref["char_ids"])
    lengths = ref["lengths"]
    steps = out["ids"].shape[1]
    np.testing.assert_array_equal(
        out["mask"], np.arange(steps) < lengths[:, None]
    )
    expected = unpack_rows(ref["activations"], lengths, steps)
    expected = expected.transpose(0, 2, 1, 3)  # [B, 3, T, 2P]
    actual = layers_of(out)
    for layer in range(3):
        assert_close_to_reference(
            actual[:, layer], expected[:, layer], f"jax {name} layer {layer}"
        )
    padded = np.arange(steps)[None, :] >= lengths[:, None]
    assert np.all(actual.transpose(0, 2, 1, 3)[padded] == 0.0)
    assert_close_to_reference(
        out["elmo"],
        unpack_rows(ref["elmo_scalar_mix"], lengths, steps),
        f"jax {name} scalar mix",
    )
    # ElmoLayer on NumPy strings: the same ids, so the same outputs.
    np.testing.assert_array_equal(out["elmo_strings"], out["elmo"])


@pytest.mark.parametrize("name", CONFIGS)
def test_sublayers_match_tensorflow(name, jax_outputs, reference_weights):
    """CharCNNEmbedding, Highway, ResidualBiLSTM (ragged mask, padding
    zero) and ScalarMix: the same outputs as on TensorFlow."""
    ref = load_fixture(name)
    ids = keras_elmo.batch_to_ids(sentences_of(ref))
    bilm = keras_elmo.BiLM.from_allennlp(*reference_weights(name))
    expected = sublayer_outputs(name, bilm, ids)
    assert len(expected) == 2 + bilm.bilstm.num_layers + 1
    for key, value in expected.items():
        assert jax_outputs[key].shape == value.shape, key
        assert_close_to_reference(jax_outputs[key], value, f"jax {key}")
        if "bilstm" in key:
            # Padding exactly zero, as on TensorFlow.
            padding = ~seeded_inputs(name, len(ids), ids.shape[1] + 2, 1)[1]
            assert np.all(jax_outputs[key][padding] == 0.0), key


def test_stateful_batches_match_allennlp(jax_outputs):
    ref = load_fixture("tiny_stateful")
    for k in range(int(ref["num_batches"])):
        actual = jax_outputs[f"tiny_stateful/batch{k}"]
        expected = ref[f"batch{k}_activations"]
        for layer in range(3):
            assert_close_to_reference(
                actual[:, layer],
                expected[:, layer],
                f"jax tiny stateful batch {k} layer {layer}",
            )


def test_elmo_layer_fits_on_jax(jax_outputs):
    """`model.fit` (jit-compiled; the biLM frozen, so the gradient
    reaches the scalar mix and the head) runs and its loss goes down
    each epoch."""
    losses = jax_outputs["tiny/fit_losses"]
    assert losses.shape == (3,) and np.all(np.isfinite(losses))
    assert np.all(np.diff(losses) < 0), losses
