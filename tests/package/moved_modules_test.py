"""Modules merged into their concept's module still import by their old
dotted path, as the new module, with a `DeprecationWarning` naming it."""

import importlib
import sys
import warnings

import pytest

import keras_elmo


@pytest.mark.parametrize("old", sorted(keras_elmo.MOVED_MODULES))
def test_old_module_path_warns_and_is_the_new_module(old):
    new = keras_elmo.MOVED_MODULES[old]
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    messages = [
        str(w.message) for w in caught if w.category is DeprecationWarning
    ]
    assert messages == [f"{old} is deprecated: import {new}."]
    assert module is importlib.import_module(new)


def test_a_name_from_an_old_path_is_the_same_object():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from keras_elmo.weights.hdf5_reader import open_hdf5
    from keras_elmo.weights.hdf5 import open_hdf5 as new

    assert open_hdf5 is new
