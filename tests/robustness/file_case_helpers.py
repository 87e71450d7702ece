"""What the file case tables share: bad copies of the `model_dir`
fixture's files (random bytes, truncated, edited HDF5 datasets,
edited options.json keys) and the loader of an options file.
"""

import json
import shutil

import h5py

import keras_elmo
from keras_elmo.weights import hdf5 as model_files


def paths(fx):
    return model_files.model_paths(fx("model_dir"))


def copy(fx, key, name):
    target = str(fx("tmp_path") / name)
    shutil.copyfile(paths(fx)[key], target)
    return target


def write(fx, name, data):
    path = fx("tmp_path") / name
    path.write_bytes(data)
    return str(path)


def truncated(fx, key, name):
    with open(paths(fx)[key], "rb") as f:
        data = f.read()
    return write(fx, name, data[: len(data) // 2])


def edited_hdf5(key, name, edit):
    """A copy of the model's `key` file with `edit(h5py.File)` applied."""

    def make(fx):
        path = copy(fx, key, name)
        with h5py.File(path, "a") as f:
            edit(f)
        return path

    return make


def replace(dataset, value):
    def edit(f):
        del f[dataset]
        if isinstance(value, str) and value == "group":
            f.create_group(dataset)
        else:
            f.create_dataset(dataset, data=value)

    return edit


def poison(dataset, value):
    def edit(f):
        array = f[dataset][...]
        array.flat[0] = value
        f[dataset][...] = array

    return edit


def options_dict(fx):
    with open(paths(fx)["options"], encoding="utf-8") as f:
        return json.load(f)


def edited_options(edit):
    def make(fx):
        options = options_dict(fx)
        edit(options)
        return write(fx, "options.json", json.dumps(options).encode())

    return make


def setter(section, key, value):
    def edit(options):
        options[section][key] = value

    return edit


def load_options(make):
    return lambda fx: keras_elmo.BiLMConfig.from_options_json(make(fx))


RANDOM = bytes(range(256)) * 8


def w(name):
    return lambda fx: str(fx("tmp_path") / name)
