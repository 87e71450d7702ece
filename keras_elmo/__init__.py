"""keras_elmo: ELMo (Peters et al. 2018) for Keras 3 and TensorFlow."""

from keras_elmo import layers
from keras_elmo.config import BiLMConfig
from keras_elmo.export.saved_model import export_saved_model
from keras_elmo.models.bilm import BiLM
from keras_elmo.models.bilm_language_model import BiLMLanguageModel
from keras_elmo.models.elmo_layer import ElmoLayer
from keras_elmo.text.batch_to_ids import batch_to_ids
from keras_elmo.version import __version__

# `ElmoLayer` is a head over a `BiLM`, so it lives in `models/` (which
# `layers/` never imports); the public path `keras_elmo.layers.ElmoLayer`
# is kept by publishing it here, at the top of the package.
layers.ElmoLayer = ElmoLayer
layers.__all__.append("ElmoLayer")

__all__ = [
    "__version__",
    "layers",
    "batch_to_ids",
    "BiLMConfig",
    "BiLM",
    "ElmoLayer",
    "BiLMLanguageModel",
    "export_saved_model",
]
