"""SavedModel export with TF Hub `google/elmo/3` signatures; ONNX and
LiteRT files that run without TensorFlow (`portable`)."""

from keras_elmo.export.portable import export_portable
from keras_elmo.export.saved_model import export_saved_model
from keras_elmo.export.signatures import MAX_TOKENS

__all__ = ["export_saved_model", "export_portable", "MAX_TOKENS"]
