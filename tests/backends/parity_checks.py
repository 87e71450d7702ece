"""The checks every non-TensorFlow backend's outputs must pass.

Shared by `jax_parity_test.py` and `torch_parity_test.py`: `outputs` is
the `.npz` that `backend_outputs.py` wrote under that backend
(through `model_outputs.main`), `backend`
names it in failure messages. The bound is the AllenNLP parity tests'
(`tests/models/bilm_parity_test.py`): max |diff| <= 1e-5 * max |ref|.
"""

import numpy as np

import keras_elmo
from tests.backends.backend_outputs import seeded_inputs
from tests.backends.backend_outputs import sublayer_outputs
from tests.models.bilm_parity_test import assert_close_to_reference
from tests.models.bilm_parity_test import layers_of
from tests.reference_data import load_fixture
from tests.reference_data import sentences_of
from tests.reference_data import unpack_rows


def check_layers_match_allennlp(outputs, name, backend):
    """Ids, mask, the three BiLM layers (padding exactly zero) and the
    ElmoLayer scalar mix (on ids and on NumPy strings) vs AllenNLP."""
    ref = load_fixture(name)
    out = {
        k.split("/", 1)[1]: outputs[k]
        for k in outputs.files
        if k.startswith(f"{name}/")
    }
    np.testing.assert_array_equal(out["ids"], ref["char_ids"])
    # CharacterIds on NumPy strings gives batch_to_ids' ids.
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
            actual[:, layer],
            expected[:, layer],
            f"{backend} {name} layer {layer}",
        )
    padded = np.arange(steps)[None, :] >= lengths[:, None]
    assert np.all(actual.transpose(0, 2, 1, 3)[padded] == 0.0)
    assert_close_to_reference(
        out["elmo"],
        unpack_rows(ref["elmo_scalar_mix"], lengths, steps),
        f"{backend} {name} scalar mix",
    )
    # ElmoLayer on NumPy strings: the same ids, so the same outputs.
    np.testing.assert_array_equal(out["elmo_strings"], out["elmo"])


def check_sublayers_match_tensorflow(outputs, name, files, backend):
    """CharCNNEmbedding, Highway, ResidualBiLSTM (ragged mask, padding
    exactly zero) and ScalarMix vs the same layers run here on
    TensorFlow; `files` is `(options, weights)`."""
    ref = load_fixture(name)
    ids = keras_elmo.batch_to_ids(sentences_of(ref))
    bilm = keras_elmo.BiLM.from_allennlp(*files)
    expected = sublayer_outputs(name, bilm, ids)
    assert len(expected) == 2 + bilm.bilstm.num_layers + 1
    for key, value in expected.items():
        assert outputs[key].shape == value.shape, key
        assert_close_to_reference(outputs[key], value, f"{backend} {key}")
        if "bilstm" in key:
            padding = ~seeded_inputs(name, len(ids), ids.shape[1] + 2, 1)[1]
            assert np.all(outputs[key][padding] == 0.0), key


def check_stateful_batches(outputs, backend):
    """A stateful `tiny` BiLM's layers on each batch, in order."""
    ref = load_fixture("tiny_stateful")
    for k in range(int(ref["num_batches"])):
        actual = outputs[f"tiny_stateful/batch{k}"]
        expected = ref[f"batch{k}_activations"]
        for layer in range(3):
            assert_close_to_reference(
                actual[:, layer],
                expected[:, layer],
                f"{backend} tiny stateful batch {k} layer {layer}",
            )
