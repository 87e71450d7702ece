"""Parity with AllenNLP 2.10.1's own ELMo on seeded random weights."""

import numpy as np
import pytest

import keras_elmo
from tests.reference_data import load_fixture
from tests.reference_data import sentences_of
from tests.reference_data import unpack_rows

CONFIGS = ["tiny", "tiny_tanh", "small", "small_tanh"]
# The acceptance bound: max |diff| <= 1e-5 * max |activation|, per layer.
RELATIVE_TOLERANCE = 1e-5


def layers_of(outputs):
    """`[B, 3, T, 2P]` from BiLM outputs, layer 0 = [x; x]."""
    word = np.asarray(outputs["word_emb"])
    return np.stack(
        [
            np.concatenate([word, word], axis=-1),
            np.asarray(outputs["lstm_outputs1"]),
            np.asarray(outputs["lstm_outputs2"]),
        ],
        axis=1,
    )


def assert_close_to_reference(actual, expected, what):
    scale = np.abs(expected).max()
    diff = np.abs(actual - expected).max()
    assert diff <= RELATIVE_TOLERANCE * scale, (
        f"{what}: max |diff| {diff:.3g} > {RELATIVE_TOLERANCE} * {scale:.3g}"
    )


@pytest.mark.parametrize("name", CONFIGS)
def test_every_layer_and_scalar_mix_match_allennlp(name, reference_weights):
    ref = load_fixture(name)
    options, weights = reference_weights(name)
    ids = keras_elmo.batch_to_ids(sentences_of(ref))
    np.testing.assert_array_equal(ids, ref["char_ids"])

    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    outputs = bilm(ids)
    lengths = ref["lengths"]
    steps = ids.shape[1]
    np.testing.assert_array_equal(
        np.asarray(outputs["mask"]), np.arange(steps) < lengths[:, None]
    )
    expected = unpack_rows(ref["activations"], lengths, steps)
    expected = expected.transpose(0, 2, 1, 3)  # [B, 3, T, 2P]
    actual = layers_of(outputs)
    for layer in range(3):
        assert_close_to_reference(
            actual[:, layer], expected[:, layer], f"{name} layer {layer}"
        )
    # Padded positions are exactly zero, as in AllenNLP.
    padded = np.arange(steps)[None, :] >= lengths[:, None]
    assert np.all(actual.transpose(0, 2, 1, 3)[padded] == 0.0)

    elmo = keras_elmo.layers.ElmoLayer(
        bilm,
        dropout=0.0,
        scalar_mix_parameters=ref["scalar_mix_parameters"].tolist(),
    )
    mixed = np.asarray(elmo(ids))
    assert_close_to_reference(
        mixed,
        unpack_rows(ref["elmo_scalar_mix"], lengths, steps),
        f"{name} scalar mix",
    )
    assert not elmo.trainable_weights


@pytest.mark.parametrize("name", ["tiny", "small"])
def test_stateful_batches_match_allennlp(name, reference_weights):
    ref = load_fixture(f"{name}_stateful")
    options, weights = reference_weights(name)
    bilm = keras_elmo.BiLM.from_allennlp(options, weights, stateful=True)
    stateless = keras_elmo.BiLM.from_allennlp(options, weights)
    carried_changed_something = False
    for k in range(int(ref["num_batches"])):
        ids = ref[f"batch{k}_char_ids"]
        actual = layers_of(bilm(ids))
        expected = ref[f"batch{k}_activations"]
        for layer in range(3):
            assert_close_to_reference(
                actual[:, layer],
                expected[:, layer],
                f"{name} stateful batch {k} layer {layer}",
            )
        fresh = layers_of(stateless(ids))
        carried_changed_something |= bool(np.abs(fresh - expected).max() > 1e-2)
    # The carried state really matters on these batches.
    assert carried_changed_something
    # reset_states() starts over: the first batch again equals a fresh run.
    bilm.reset_states()
    ids = ref["batch0_char_ids"]
    np.testing.assert_allclose(
        layers_of(bilm(ids)), layers_of(stateless(ids)), atol=1e-6
    )


def test_batch_to_ids_matches_allennlp():
    ref = load_fixture("batch_to_ids")
    import json

    cases = sorted(
        int(k.split("_")[1]) for k in ref.files if k.endswith("_ids")
    )
    assert cases
    for case in cases:
        sentences = json.loads(str(ref[f"case_{case}_sentences_json"]))
        expected = ref[f"case_{case}_ids"]
        actual = keras_elmo.batch_to_ids(sentences)
        if expected.ndim == 2:
            # AllenNLP returns [B, 0] for a batch of empty sentences.
            assert expected.shape[1] == 0 and actual.shape[1] == 0
            continue
        for i, sentence in enumerate(sentences):
            for j, token in enumerate(sentence):
                if token == "":
                    # Deliberate difference: "" is padding (all zeros) here;
                    # AllenNLP encodes a zero-byte word.
                    assert np.all(actual[i, j] == 0)
                    np.testing.assert_array_equal(
                        expected[i, j, :3], [259, 260, 261]
                    )
                else:
                    np.testing.assert_array_equal(
                        actual[i, j], expected[i, j], err_msg=repr(token)
                    )
            assert np.all(actual[i, len(sentence) :] == 0)
