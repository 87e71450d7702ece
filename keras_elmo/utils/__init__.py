"""Small utilities shared by the package: argument checks whose messages
name the argument and the value, and fresh copies of Keras initializers.
"""

import numbers
import os

import keras


def check_int_at_least(name, value, minimum, expected):
    """Raises a `ValueError` unless `value` is an integer (not a bool) >=
    `minimum`; the message names `name`, `expected` (e.g. "a positive
    integer") and `value`."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value < minimum
    ):
        raise ValueError(
            f"Received an invalid value for argument `{name}`, expected "
            f"{expected}, got {value!r}."
        )


def check_positive_int(name, value, allow_none=False):
    """Raises a `ValueError` unless `value` is an int >= 1 (or None if
    `allow_none`); the message names `name`, the expectation and `value`."""
    if value is None and allow_none:
        return
    expected = "a positive integer" + (" or None" if allow_none else "")
    check_int_at_least(name, value, 1, expected)


def check_instance(name, value, cls, expected):
    """Raises a `TypeError` unless `value` is a `cls`; the message names
    `name`, `expected` (how users spell the class, e.g.
    "keras_elmo.BiLM") and the type received."""
    if not isinstance(value, cls):
        raise TypeError(
            f"`{name}` must be a {expected}, received {type(value).__name__}."
        )


def check_path_like(name, value, expected):
    """`os.fspath(value)` for a `str` or `os.PathLike` `value`; else a
    `TypeError` naming the argument, what was expected and the type
    received."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(
            f"Received an invalid value for argument `{name}`, expected "
            f"{expected}, got {type(value).__name__}."
        )
    return os.fspath(value)


def clone_initializer(initializer):
    """Returns a fresh copy of a Keras initializer, as keras-hub does.

    An unseeded Keras initializer returns the same values on every call,
    so a layer that draws several weights from one initializer clones it
    per weight. Callables that are not `keras.initializers.Initializer`s
    are returned as they are.
    """
    if isinstance(initializer, keras.initializers.Initializer):
        return initializer.__class__.from_config(initializer.get_config())
    return initializer


def initializer_configs(layer, *names):
    """`{name: serialized initializer}` for a layer's `get_config`.

    Each `name` is an `__init__` argument kept as the same-named attribute
    holding a `keras.initializers.Initializer` (as `keras.initializers.get`
    returns it); the value is `keras.initializers.serialize` of it.
    """
    return {
        name: keras.initializers.serialize(getattr(layer, name))
        for name in names
    }
