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


def check_model_dir(model_dir, keys, argument="`--model`"):
    """Raises `FileNotFoundError` unless `model_dir` holds the files `keys`
    (keys of `model_paths`); the message names `argument`, the missing
    file and the expected ones."""
    paths = model_paths(model_dir)
    for key in keys:
        if not os.path.exists(paths[key]):
            names = [os.path.basename(paths[k]) for k in keys]
            expected = " and ".join(filter(None, [", ".join(names[:-1])]))
            expected = f"{expected} and {names[-1]}" if expected else names[0]
            raise FileNotFoundError(
                f"{argument} {model_dir!r} is not a trained model directory: "
                f"{os.path.basename(paths[key])} is missing (expected "
                f"{expected})."
            )
    return paths
