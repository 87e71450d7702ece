"""`keras_elmo_export`: marks a public symbol and registers it with Keras."""

import keras


def keras_elmo_export(path):
    """Decorator for public symbols: registers Keras-serializable ones.

    Every class with a `get_config` (layers, models) is registered with
    `keras.saving.register_keras_serializable(package="keras_elmo")`, so
    `.keras` files that contain it load with `safe_mode=True` once
    `keras_elmo` is imported. `path` documents the public import path.

    Args:
        path: str. The public name, e.g. `"keras_elmo.layers.Highway"`.
    """

    def decorator(symbol):
        if hasattr(symbol, "get_config"):
            keras.saving.register_keras_serializable(package="keras_elmo")(
                symbol
            )
        symbol._keras_elmo_export_path = path
        return symbol

    return decorator
