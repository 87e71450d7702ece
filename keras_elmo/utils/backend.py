"""Which Keras backends keras_elmo runs on, checked at the first call.

`import keras_elmo` and building models work under any `KERAS_BACKEND`.
On TensorFlow the layers use TensorFlow-only fast paths (the packed
biLSTM loop with its hand-written gradient, the packed char-CNN, the
in-graph string ops); on JAX and PyTorch they take a backend-neutral
`keras.ops` path instead (`is_tensorflow()` chooses), with the same
outputs within float rounding (docs/BACKENDS.md). On any other backend
(numpy, openvino) the first call would fail deep inside a layer with a
message about array types; `check_backend` turns that into one clear
error instead. When a backend is supported, add it to
`SUPPORTED_BACKENDS`.
"""

import keras

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
