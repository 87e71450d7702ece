"""Models: the biLM backbone, its language-model task and its heads."""

from keras_elmo.models.bilm import BiLM
from keras_elmo.models.elmo_layer import ElmoLayer
from keras_elmo.models.language_model import BiLMLanguageModel
from keras_elmo.models.language_model import LMSubstitutes
from keras_elmo.models.token_embedding_cache import TokenEmbeddingCache
from keras_elmo.models.token_encoder import LexiconTokenEncoder

__all__ = [
    "BiLM",
    "BiLMLanguageModel",
    "ElmoLayer",
    "LMSubstitutes",
    "TokenEmbeddingCache",
    "LexiconTokenEncoder",
]
