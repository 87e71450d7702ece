"""ElmoLayer: inputs, mixing, masking, dropout, training and saving."""

import keras
import numpy as np
import pytest

import keras_elmo
from tests.conftest import padded
from tests.conftest import tiny_bilm

SEED = 3  # the seed these tests were checked with

SENTENCES = [
    "the cat sat on the mat".split(),
    "dogs bark".split(),
    "a bird sang".split(),
]


def numpy_mix(bilm, ids, s, gamma=1.0):
    out = bilm(ids)
    word = np.asarray(out["word_emb"])
    layers = [
        np.concatenate([word, word], -1),
        np.asarray(out["lstm_outputs1"]),
        np.asarray(out["lstm_outputs2"]),
    ]
    w = np.exp(s) / np.exp(s).sum()
    return gamma * sum(w[k] * layers[k] for k in range(3))


def test_string_tokens_and_char_ids_give_the_numpy_mix():
    bilm = tiny_bilm(SEED)
    s = np.array([0.5, -1.0, 2.0], np.float32)
    layer = keras_elmo.layers.ElmoLayer(
        bilm, dropout=0.0, scalar_mix_parameters=s.tolist()
    )
    ids = keras_elmo.batch_to_ids(SENTENCES)
    expected = numpy_mix(bilm, ids, s)
    np.testing.assert_allclose(layer(ids), expected, atol=1e-6)
    np.testing.assert_allclose(layer(padded(SENTENCES)), expected, atol=1e-6)
    assert not layer.trainable_weights


def test_trainable_mixes_and_several_representations():
    bilm = tiny_bilm(SEED)
    layer = keras_elmo.layers.ElmoLayer(
        bilm, num_output_representations=2, dropout=0.0
    )
    outputs = layer(keras_elmo.batch_to_ids(SENTENCES))
    assert isinstance(outputs, list) and len(outputs) == 2
    assert outputs[0].shape == (3, 6, 32)
    # Two ScalarMix heads, each with s [3] and gamma.
    assert len(layer.trainable_weights) == 4
    assert len(layer.non_trainable_weights) == len(bilm.weights)
    # Fresh mixes start as the plain average of the layers.
    np.testing.assert_allclose(
        outputs[0],
        numpy_mix(bilm, keras_elmo.batch_to_ids(SENTENCES), np.zeros(3)),
        atol=1e-6,
    )


def test_trainable_bilm_exposes_the_bilm_weights():
    layer = keras_elmo.layers.ElmoLayer(tiny_bilm(SEED), trainable_bilm=True)
    layer(keras_elmo.batch_to_ids(SENTENCES))
    assert len(layer.trainable_weights) == 2 + len(layer.bilm.weights)


def test_mask_reaches_the_next_layer():
    bilm = tiny_bilm(SEED)
    tokens = keras.Input(shape=(None,), dtype="string")
    elmo = keras_elmo.layers.ElmoLayer(
        bilm, dropout=0.0, scalar_mix_parameters=[0.0, 0.0, 0.0]
    )(tokens)
    pooled = keras.layers.GlobalAveragePooling1D()(elmo)
    model = keras.Model(tokens, pooled)
    ids = keras_elmo.batch_to_ids(SENTENCES)
    mix = numpy_mix(bilm, ids, np.zeros(3))
    lengths = np.array([len(s) for s in SENTENCES])
    expected = mix.sum(1) / lengths[:, None]  # mean over real tokens only
    np.testing.assert_allclose(model(padded(SENTENCES)), expected, atol=1e-6)


def test_dropout_only_in_training_and_zero_padding():
    layer = keras_elmo.layers.ElmoLayer(tiny_bilm(SEED), dropout=0.5)
    ids = keras_elmo.batch_to_ids(SENTENCES)
    inference = np.asarray(layer(ids, training=False))
    np.testing.assert_array_equal(inference, layer(ids, training=False))
    trained = np.asarray(layer(ids, training=True))
    assert np.mean(trained == 0.0) > 0.3
    mask = ids.any(-1)
    assert np.all(trained[~mask] == 0.0) and np.all(inference[~mask] == 0.0)


def test_l2_coef_penalises_the_mixing_weights():
    layer = keras_elmo.layers.ElmoLayer(tiny_bilm(SEED), l2_coef=0.1)
    layer(keras_elmo.batch_to_ids(SENTENCES))
    s = layer.scalar_mixes[0].scalar_parameters
    s.assign([1.0, 2.0, -1.0])
    np.testing.assert_allclose(sum(layer.losses), 0.1 * 6.0, rtol=1e-6)


@pytest.mark.large
def test_downstream_tagger_trains_saves_and_reloads(tmp_path):
    keras.utils.set_random_seed(0)
    bilm = tiny_bilm(SEED)
    tokens = keras.Input(shape=(None,), dtype="string", name="tokens")
    elmo = keras_elmo.layers.ElmoLayer(bilm, dropout=0.1)(tokens)
    hidden = keras.layers.Bidirectional(
        keras.layers.LSTM(8, return_sequences=True)
    )(elmo)
    tags = keras.layers.Dense(3)(hidden)
    model = keras.Model(tokens, tags)
    model.compile(
        keras.optimizers.Adam(0.02),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    x = padded(SENTENCES * 4)
    # Tag = token length class, a learnable function of the characters.
    y = np.array(
        [
            [min(len(t), 5) // 2 for t in s] + [0] * (6 - len(s))
            for s in SENTENCES * 4
        ]
    )
    history = model.fit(x, y, epochs=15, batch_size=4, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.7 * losses[0]
    path = tmp_path / "tagger.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_array_equal(
        loaded.predict(x, verbose=0), model.predict(x, verbose=0)
    )


def test_bad_arguments_are_named():
    bilm = tiny_bilm(SEED)
    with pytest.raises(ValueError, match="`dropout`.*got 1.5"):
        keras_elmo.layers.ElmoLayer(bilm, dropout=1.5)
    with pytest.raises(ValueError, match="`num_output_representations`"):
        keras_elmo.layers.ElmoLayer(bilm, num_output_representations=0)
    with pytest.raises(TypeError, match="`bilm` must be a keras_elmo.BiLM"):
        keras_elmo.layers.ElmoLayer("elmo")
    stateful = keras_elmo.BiLM(bilm.config, stateful=True)
    with pytest.raises(ValueError, match="stateless"):
        keras_elmo.layers.ElmoLayer(stateful)
