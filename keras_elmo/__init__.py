"""keras_elmo: ELMo (Peters et al. 2018) for Keras 3 and TensorFlow."""

from keras_elmo import layers
from keras_elmo.api_export import publish_exports
from keras_elmo.config import BiLMConfig
from keras_elmo.embedding.embedder import Embedder
from keras_elmo.export.portable import export_portable
from keras_elmo.export.saved_model import export_saved_model
from keras_elmo.models.bilm import BiLM
from keras_elmo.models.bilm_language_model import BiLMLanguageModel
from keras_elmo.models.elmo_layer import ElmoLayer
from keras_elmo.text.batch_to_ids import batch_to_ids
from keras_elmo.version import __version__

# Symbols published upstream of where they live (`ElmoLayer`, in
# `models/`, as `keras_elmo.layers.ElmoLayer`): see `publish_exports`.
publish_exports()

__all__ = [
    "__version__",
    "layers",
    "batch_to_ids",
    "BiLMConfig",
    "BiLM",
    "ElmoLayer",
    "BiLMLanguageModel",
    "Embedder",
    "export_saved_model",
    "export_portable",
]
