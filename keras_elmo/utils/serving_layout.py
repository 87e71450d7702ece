"""TF Serving's directory layout: `BASE/VERSION/saved_model.pb`."""

import os

from keras_elmo.utils.validation import check_positive_int

SAVED_MODEL_FILE = "saved_model.pb"


def is_saved_model(path):
    """Whether `path` is a SavedModel directory."""
    return os.path.isfile(os.path.join(path, SAVED_MODEL_FILE))


def latest_version(base_dir):
    """The highest numeric `base_dir/N` that holds a SavedModel, or None."""
    versions = [
        int(name)
        for name in os.listdir(base_dir)
        if name.isdigit() and is_saved_model(os.path.join(base_dir, name))
    ]
    return os.path.join(base_dir, str(max(versions))) if versions else None


def version_dir(base_dir, version):
    """`base_dir/version` (the layout TF Serving polls), or `base_dir`
    itself when `version` is None."""
    if version is None:
        return base_dir
    check_positive_int("version", version)
    return os.path.join(base_dir, str(version))
