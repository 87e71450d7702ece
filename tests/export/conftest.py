"""Exported SavedModels shared by the export tests (built once a session)."""

import numpy as np
import pytest

import keras_elmo
from keras_elmo.export.saved_model import export_saved_model
from tests.conftest import tiny_bilm
from tests.export.export_helpers import SEED


@pytest.fixture(scope="session")
def bilm_export(tmp_path_factory):
    """`(bilm, path)`: a seeded tiny BiLM exported with a fresh mix."""
    bilm = tiny_bilm(SEED)
    path = str(tmp_path_factory.mktemp("export") / "bilm_savedmodel")
    export_saved_model(bilm, path)
    return bilm, path


@pytest.fixture(scope="session")
def elmo_layer_export(reference_weights, tmp_path_factory):
    """`(elmo_layer, path)`: the AllenNLP tiny reference biLM in an
    ElmoLayer whose mix is not the plain average."""
    options, weights = reference_weights("tiny")
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    layer = keras_elmo.layers.ElmoLayer(bilm, dropout=0.0)
    layer(keras_elmo.batch_to_ids([["warm", "up"]]))
    mix = layer.scalar_mixes[0]
    mix.scalar_parameters.assign(np.array([0.5, -0.25, 1.0], np.float32))
    mix.gamma.assign(1.75)
    path = str(tmp_path_factory.mktemp("export") / "elmo_layer_savedmodel")
    export_saved_model(layer, path)
    return layer, path


@pytest.fixture(scope="session")
def loaded(bilm_export):
    import tensorflow as tf

    return tf.saved_model.load(bilm_export[1])
