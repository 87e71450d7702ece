"""Models from files: a `keras-elmo train` directory or a `.keras` file.

A trained model directory (`keras_elmo.weights.model_files`) holds the
biLM as AllenNLP files (`options.json`, `weights.hdf5`), the LM softmax
(`softmax.hdf5`) and the vocabulary (`vocab.txt`); the file formats are
read by `keras_elmo.weights`, and this module builds the models on them.
"""

import os

import keras

from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.models.bilm import BiLM
from keras_elmo.models.bilm_language_model import BiLMLanguageModel
from keras_elmo.models.elmo_layer import ElmoLayer
from keras_elmo.weights import model_files
from keras_elmo.weights.softmax_hdf5 import load_softmax_hdf5


def load_language_model(model_dir, dtype=None):
    """`(BiLMLanguageModel, Vocabulary)` from a `keras-elmo train` output."""
    paths = model_files.check_model_dir(
        model_dir, ("options", "weights", "softmax", "vocabulary")
    )
    vocabulary = Vocabulary.load(paths["vocabulary"])
    backbone = BiLM.from_allennlp(
        paths["options"], paths["weights"], dtype=dtype
    )
    model = BiLMLanguageModel(backbone, len(vocabulary), dropout=0.0)
    load_softmax_hdf5(model.softmax, paths["softmax"])
    return model, vocabulary


def load_bilm_or_elmo_layer(path, argument="`--model`"):
    """A `BiLM` or an `ElmoLayer` from a trained model directory
    (`options.json` + `weights.hdf5`) or a `.keras` file (a `BiLM`, or a
    model holding exactly one `ElmoLayer`); errors name `argument`."""
    if os.path.isdir(path):
        paths = model_files.check_model_dir(
            path, ("options", "weights"), argument
        )
        return BiLM.from_allennlp(paths["options"], paths["weights"])
    if path.endswith(".keras") and os.path.isfile(path):
        return _load_keras_file(path, argument)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{argument} {path!r} does not exist.")
    raise ValueError(
        f"{argument} {path!r} is neither a directory nor a .keras file."
    )


def _load_keras_file(path, argument):
    model = keras.saving.load_model(path, safe_mode=True)
    if isinstance(model, BiLM):
        return model
    layers = [
        layer
        for layer in getattr(model, "layers", [])
        if isinstance(layer, ElmoLayer)
    ]
    if len(layers) == 1:
        return layers[0]
    raise ValueError(
        f"{argument} {path!r} holds a {type(model).__name__} with "
        f"{len(layers)} ElmoLayers; expected a BiLM or exactly one "
        "ElmoLayer."
    )
