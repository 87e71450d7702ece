"""SavedModel export with TF Hub `google/elmo/3` signatures; ONNX and
LiteRT files that run without TensorFlow, and layer 0's vectors of a
vocabulary as word2vec text (`portable`, imported on first use: loading
the package does not load the converters' module)."""

from keras_elmo.export.saved_model import export_saved_model
from keras_elmo.export.signatures import MAX_TOKENS

__all__ = [
    "export_saved_model",
    "export_portable",
    "export_word2vec",
    "MAX_TOKENS",
]

_PORTABLE = ("export_portable", "export_word2vec")


def __getattr__(name):
    if name in _PORTABLE:
        from keras_elmo.export import portable

        return getattr(portable, name)
    raise AttributeError(
        f"module 'keras_elmo.export' has no attribute {name!r}"
    )
