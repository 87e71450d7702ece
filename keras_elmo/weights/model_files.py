"""A trained model directory: options, weights, softmax, vocabulary."""

import os

# The softmax file's format, re-exported for the trainer.
from keras_elmo.weights.softmax_hdf5 import load_softmax_hdf5  # noqa: F401
from keras_elmo.weights.softmax_hdf5 import save_softmax_hdf5  # noqa: F401

OPTIONS = "options.json"
WEIGHTS = "weights.hdf5"
SOFTMAX = "softmax.hdf5"
VOCABULARY = "vocab.txt"
KERAS = "bilm.keras"


def model_paths(model_dir):
    """`{name: path}` of the files in a trained model directory."""
    names = {
        "options": OPTIONS,
        "weights": WEIGHTS,
        "softmax": SOFTMAX,
        "vocabulary": VOCABULARY,
        "keras": KERAS,
    }
    return {key: os.path.join(model_dir, name) for key, name in names.items()}
