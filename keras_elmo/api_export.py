"""`keras_elmo_export`: marks a public symbol and registers it with Keras."""

import sys

import keras

# Every public path -> its symbol, as the decorator recorded them.
EXPORTS = {}


def keras_elmo_export(path):
    """Decorator for public symbols: records their paths, registers them.

    Every class with a `get_config` (layers, models) is registered with
    `keras.saving.register_keras_serializable(package="keras_elmo")`, so
    `.keras` files that contain it load with `safe_mode=True` once
    `keras_elmo` is imported. Each path is recorded in `EXPORTS`, which
    `publish_exports` reads and the public-API test checks.

    Args:
        path: str or list of str. The public name(s), e.g.
            `"keras_elmo.layers.Highway"`.
    """
    paths = [path] if isinstance(path, str) else list(path)

    def decorator(symbol):
        if hasattr(symbol, "get_config"):
            keras.saving.register_keras_serializable(package="keras_elmo")(
                symbol
            )
        for name in paths:
            EXPORTS[name] = symbol
        symbol._keras_elmo_export_path = paths[0]
        return symbol

    return decorator


def publish_exports():
    """Makes every recorded path importable; called by `keras_elmo/__init__`.

    A symbol may be published in a namespace upstream of where it lives
    (`ElmoLayer` is a head over a `BiLM`, so it lives in `models/`, which
    `layers/` never imports, and is published as
    `keras_elmo.layers.ElmoLayer`); the namespace module gets the
    attribute and lists it in its `__all__`. The namespaces must already
    be imported.
    """
    for path, symbol in EXPORTS.items():
        module_name, name = path.rsplit(".", 1)
        module = sys.modules[module_name]
        if getattr(module, name, symbol) is not symbol:
            raise RuntimeError(
                f"{path} is already another object: {getattr(module, name)!r}."
            )
        if not hasattr(module, name):
            setattr(module, name, symbol)
            if hasattr(module, "__all__") and name not in module.__all__:
                module.__all__.append(name)
