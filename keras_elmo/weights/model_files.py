"""A trained model directory: options, weights, softmax, vocabulary."""

import os

import h5py
import numpy as np

from keras_elmo.utils.atomic import atomic_path

OPTIONS = "options.json"
WEIGHTS = "weights.hdf5"
SOFTMAX = "softmax.hdf5"
VOCABULARY = "vocab.txt"
KERAS = "bilm.keras"


def save_softmax_hdf5(softmax, path):
    """Writes the LM softmax as bilm-tf names it: `softmax/W` `[V, P]`, `b`."""
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as f:
            f.create_dataset(
                "softmax/W", data=np.asarray(softmax.embeddings.numpy())
            )
            f.create_dataset("softmax/b", data=np.asarray(softmax.bias.numpy()))


def load_softmax_hdf5(softmax, path):
    """Loads `softmax/W` and `softmax/b`, checking shapes and values.

    Raises a `ValueError` naming the file, the dataset and what was wrong
    (missing, not a dataset, wrong shape or dtype, unreadable, non-finite)
    before anything is assigned.
    """
    from keras_elmo.weights.bilm_hdf5 import read_float_dataset

    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"Softmax file not found: {path!r}.")
    if not h5py.is_hdf5(path):
        raise ValueError(f"Softmax file {path!r} is not an HDF5 file.")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ValueError(f"Cannot read softmax file {path!r}: {e}") from e
    with f:
        values = {}
        for name, variable in (
            ("softmax/W", softmax.embeddings),
            ("softmax/b", softmax.bias),
        ):
            if name not in f or not isinstance(f[name], h5py.Dataset):
                raise ValueError(
                    f"Softmax file {path!r} has no dataset {name!r} "
                    f"(expected shape {tuple(variable.shape)})."
                )
            if tuple(f[name].shape) != tuple(variable.shape):
                raise ValueError(
                    f"Softmax file {path!r}, dataset {name!r}: expected "
                    f"shape {tuple(variable.shape)} (vocabulary x "
                    f"projection), found {tuple(f[name].shape)}. Was it "
                    "trained with the same vocabulary?"
                )
            values[name] = read_float_dataset(path, f[name], "Softmax")
            if not np.all(np.isfinite(values[name])):
                raise ValueError(
                    f"Softmax file {path!r}, dataset {name!r} holds "
                    "non-finite values (NaN or inf)."
                )
    softmax.embeddings.assign(values["softmax/W"])
    softmax.bias.assign(values["softmax/b"])


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


def load_language_model(model_dir, dtype=None):
    """`(BiLMLanguageModel, Vocabulary)` from a `keras-elmo train` output."""
    from keras_elmo.data.vocabulary import Vocabulary
    from keras_elmo.models.bilm import BiLM
    from keras_elmo.models.bilm_language_model import BiLMLanguageModel

    paths = model_paths(model_dir)
    for key in ("options", "weights", "softmax", "vocabulary"):
        if not os.path.exists(paths[key]):
            raise FileNotFoundError(
                f"`--model` {model_dir!r} is not a trained model directory: "
                f"{os.path.basename(paths[key])} is missing (expected "
                f"{OPTIONS}, {WEIGHTS}, {SOFTMAX} and {VOCABULARY})."
            )
    vocabulary = Vocabulary.load(paths["vocabulary"])
    backbone = BiLM.from_allennlp(
        paths["options"], paths["weights"], dtype=dtype
    )
    model = BiLMLanguageModel(backbone, len(vocabulary), dropout=0.0)
    load_softmax_hdf5(model.softmax, paths["softmax"])
    return model, vocabulary
