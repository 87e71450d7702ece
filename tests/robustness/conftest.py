"""Fixtures of the robustness suite: one tiny model of each kind, built
once per session and shared by every table."""

import contextlib
import io

import numpy as np
import pytest

from tests.conftest import tiny_bilm as make_tiny_bilm
from tests.export.export_helpers import SEED
from tests.robustness.case_table import VOCAB


@pytest.fixture(scope="session")
def tiny_bilm():
    """A seeded random `tiny` BiLM (the export tests' seed)."""
    return make_tiny_bilm(SEED)


@pytest.fixture(scope="session")
def compiled_bilm(tiny_bilm):
    """`tiny_bilm` as one compiled function (long inputs: eager calls run
    the recurrence step by step, far too slowly for 10,000 tokens)."""
    import tensorflow as tf

    return tf.function(
        lambda ids: tiny_bilm(ids, training=False),
        input_signature=[tf.TensorSpec([None, None, 50], tf.int32)],
    )


@pytest.fixture(scope="session")
def elmo_layer(tiny_bilm):
    import keras_elmo

    layer = keras_elmo.layers.ElmoLayer(tiny_bilm, dropout=0.0)
    layer(keras_elmo.batch_to_ids([["warm"]]))
    mix = layer.scalar_mixes[0]
    mix.scalar_parameters.assign(np.array([0.5, -0.25, 1.0], np.float32))
    mix.gamma.assign(1.5)
    return layer


@pytest.fixture(scope="session")
def saved_model_path(tiny_bilm, tmp_path_factory):
    """`tiny_bilm` exported with `export_saved_model`."""
    from keras_elmo.export.saved_model import export_saved_model

    path = str(tmp_path_factory.mktemp("robust_export") / "sm")
    export_saved_model(tiny_bilm, path)
    return path


@pytest.fixture(scope="session")
def saved_model(saved_model_path):
    """The export loaded back with `tf.saved_model.load`."""
    import tensorflow as tf

    return tf.saved_model.load(saved_model_path)


@pytest.fixture(scope="session")
def language_model(tiny_bilm):
    """`tiny_bilm` with a softmax over `VOCAB`."""
    import keras_elmo

    return keras_elmo.BiLMLanguageModel(tiny_bilm, len(VOCAB), dropout=0.0)


@pytest.fixture(scope="session")
def model_dir(tiny_bilm, language_model, tmp_path_factory):
    """A `keras-elmo train`-style output directory of `tiny_bilm`."""
    from keras_elmo.data.vocabulary import Vocabulary
    from keras_elmo.weights import hdf5 as model_files
    from keras_elmo.weights import hdf5 as softmax_hdf5

    path = tmp_path_factory.mktemp("robust_model")
    lm = language_model
    paths = model_files.model_paths(str(path))
    tiny_bilm.save_allennlp(paths["options"], paths["weights"])
    softmax_hdf5.save_softmax_hdf5(lm.softmax, paths["softmax"])
    Vocabulary(VOCAB).save(paths["vocabulary"])
    return str(path)


@pytest.fixture(scope="session")
def cli():
    """`cli(*argv) -> (return code, stdout, stderr)`, run in-process."""
    from keras_elmo.cli.main import main

    def run(*argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in argv])
        return code, out.getvalue(), err.getvalue()

    return run


@pytest.fixture
def fx(request):
    """`fx(name)`: the value of fixture `name` (cases pick what they use)."""
    return request.getfixturevalue
