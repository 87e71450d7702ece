"""Small utilities shared by the package."""

import keras


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
