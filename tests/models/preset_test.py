"""The shipped pretrained preset loads offline and behaves like its files."""

import os

import numpy as np
import pytest

import keras_elmo
from keras_elmo.presets import available_presets
from keras_elmo.presets import preset_dir


def test_elmo_small_en_is_shipped_and_loads():
    assert "elmo_small_en" in available_presets()
    path = preset_dir("elmo_small_en")
    for name in (
        "options.json",
        "weights.hdf5",
        "softmax.hdf5",
        "vocab.txt",
        "MODEL_CARD.md",
    ):
        assert os.path.exists(os.path.join(path, name)), name
    bilm = keras_elmo.BiLM.from_preset("elmo_small_en")
    assert 2 * bilm.config.projection_dim >= 256
    reference = keras_elmo.BiLM.from_allennlp(
        os.path.join(path, "options.json"), os.path.join(path, "weights.hdf5")
    )
    ids = keras_elmo.batch_to_ids([["The", "river", "bank", "."]])
    np.testing.assert_array_equal(
        bilm(ids)["lstm_outputs2"], reference(ids)["lstm_outputs2"]
    )
    layer = keras_elmo.layers.ElmoLayer.from_preset("elmo_small_en", dropout=0)
    assert layer(ids).shape == (1, 4, 2 * bilm.config.projection_dim)


def test_unknown_preset_names_the_choices():
    with pytest.raises(ValueError, match="elmo_small_en.*got 'elmo_huge'"):
        keras_elmo.BiLM.from_preset("elmo_huge")
