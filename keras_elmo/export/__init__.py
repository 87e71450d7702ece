"""SavedModel export with TF Hub `google/elmo/3` signatures; ONNX and
LiteRT files that run without TensorFlow, and layer 0's vectors of a
vocabulary as word2vec text (`portable`)."""

from keras_elmo.export.portable import export_portable
from keras_elmo.export.portable import export_word2vec
from keras_elmo.export.saved_model import export_saved_model
from keras_elmo.export.signatures import MAX_TOKENS

__all__ = [
    "export_saved_model",
    "export_portable",
    "export_word2vec",
    "MAX_TOKENS",
]
