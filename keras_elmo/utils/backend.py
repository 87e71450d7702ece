"""Which Keras backends keras_elmo runs on, checked at the first call.

`import keras_elmo` and building models work under any `KERAS_BACKEND`
(the layers are `keras.ops` code), but today's layers still hand some
work to TensorFlow (string ops, the packed LSTM loop), so the first
call on another backend would fail deep inside a layer with a message
about array types. `check_backend` turns that into one clear error
instead. When a backend is supported, add it to `SUPPORTED_BACKENDS`.
"""

import keras

SUPPORTED_BACKENDS = ("tensorflow",)


def check_backend(what):
    """Raises `RuntimeError` naming `what` and the active backend when
    that backend is not in `SUPPORTED_BACKENDS`.

    Args:
        what: str. The call being made, e.g. "BiLM".
    """
    backend = keras.backend.backend()
    if backend in SUPPORTED_BACKENDS:
        return
    raise RuntimeError(
        f"{what} runs on the TensorFlow backend only for now; the active "
        f"Keras backend is {backend!r} (KERAS_BACKEND={backend}). Set "
        "KERAS_BACKEND=tensorflow before importing keras (or "
        '"backend": "tensorflow" in ~/.keras/keras.json).'
    )
