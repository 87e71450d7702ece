"""An unsupported Keras backend: construction works, the first call says
why not.

JAX and PyTorch are supported (tests/backends/jax_parity_test.py and
torch_parity_test.py run them). Before that, under `KERAS_BACKEND=jax`,
`bilm(ids)` failed inside `CharCNNEmbedding.call` with "where requires
ndarray or scalar arguments", and under torch with "Can't call numpy()
on Tensor that requires grad"; Keras' numpy and openvino backends are
not supported. The suite runs on TensorFlow, so here the active
backend's name is replaced where `check_backend` reads it.
"""

import pytest

import keras_elmo
from keras_elmo import utils as backend_check
from tests.conftest import padded
from tests.conftest import tiny_bilm


@pytest.fixture(params=["numpy", "openvino"])
def other_backend(request, monkeypatch):
    monkeypatch.setattr(
        backend_check.keras.backend, "backend", lambda: request.param
    )
    return request.param


def _expect_clear_error(name, backend):
    return pytest.raises(
        RuntimeError,
        match=(
            f"{name} runs on the tensorflow, jax and torch backends only "
            "for now; "
            f"the active Keras backend is '{backend}'"
        ),
    )


def test_first_bilm_call_names_the_backend(other_backend):
    bilm = tiny_bilm()  # construction still works
    ids = keras_elmo.batch_to_ids([["a", "b"]])
    with _expect_clear_error("BiLM", other_backend):
        bilm(ids)


def test_first_layer_calls_name_the_backend(other_backend):
    bilm = tiny_bilm()
    elmo = keras_elmo.layers.ElmoLayer(bilm)
    with _expect_clear_error("CharacterIds", other_backend):
        elmo(padded([["a", "b"]]))
    layer = keras_elmo.layers.CharCNNEmbedding(
        filters=[[1, 4]], char_embedding_dim=4
    )
    with _expect_clear_error("CharCNNEmbedding", other_backend):
        layer(keras_elmo.batch_to_ids([["a"]]))
    with _expect_clear_error("CharacterIds", other_backend):
        keras_elmo.layers.CharacterIds()(padded([["a"]]))


def test_tensorflow_backend_passes():
    backend_check.check_backend("BiLM")
    assert backend_check.is_tensorflow()


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_jax_and_torch_backends_pass(backend, monkeypatch):
    monkeypatch.setattr(backend_check.keras.backend, "backend", lambda: backend)
    backend_check.check_backend("BiLM")
