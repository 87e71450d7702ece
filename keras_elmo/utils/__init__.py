"""Small utilities shared by the package: argument checks whose messages
name the argument and the value, fresh copies of Keras initializers, and
the Keras backends keras_elmo runs on.

Backends, checked at the first call. `import keras_elmo` and building models
work under any `KERAS_BACKEND`. On TensorFlow the layers use TensorFlow-only
fast paths (the packed biLSTM loop with its hand-written gradient, the packed
char-CNN, the in-graph string ops); on JAX and PyTorch they take a backend-
neutral `keras.ops` path instead (`is_tensorflow()` chooses), with the same
outputs within float rounding (docs/BACKENDS.md). On any other backend (numpy,
openvino) the first call would fail deep inside a layer with a message about
array types; `check_backend` turns that into one clear error instead. When a
backend is supported, add it to `SUPPORTED_BACKENDS`."""

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


SUPPORTED_BACKENDS = ("tensorflow", "jax", "torch")


def is_tensorflow():
    """True when the active Keras backend is TensorFlow: the layers then
    take their TensorFlow-only fast paths."""
    return keras.config.backend() == "tensorflow"


def check_backend(what):
    """Raises `RuntimeError` naming `what` and the active backend when
    that backend is not in `SUPPORTED_BACKENDS`.

    Args:
        what: str. The call being made, e.g. "BiLM".
    """
    backend = keras.backend.backend()
    if backend in SUPPORTED_BACKENDS:
        return
    supported = ", ".join(SUPPORTED_BACKENDS[:-1])
    supported += f" and {SUPPORTED_BACKENDS[-1]}"
    raise RuntimeError(
        f"{what} runs on the {supported} backends only for now; the "
        f"active Keras backend is {backend!r} (KERAS_BACKEND={backend}). "
        "Set KERAS_BACKEND=tensorflow (or jax, torch) before importing "
        'keras (or "backend": "tensorflow" in ~/.keras/keras.json).'
    )
